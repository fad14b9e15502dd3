package api

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"net/http"

	"go.yaml.in/yaml/v3"
)

// The /v1 contract is written first, in openapi.yaml: handlers implement
// it, GET /v1/openapi.json serves it, GET /docs renders it, and the tests
// validate every request and response they exchange against it
// (pkg/api/apispec).

//go:embed openapi.yaml
var openAPIYAML []byte

// OpenAPIYAML returns the API's OpenAPI 3.1 document as written.
func OpenAPIYAML() []byte { return append([]byte(nil), openAPIYAML...) }

// OpenAPIJSON returns the API's OpenAPI 3.1 document as JSON.
func OpenAPIJSON() ([]byte, error) {
	doc, err := openAPIDoc()
	if err != nil {
		return nil, err
	}
	return json.Marshal(doc)
}

// openAPIDoc decodes the embedded document. YAML mappings decode to
// map[string]any, so the result marshals to JSON as is.
func openAPIDoc() (map[string]any, error) {
	var doc map[string]any
	if err := yaml.Unmarshal(openAPIYAML, &doc); err != nil {
		return nil, fmt.Errorf("openapi.yaml: %w", err)
	}
	return doc, nil
}

// specHandler serves the document as JSON. It is built once in New: a
// document that does not parse is a build-time bug, caught by every test.
func specHandler() http.HandlerFunc {
	body, err := OpenAPIJSON()
	if err != nil {
		panic("api: embedded " + err.Error())
	}
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Cache-Control", "no-cache")
		_, _ = w.Write(body)
	}
}
