package mcpapi_test

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/mcpmon/mcpmon/pkg/mcpapi"
	"github.com/mcpmon/mcpmon/pkg/testpeers"
)

// TestDocsMCPToolsTable: docs/reference/mcp.md lists every registered tool
// once, with its scope and annotations, and no other.
func TestDocsMCPToolsTable(t *testing.T) {
	doc := testpeers.RepoFile(t, "docs/reference/mcp.md")
	row := regexp.MustCompile("(?m)^\\| `([a-z_]+)` \\| (\\w+) \\| (true|false) \\| (true|false) \\| (true|false) \\| (true|false) \\|")
	documented := map[string][]string{}
	for _, m := range row.FindAllStringSubmatch(doc, -1) {
		if _, dup := documented[m[1]]; dup {
			t.Errorf("mcp.md lists %s twice", m[1])
		}
		documented[m[1]] = m[2:]
	}
	for _, tl := range mcpapi.Tools() {
		a := tl.Annotations
		want := []string{tl.Scope, strconv.FormatBool(a.ReadOnlyHint), strconv.FormatBool(a.DestructiveHint != nil && *a.DestructiveHint),
			strconv.FormatBool(a.IdempotentHint), strconv.FormatBool(a.OpenWorldHint != nil && *a.OpenWorldHint)}
		got, ok := documented[tl.Name]
		if !ok {
			t.Errorf("mcp.md has no row for tool %s", tl.Name)
			continue
		}
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("mcp.md says %s is %v (scope, readOnly, destructive, idempotent, openWorld); the tool is %v", tl.Name, got, want)
		}
		delete(documented, tl.Name)
	}
	for name := range documented {
		t.Errorf("mcp.md lists tool %s, which /mcp does not serve", name)
	}
}
