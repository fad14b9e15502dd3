package sinks

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/alert"
)

// alerter/sinks/README.md, the sinks reference, is checked against this
// package: one row per sink type in the type table, naming a package that
// exists, and every member of a sink's configuration named on the page.

// sinkTypes are the Type* constants of config.go, read from its source so
// a type added there without a row fails even before it is wired.
func sinkTypes(t *testing.T) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "config.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, s := range g.Specs {
			vs := s.(*ast.ValueSpec)
			for i, n := range vs.Names {
				if strings.HasPrefix(n.Name, "Type") && i < len(vs.Values) {
					if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
						v, _ := strconv.Unquote(lit.Value)
						out = append(out, v)
					}
				}
			}
		}
	}
	if len(out) == 0 {
		t.Fatal("config.go declares no Type constant: have the sink types moved?")
	}
	return out
}

// TestDocsSinksREADMETypesAndMembers keeps the README's type table equal to
// the sink types and names every configuration member.
func TestDocsSinksREADMETypesAndMembers(t *testing.T) {
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	rows := map[string]string{} // type → package
	for _, m := range regexp.MustCompile("(?m)^\\| `([a-z]+)` \\| `([a-z]+)` \\|").FindAllStringSubmatch(doc, -1) {
		rows[m[1]] = m[2]
	}
	for _, typ := range sinkTypes(t) {
		pkg, ok := rows[typ]
		if !ok {
			t.Errorf("alerter/sinks/README.md: the type table has no row for the sink type %s", typ)
			continue
		}
		delete(rows, typ)
		if fi, err := os.Stat(filepath.Join(".", pkg)); err != nil || !fi.IsDir() {
			t.Errorf("alerter/sinks/README.md: the %s row names the package %s, which is no directory of alerter/sinks", typ, pkg)
		}
	}
	for typ := range rows {
		t.Errorf("alerter/sinks/README.md has a type row for %s, which config.go does not define", typ)
	}
	members := []string{"timeout"} // configJSON's: Timeout on the wire
	rt := reflect.TypeFor[Config]()
	for i := range rt.NumField() {
		if name, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ","); name != "" && name != "-" {
			members = append(members, name)
		}
	}
	for _, m := range members {
		if !strings.Contains(doc, "`"+m+"`") && !strings.Contains(doc, `"`+m+`":`) {
			t.Errorf("alerter/sinks/README.md never names the sink member %s", m)
		}
	}
}

// TestDocsSinksREADMEDigestAndUpdates: the README names every member of a
// digest setting, every incident notification kind, and the ledger key
// shapes of updates and digests as the code builds them.
func TestDocsSinksREADMEDigestAndUpdates(t *testing.T) {
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	rt := reflect.TypeFor[alert.DigestRule]()
	for i := range rt.NumField() {
		name, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
		if !strings.Contains(doc, "`digest."+name+"`") {
			t.Errorf("alerter/sinks/README.md never names the digest member digest.%s", name)
		}
	}
	for _, k := range alert.Kinds() {
		if !strings.Contains(doc, "| "+string(k)+" |") && !strings.Contains(doc, "| "+string(k)+" | native") {
			t.Errorf("alerter/sinks/README.md: the type table has no %s column", k)
		}
	}
	for _, s := range append(alert.DigestSeverities(), alert.DigestDaily, alert.DigestWeekly) {
		if !strings.Contains(doc, "`"+s+"`") {
			t.Errorf("alerter/sinks/README.md never names the digest value %s", s)
		}
	}
	if key := alert.DigestKey("changes", "acme", time.Date(2026, 6, 10, 9, 0, 0, 0, time.FixedZone("CEST", 7200))); !strings.Contains(doc, `"key":"`+key+`"`) {
		t.Errorf("alerter/sinks/README.md: the digest example's key is not %s", key)
	}
	if !strings.Contains(doc, "`alert-<endpointId>-<incidentId>:update-<N>:<sink>`") {
		t.Error("alerter/sinks/README.md does not give an update's ledger key")
	}
}
