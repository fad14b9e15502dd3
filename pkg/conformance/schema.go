package conformance

import (
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// The official schema.json of every era, unchanged (schemas/SOURCE).
//
//go:embed schemas/*/schema.json
var schemaFiles embed.FS

// Definitions validated, by the name the schemas give them.
const (
	DefInitializeResult = "InitializeResult"
	DefDiscoverResult   = "DiscoverResult"
	DefListToolsResult  = "ListToolsResult"
)

// Eras lists the protocol revisions with a vendored schema, oldest first.
func Eras() []string {
	return []string{"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"}
}

// ErrNoSchema reports an era or definition with no vendored schema.
var ErrNoSchema = errors.New("no vendored schema")

type schemaKey struct{ era, def string }

// compiled holds every era's definitions, compiled on first use. It is a
// process-wide cache of a pure function of the embedded files, not state:
// compiling costs milliseconds, and a probe validates in microseconds.
var compiled = sync.OnceValues(compileAll)

func compileAll() (map[schemaKey]*jsonschema.Schema, error) {
	out := map[schemaKey]*jsonschema.Schema{}
	for _, era := range Eras() {
		b, err := schemaFiles.ReadFile("schemas/" + era + "/schema.json")
		if err != nil {
			return nil, fmt.Errorf("conformance: schema of %s: %w", era, err)
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
		if err != nil {
			return nil, fmt.Errorf("conformance: schema of %s: %w", era, err)
		}
		defs := "$defs"
		if m, ok := doc.(map[string]any); ok {
			if _, old := m["definitions"]; old {
				defs = "definitions" // draft-07 (2024-11-05)
			}
		}
		c := jsonschema.NewCompiler()
		c.DefaultDraft(jsonschema.Draft2020)
		loc := "https://schemas.mcpmon.invalid/" + era + "/schema.json"
		if err := c.AddResource(loc, doc); err != nil {
			return nil, fmt.Errorf("conformance: schema of %s: %w", era, err)
		}
		for _, def := range []string{DefInitializeResult, DefDiscoverResult, DefListToolsResult} {
			m, _ := doc.(map[string]any)
			if d, _ := m[defs].(map[string]any); d[def] == nil {
				continue // initialize is gone from 2026-07-28, server/discover new in it
			}
			s, err := c.Compile(loc + "#/" + defs + "/" + def)
			if err != nil {
				return nil, fmt.Errorf("conformance: compile %s of %s: %w", def, era, err)
			}
			out[schemaKey{era, def}] = s
		}
	}
	return out, nil
}

// HasSchema reports whether era's schema defines def.
func HasSchema(era, def string) bool {
	m, err := compiled()
	return err == nil && m[schemaKey{era, def}] != nil
}

var printer = message.NewPrinter(language.English)

// Validate checks doc, a JSON-RPC result, against definition def of era's
// schema. A violation is returned as one short line naming where in doc
// and what (the first leaf of the validator's error tree).
func Validate(era, def string, doc json.RawMessage) error {
	m, err := compiled()
	if err != nil {
		return err
	}
	s := m[schemaKey{era, def}]
	if s == nil {
		return fmt.Errorf("%w for %s in %s", ErrNoSchema, def, era)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return fmt.Errorf("not JSON: %v", err)
	}
	err = s.Validate(inst)
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return err
	}
	leaf := firstLeaf(ve)
	where := "/" + strings.Join(leaf.InstanceLocation, "/")
	return fmt.Errorf("%s at %s: %s", def, where, leaf.ErrorKind.LocalizedString(printer))
}

// firstLeaf is the deepest first cause: the specific failure, not the
// "doesn't validate with $ref" chain above it.
func firstLeaf(e *jsonschema.ValidationError) *jsonschema.ValidationError {
	for len(e.Causes) > 0 {
		e = e.Causes[0]
	}
	return e
}
