package api_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/mcpmon/mcpmon/pkg/api"
	"github.com/mcpmon/mcpmon/pkg/testpeers"
)

// The API reference pages are checked against openapi.yaml, which
// TestTheDocumentDescribesExactlyTheRoutesServed holds equal to the router:
// an operation or schema field added without its row fails here, and so
// does a row for one that is gone.

// schema is the part of an OpenAPI schema object the docs tests read.
type schema struct {
	Ref        string             `json:"$ref"`
	Type       any                `json:"type"`
	Required   []string           `json:"required"`
	Properties map[string]*schema `json:"properties"`
}

type openAPIDoc struct {
	Paths      map[string]map[string]json.RawMessage `json:"paths"`
	Components struct {
		Schemas map[string]*schema `json:"schemas"`
	} `json:"components"`
}

type operation struct {
	OperationID string `json:"operationId"`
	Summary     string `json:"summary"`
	Parameters  []struct {
		Ref  string `json:"$ref"`
		Name string `json:"name"`
	} `json:"parameters"`
}

func loadDoc(t *testing.T) openAPIDoc {
	t.Helper()
	b, err := api.OpenAPIJSON()
	if err != nil {
		t.Fatal(err)
	}
	var d openAPIDoc
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	return d
}

// operations are the document's operations as "METHOD /path".
func (d openAPIDoc) operations(t *testing.T) map[string]operation {
	t.Helper()
	out := map[string]operation{}
	for path, item := range d.Paths {
		for method, raw := range item {
			switch method {
			case "get", "put", "post", "delete", "patch", "head", "options", "trace":
			default:
				continue // path-level parameters, summary, …
			}
			var op operation
			if err := json.Unmarshal(raw, &op); err != nil {
				t.Fatalf("%s %s: %v", method, path, err)
			}
			out[strings.ToUpper(method)+" "+path] = op
		}
	}
	return out
}

// operationRow is the row docs/reference/api.md holds for an operation:
// method and path, operationId, the scope its key needs, the summary.
func operationRow(route string, op operation, scopes []string) string {
	scope := "none"
	if len(scopes) > 0 {
		scope = strings.Join(scopes, ", ")
	}
	return fmt.Sprintf("| `%s` | `%s` | %s | %s |", route, op.OperationID, scope, op.Summary)
}

var docOperationRow = regexp.MustCompile("(?m)^\\| `((?:GET|PUT|POST|DELETE|PATCH|HEAD|OPTIONS) /[^`]*)` \\|")

// TestDocsAPIListsEveryOperation keeps api.md's operation table equal to
// openapi.yaml: every path and method, with its operationId, scope and
// summary, and no row for an operation the document does not have.
func TestDocsAPIListsEveryOperation(t *testing.T) {
	doc := testpeers.RepoFile(t, "docs/reference/api.md")
	d := loadDoc(t)
	for _, msg := range operationTableDrift(doc, d.operations(t), loadSpec(t).Scopes()) {
		t.Error(msg)
	}
}

func operationTableDrift(doc string, ops map[string]operation, scopes map[string][]string) []string {
	var msgs []string
	for _, route := range slices.Sorted(maps.Keys(ops)) {
		if row := operationRow(route, ops[route], scopes[route]); !strings.Contains(doc, row+"\n") {
			msgs = append(msgs, fmt.Sprintf("docs/reference/api.md: the operation table lacks (or has another row for) %s; want the row\n%s", route, row))
		}
	}
	for _, m := range docOperationRow.FindAllStringSubmatch(doc, -1) {
		if _, ok := ops[m[1]]; !ok {
			msgs = append(msgs, fmt.Sprintf("docs/reference/api.md has a row for %s, which pkg/api/openapi.yaml does not describe", m[1]))
		}
	}
	return msgs
}

// TestDocsAPIDriftIsReported proves the check above fails both ways: an
// operation added to the document without a row, and a row whose operation
// is gone.
func TestDocsAPIDriftIsReported(t *testing.T) {
	doc := testpeers.RepoFile(t, "docs/reference/api.md") + "| `DELETE /v1/audit` | `purgeAudit` | admin | Gone |\n"
	ops := loadDoc(t).operations(t)
	ops["GET /v1/endpoints/{id}/frobs"] = operation{OperationID: "listFrobs", Summary: "List an endpoint's frobs"}
	msgs := operationTableDrift(doc, ops, map[string][]string{"GET /v1/endpoints/{id}/frobs": {"read"}})
	joined := strings.Join(msgs, "\n")
	for _, want := range []string{
		"the operation table lacks (or has another row for) GET /v1/endpoints/{id}/frobs; want the row\n| `GET /v1/endpoints/{id}/frobs` | `listFrobs` | read | List an endpoint's frobs |",
		"has a row for DELETE /v1/audit, which pkg/api/openapi.yaml does not describe",
	} {
		if !strings.Contains(joined, want) {
			t.Errorf("drift messages lack %q:\n%s", want, joined)
		}
	}
}

var backticked = regexp.MustCompile("`([^`]+)`")

// TestDocsAPIPaginatedLists keeps the pagination section's list of lists
// equal to the operations that take ?cursor=.
func TestDocsAPIPaginatedLists(t *testing.T) {
	doc := testpeers.RepoFile(t, "docs/reference/api.md")
	_, after, ok := strings.Cut(doc, "Every list (")
	if !ok {
		t.Fatal("docs/reference/api.md: the pagination section has no \"Every list (…)\" sentence")
	}
	listed, _, _ := strings.Cut(after, ")")
	var got []string
	for _, m := range backticked.FindAllStringSubmatch(listed, -1) {
		got = append(got, m[1])
	}
	var want []string
	for route, op := range loadDoc(t).operations(t) {
		for _, p := range op.Parameters {
			if p.Name == "cursor" || strings.HasSuffix(p.Ref, "/cursor") {
				want = append(want, strings.TrimPrefix(route, "GET "))
			}
		}
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("docs/reference/api.md names the paginated lists %v; the operations with ?cursor= are %v", got, want)
	}
}

// deepCheckFields are the endpoint members docs/reference/deep-checks.md
// documents field by field.
var deepCheckFields = []string{"toolCheck", "oauth", "credentialWarning"}

// fieldRows flattens the schema of each endpoint member into "a.b.c" →
// required, resolving $refs and descending into object properties.
func fieldRows(d openAPIDoc, members []string) (map[string]bool, error) {
	out := map[string]bool{}
	input := d.Components.Schemas["EndpointInput"]
	if input == nil {
		return nil, fmt.Errorf("openapi.yaml has no EndpointInput schema")
	}
	var walk func(prefix string, s *schema, depth int) error
	walk = func(prefix string, s *schema, depth int) error {
		if depth > 8 {
			return fmt.Errorf("%s: schema nested too deep", prefix)
		}
		if s.Ref != "" {
			r := d.Components.Schemas[strings.TrimPrefix(s.Ref, "#/components/schemas/")]
			if r == nil {
				return fmt.Errorf("%s: unresolved %s", prefix, s.Ref)
			}
			s = r
		}
		for name, p := range s.Properties {
			field := prefix + "." + name
			out[field] = slices.Contains(s.Required, name)
			if err := walk(field, p, depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	for _, m := range members {
		s := input.Properties[m]
		if s == nil {
			return nil, fmt.Errorf("EndpointInput has no member %s", m)
		}
		out[m] = slices.Contains(input.Required, m)
		if err := walk(m, s, 0); err != nil {
			return nil, err
		}
	}
	return out, nil
}

var docFieldRow = regexp.MustCompile("(?m)^\\| `([a-zA-Z.]+)` \\| (yes|no) \\|")

// TestDocsDeepChecksDocumentEveryField keeps the field table of
// deep-checks.md equal to the ToolCheck and OAuth schemas (and
// credentialWarning) of openapi.yaml, whether each is required included.
func TestDocsDeepChecksDocumentEveryField(t *testing.T) {
	fields, err := fieldRows(loadDoc(t), deepCheckFields)
	if err != nil {
		t.Fatal(err)
	}
	for _, msg := range fieldTableDrift(testpeers.RepoFile(t, "docs/reference/deep-checks.md"), fields) {
		t.Error(msg)
	}
}

func fieldTableDrift(doc string, fields map[string]bool) []string {
	var msgs []string
	documented := map[string]string{}
	for _, m := range docFieldRow.FindAllStringSubmatch(doc, -1) {
		documented[m[1]] = m[2]
	}
	for _, f := range slices.Sorted(maps.Keys(fields)) {
		want := map[bool]string{true: "yes", false: "no"}[fields[f]]
		switch got, ok := documented[f]; {
		case !ok:
			msgs = append(msgs, fmt.Sprintf("docs/reference/deep-checks.md: the field table has no row | `%s` | %s | …", f, want))
		case got != want:
			msgs = append(msgs, fmt.Sprintf("docs/reference/deep-checks.md: %s is required=%s in openapi.yaml, the table says %s", f, want, got))
		}
	}
	for _, f := range slices.Sorted(maps.Keys(documented)) {
		if _, ok := fields[f]; !ok {
			msgs = append(msgs, fmt.Sprintf("docs/reference/deep-checks.md has a row for %s, which openapi.yaml's endpoint schema does not have", f))
		}
	}
	return msgs
}

// TestDocsDeepChecksDriftIsReported proves the field check fails both
// ways: a schema field without a row, and a row without a field.
func TestDocsDeepChecksDriftIsReported(t *testing.T) {
	fields, err := fieldRows(loadDoc(t), deepCheckFields)
	if err != nil {
		t.Fatal(err)
	}
	fields["toolCheck.expect.matches"] = false
	doc := testpeers.RepoFile(t, "docs/reference/deep-checks.md") + "| `oauth.password` | no | gone |\n"
	joined := strings.Join(fieldTableDrift(doc, fields), "\n")
	for _, want := range []string{
		"the field table has no row | `toolCheck.expect.matches` | no | …",
		"has a row for oauth.password, which openapi.yaml's endpoint schema does not have",
	} {
		if !strings.Contains(joined, want) {
			t.Errorf("drift messages lack %q:\n%s", want, joined)
		}
	}
}
