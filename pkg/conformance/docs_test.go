package conformance

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// docRow is the row docs/reference/conformance.md has for r.
func docRow(r Rule) string {
	kind := "passive"
	if r.Active {
		kind = "active"
	}
	return "| `" + r.ID + "` | " + strings.Join(r.Eras, ", ") + " | " + kind + " | " + r.Title + " | [spec](" + r.Spec + ") |"
}

// TestDocsConformanceListsEveryRule holds docs/reference/conformance.md to
// the rule catalog: one row per rule as the code states it, and no row for
// a rule the code does not have.
func TestDocsConformanceListsEveryRule(t *testing.T) {
	b, err := os.ReadFile("../../docs/reference/conformance.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	known := map[string]bool{}
	for _, r := range Rules() {
		known[r.ID] = true
		if !strings.Contains(doc, docRow(r)+"\n") {
			t.Errorf("docs/reference/conformance.md lacks (or has another row for) %s; want the row\n%s", r.ID, docRow(r))
		}
	}
	for _, m := range regexp.MustCompile("(?m)^\\| `([a-z0-9-]+)` \\| [0-9]{4}-").FindAllStringSubmatch(doc, -1) {
		if !known[m[1]] {
			t.Errorf("docs/reference/conformance.md has a row for %s, which the rule catalog does not have", m[1])
		}
	}
	for _, era := range Eras() {
		if !strings.Contains(doc, "schemas/"+era+"/schema.json") {
			t.Errorf("docs/reference/conformance.md does not name the vendored schema of %s", era)
		}
	}
}
