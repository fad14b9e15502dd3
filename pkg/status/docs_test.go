package status

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"net/http"
	"net/http/httptest"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/testpeers"
)

// docs/reference/status-pages.md is checked against this package: the
// route table against the patterns Handler registers, the JSON shape
// against JSONView, and the caching and CSP headers against the constants
// serve sends.

const statusDoc = "docs/reference/status-pages.md"

// handlerPatterns are the ServeMux patterns handler.go registers, read from
// its source: the mux keeps no list of them.
func handlerPatterns(t *testing.T) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "handler.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	ast.Inspect(f, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok || len(call.Args) == 0 {
			return true
		}
		sel, ok := call.Fun.(*ast.SelectorExpr)
		if !ok || sel.Sel.Name != "HandleFunc" && sel.Sel.Name != "Handle" {
			return true
		}
		if lit, ok := call.Args[0].(*ast.BasicLit); ok && lit.Kind == token.STRING {
			p, err := strconv.Unquote(lit.Value)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, p)
		}
		return true
	})
	if len(out) == 0 {
		t.Fatal("handler.go registers no pattern: has Handler moved?")
	}
	return out
}

var docRouteRow = regexp.MustCompile("(?m)^\\| `(GET) (/[^`]*)` \\|")

// routeDrift matches each documented route, with a sample slug, against a
// mux holding the served patterns: a row the mux does not route is stale,
// and a pattern no row reaches is undocumented.
func routeDrift(doc string, patterns []string) []string {
	mux := http.NewServeMux()
	for _, p := range patterns {
		mux.HandleFunc(p, func(http.ResponseWriter, *http.Request) {})
	}
	reached := map[string]bool{}
	var msgs []string
	for _, m := range docRouteRow.FindAllStringSubmatch(doc, -1) {
		path := strings.ReplaceAll(m[2], "{slug}", "demo-api")
		_, pattern := mux.Handler(httptest.NewRequest(m[1], path, nil))
		if pattern == "" {
			msgs = append(msgs, fmt.Sprintf("%s documents %s %s, which status.Handler does not serve", statusDoc, m[1], m[2]))
			continue
		}
		reached[pattern] = true
	}
	for _, p := range patterns {
		if !reached[p] {
			msgs = append(msgs, fmt.Sprintf("%s: no row of the route table reaches status.Handler's pattern %q; add one", statusDoc, p))
		}
	}
	return msgs
}

// TestDocsStatusPagesNameEveryRoute keeps the page's route table equal to
// what Handler serves.
func TestDocsStatusPagesNameEveryRoute(t *testing.T) {
	for _, msg := range routeDrift(testpeers.RepoFile(t, statusDoc), handlerPatterns(t)) {
		t.Error(msg)
	}
}

// TestDocsStatusRouteDriftIsReported proves the check fails both ways.
func TestDocsStatusRouteDriftIsReported(t *testing.T) {
	doc := testpeers.RepoFile(t, statusDoc) + "| `GET /status/{slug}/history` | gone |\n"
	msgs := routeDrift(doc, append(handlerPatterns(t), "GET /uptime/{file}"))
	joined := strings.Join(msgs, "\n")
	for _, want := range []string{
		"documents GET /status/{slug}/history, which status.Handler does not serve",
		`no row of the route table reaches status.Handler's pattern "GET /uptime/{file}"`,
	} {
		if !strings.Contains(joined, want) {
			t.Errorf("drift messages lack %q:\n%s", want, joined)
		}
	}
}

// TestDocsStatusJSONShape keeps the page's list of the JSON members equal
// to JSONView's, in order.
func TestDocsStatusJSONShape(t *testing.T) {
	doc := testpeers.RepoFile(t, statusDoc)
	m := regexp.MustCompile("a small fixed shape: `([^`]+)`").FindStringSubmatch(doc)
	if m == nil {
		t.Fatalf("%s: the .json row has no \"a small fixed shape: `…`\" list", statusDoc)
	}
	var want []string
	rt := reflect.TypeFor[JSONView]()
	for i := range rt.NumField() {
		name, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
		want = append(want, name)
	}
	if got := strings.Split(m[1], ", "); !slices.Equal(got, want) {
		t.Errorf("%s lists the JSON members %v; JSONView has %v", statusDoc, got, want)
	}
}

// TestDocsStatusHeaders keeps the caching and CSP headers the page quotes
// equal to the ones serve sends, and the cache's period and the bars'
// count, the feed's bound and media type equal to the constants.
func TestDocsStatusHeaders(t *testing.T) {
	doc := testpeers.RepoFile(t, statusDoc)
	for name, v := range map[string]string{"Cache-Control": CacheControl, "Content-Security-Policy": csp} {
		if !strings.Contains(doc, "`"+v+"`") {
			t.Errorf("%s does not quote the %s header as sent: `%s`", statusDoc, name, v)
		}
	}
	flat := strings.Join(strings.Fields(doc), " ")
	for what, want := range map[string]string{
		"DefaultTTL":  fmt.Sprintf("at most once every %d s", int(DefaultTTL/time.Second)),
		"Days":        fmt.Sprintf("%d daily bars", Days),
		"FeedEntries": fmt.Sprintf("newest first, at most %d", FeedEntries),
		"FeedContent": "`" + FeedContentType + "`",
	} {
		if !strings.Contains(flat, want) {
			t.Errorf("%s does not say %q (status.%s)", statusDoc, want, what)
		}
	}
}

// TestDocsStatusPageJSONShapeAndHostPaths keeps the status page's JSON
// members equal to PageJSONView's, in order, the custom host's table
// equal to the paths Hosts serves, and the incidents' and members'
// bounds to the constants.
func TestDocsStatusPageJSONShapeAndHostPaths(t *testing.T) {
	doc := testpeers.RepoFile(t, statusDoc)
	m := regexp.MustCompile("a page's fixed shape: `([^`]+)`").FindStringSubmatch(doc)
	if m == nil {
		t.Fatalf("%s: the page's .json item has no \"a page's fixed shape: `…`\" list", statusDoc)
	}
	var want []string
	rt := reflect.TypeFor[PageJSONView]()
	for i := range rt.NumField() {
		name, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
		want = append(want, name)
	}
	if got := strings.Split(m[1], ", "); !slices.Equal(got, want) {
		t.Errorf("%s lists the page JSON members %v; PageJSONView has %v", statusDoc, got, want)
	}
	var documented []string
	for _, row := range regexp.MustCompile("(?m)^\\| `(/[^`]*)` \\| the page").FindAllStringSubmatch(doc, -1) {
		documented = append(documented, row[1])
	}
	var served []string
	for p := range hostPaths {
		served = append(served, p)
	}
	slices.Sort(documented)
	slices.Sort(served)
	if !slices.Equal(documented, served) {
		t.Errorf("%s documents the custom host's paths %v; Hosts serves %v", statusDoc, documented, served)
	}
	flat := strings.Join(strings.Fields(doc), " ")
	if want := fmt.Sprintf("newest first (at most %d)", PageIncidents); !strings.Contains(flat, want) {
		t.Errorf("%s does not say %q (status.PageIncidents)", statusDoc, want)
	}
	if want := fmt.Sprintf("A page lists at most %d endpoint entries", PageMembers); !strings.Contains(flat, want) {
		t.Errorf("%s does not say %q (status.PageMembers)", statusDoc, want)
	}
}
