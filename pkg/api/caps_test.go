package api

import (
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/mcpmon/mcpmon/alerter/sinks"
)

// TestCapsMatchOpenAPI: every cap the code enforces is the number
// openapi.yaml states at the same place, so a client validating against
// the document and the server agree on what is too big.
func TestCapsMatchOpenAPI(t *testing.T) {
	var doc map[string]any
	if err := yaml.Unmarshal(OpenAPIYAML(), &doc); err != nil {
		t.Fatal(err)
	}
	rows := append(capTable[:len(capTable):len(capTable)],
		// The sink validator's rule, stated in the document's Sinks schema.
		capRow{schemaProp("Sinks"), "maxItems", sinks.MaxEndpointSinks})
	for _, row := range rows {
		where := strings.Join(row.Path, ".") + "." + row.Keyword
		var node any = doc
		for _, k := range row.Path {
			m, ok := node.(map[string]any)
			if !ok {
				t.Errorf("%s: openapi.yaml has no %q on the way", where, k)
				node = nil
				break
			}
			node = m[k]
		}
		m, ok := node.(map[string]any)
		if !ok {
			t.Errorf("%s: openapi.yaml has no schema there", where)
			continue
		}
		got, ok := m[row.Keyword].(int)
		if !ok {
			t.Errorf("%s: openapi.yaml does not state it (want %d)", where, row.Limit)
			continue
		}
		if got != row.Limit {
			t.Errorf("%s = %d in openapi.yaml, the code enforces %d", where, got, row.Limit)
		}
	}
}
