package daemon

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/alerter/notify"
	"github.com/mcpmon/mcpmon/pkg/testpeers"
	"github.com/mcpmon/mcpmon/prober"
)

// referenceChecks names, for every page under docs/reference, the tests
// that hold it to the code it describes. A page added without a test fails
// TestDocsEveryReferencePageIsChecked.
var referenceChecks = map[string][]string{
	"api.md":             {"TestDocsAPIListsEveryOperation", "TestDocsAPIPaginatedLists"},
	"cli.md":             {"TestDocsCLINamesEveryCommandAndFlag"},
	"configuration.md":   {"TestDocsConfigurationDocumentsEveryFlag"},
	"conformance.md":     {"TestDocsConformanceListsEveryRule"},
	"deep-checks.md":     {"TestDocsDeepChecksDocumentEveryField", "TestDocsDeepChecksBounds"},
	"events.md":          {"TestDocsEventKinds", "TestDocsEventBudget"},
	"failure-classes.md": {"TestDocsClassTable"},
	"mcp.md":             {"TestDocsMCPToolsTable"},
	"metrics.md":         {"TestDocsMetricsCatalog"},
	"probing.md":         {"TestDocsProbingErasAndPhases"},
	"registry-import.md": {"TestDocsRegistryImportFlags", "TestDocsRegistryMembers"},
	"status-pages.md":    {"TestDocsStatusPagesNameEveryRoute", "TestDocsStatusJSONShape", "TestDocsStatusHeaders"},
}

// TestDocsEveryReferencePageIsChecked: every reference page has a test
// that checks it against the code, and every test named above exists.
func TestDocsEveryReferencePageIsChecked(t *testing.T) {
	pages, err := filepath.Glob(filepath.Join(repoRoot, "docs", "reference", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, p := range pages {
		name := filepath.Base(p)
		seen[name] = true
		if len(referenceChecks[name]) == 0 {
			t.Errorf("docs/reference/%s is checked by no test: add one that holds it to the code it describes, and list it in referenceChecks", name)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(referenceChecks)) {
		if !seen[name] {
			t.Errorf("referenceChecks lists docs/reference/%s, which does not exist", name)
		}
	}
	defined := testFuncs(t)
	for page, tests := range referenceChecks {
		for _, name := range tests {
			if !defined[name] {
				t.Errorf("referenceChecks: %s is checked by %s, which no _test.go file defines", page, name)
			}
		}
	}
}

// testFuncs are the Test functions of every _test.go file of the module.
func testFuncs(t *testing.T) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	walkGo(t, true, func(rel string, src []byte) {
		for _, m := range regexp.MustCompile(`(?m)^func (Test\w+)\(t \*testing\.T\)`).FindAllSubmatch(src, -1) {
			out[string(m[1])] = true
		}
	})
	return out
}

// walkGo calls fn with every .go file of the module outside testdata,
// node_modules and dot directories: the _test.go files when tests, the
// others otherwise.
func walkGo(t *testing.T, tests bool, fn func(rel string, src []byte)) {
	t.Helper()
	err := filepath.WalkDir(repoRoot, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != repoRoot && (d.Name() == "node_modules" || d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") != tests {
			return nil
		}
		src, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(repoRoot, p)
		fn(filepath.ToSlash(rel), src)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

var docCodeRow = regexp.MustCompile("(?m)^\\| `([^`]+)` \\|")

// tableKeys are the first cells of the rows of the table under heading.
func tableKeys(doc, heading string) []string {
	_, section, ok := strings.Cut("\n"+doc, "\n"+heading+"\n")
	if !ok {
		return nil
	}
	if i := strings.Index(section, "\n#"); i >= 0 {
		section = section[:i]
	}
	var out []string
	for _, m := range docCodeRow.FindAllStringSubmatch(section, -1) {
		out = append(out, m[1])
	}
	return out
}

// msgPhases are the Phase* constants of pkg/msg, read from its source: a
// phase added there without a row fails here even before it joins
// msg.Phases().
func msgPhases(t *testing.T) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(repoRoot, "pkg", "msg", "msg.go"), nil, 0)
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
				if !strings.HasPrefix(n.Name, "Phase") || i >= len(vs.Values) {
					continue
				}
				if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
					v, _ := strconv.Unquote(lit.Value)
					out = append(out, v)
				}
			}
		}
	}
	if len(out) == 0 {
		t.Fatal("pkg/msg/msg.go declares no Phase constant: have the phases moved?")
	}
	return out
}

// TestDocsProbingErasAndPhases keeps probing.md's protocol table equal to
// prober.Versions() (in order), its phase table equal to pkg/msg's phases,
// and its transports and renegotiation period equal to the prober's.
func TestDocsProbingErasAndPhases(t *testing.T) {
	doc := testpeers.RepoFile(t, "docs/reference/probing.md")
	var versions []string
	for _, k := range tableKeys(doc, "# Probing") {
		if regexp.MustCompile(`^\d{4}-\d{2}-\d{2}$`).MatchString(k) {
			versions = append(versions, k)
		}
	}
	if want := prober.Versions(); !slices.Equal(versions, want) {
		t.Errorf("docs/reference/probing.md's protocol table lists %v; the prober speaks %v (newest first)", versions, want)
	}
	phases, want := tableKeys(doc, "## Phases"), msgPhases(t)
	for _, p := range want {
		if !slices.Contains(phases, p) {
			t.Errorf("docs/reference/probing.md's phase table has no row for %s (pkg/msg)", p)
		}
	}
	for _, p := range phases {
		if !slices.Contains(want, p) {
			t.Errorf("docs/reference/probing.md's phase table has a row for %s, which pkg/msg does not define", p)
		}
	}
	transports := fmt.Sprintf("`transport` is `%s`, `%s` or `%s`", prober.TransportAuto, prober.TransportStreamableHTTP, prober.TransportSSE)
	if !strings.Contains(strings.Join(strings.Fields(doc), " "), transports) {
		t.Errorf("docs/reference/probing.md does not say %q", transports)
	}
	if prober.RenegotiateEvery != time.Hour || !strings.Contains(doc, "within the hour") {
		t.Errorf("docs/reference/probing.md says a new era is seen \"within the hour\"; prober.RenegotiateEvery is %s", prober.RenegotiateEvery)
	}
}

// TestDocsDeepChecksBounds keeps the limits deep-checks.md quotes equal to
// the prober's defaults.
func TestDocsDeepChecksBounds(t *testing.T) {
	doc := strings.Join(strings.Fields(testpeers.RepoFile(t, "docs/reference/deep-checks.md")), " ")
	for what, want := range map[string]string{
		"DefaultMaxBody":           fmt.Sprintf("%d MiB per response", prober.DefaultMaxBody>>20),
		"DefaultMaxSSEEvents":      fmt.Sprintf("at most %d SSE events per answer", prober.DefaultMaxSSEEvents),
		"DefaultMaxCachedTokens":   fmt.Sprintf("at most %s endpoints", thousands(prober.DefaultMaxCachedTokens)),
		"DefaultCredentialWarning": fmt.Sprintf("default %s", strings.TrimSuffix(prober.DefaultCredentialWarning.String(), "0m0s")),
	} {
		if !strings.Contains(doc, want) {
			t.Errorf("docs/reference/deep-checks.md does not say %q (prober.%s)", want, what)
		}
	}
}

// thousands writes n with a comma every three digits, as the docs do.
func thousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// A place is a package directory and, optionally, a symbol declared in its
// non-test files: `T`, `F`, or `T.M` for a method.
type place struct{ dir, symbol string }

func (p place) String() string { return strings.TrimSpace(p.dir + " " + p.symbol) }

func parsePlace(s string) place {
	dir, sym, _ := strings.Cut(s, " ")
	return place{dir, sym}
}

// exists reports whether p's directory holds Go code declaring its symbol.
func (p place) exists() (bool, error) {
	entries, err := os.ReadDir(filepath.Join(repoRoot, p.dir))
	if os.IsNotExist(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	fset := token.NewFileSet()
	anyGo := false
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		anyGo = true
		if p.symbol == "" {
			return true, nil
		}
		f, err := parser.ParseFile(fset, filepath.Join(repoRoot, p.dir, e.Name()), nil, parser.SkipObjectResolution)
		if err != nil {
			return false, err
		}
		if declares(f, p.symbol) {
			return true, nil
		}
	}
	return anyGo && p.symbol == "", nil
}

// declares reports whether f declares sym at top level (`T.M`: a method M
// of T).
func declares(f *ast.File, sym string) bool {
	recv, name, isMethod := strings.Cut(sym, ".")
	if !isMethod {
		name, recv = recv, ""
	}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Name.Name != name || (d.Recv == nil) != (recv == "") {
				continue
			}
			if recv == "" || receiverName(d.Recv.List[0].Type) == recv {
				return true
			}
		case *ast.GenDecl:
			if recv != "" {
				continue
			}
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					if s.Name.Name == name {
						return true
					}
				case *ast.ValueSpec:
					for _, n := range s.Names {
						if n.Name == name {
							return true
						}
					}
				}
			}
		}
	}
	return false
}

func receiverName(e ast.Expr) string {
	for {
		switch x := e.(type) {
		case *ast.StarExpr:
			e = x.X
		case *ast.IndexExpr:
			e = x.X
		case *ast.IndexListExpr:
			e = x.X
		case *ast.Ident:
			return x.Name
		default:
			return ""
		}
	}
}

var conceptRow = regexp.MustCompile("(?m)^\\| ([^|`]+?) \\| `([^`]+)`(?: `([^`]+)`)? \\|")

// conceptHomes reads architecture.md's concept table: concept → home.
func conceptHomes(t *testing.T) map[string]place {
	t.Helper()
	doc := testpeers.RepoFile(t, "docs/design/architecture.md")
	_, section, ok := strings.Cut(doc, "\n## Concept → its one home\n")
	if !ok {
		t.Fatal("docs/design/architecture.md has no \"## Concept → its one home\" section")
	}
	if i := strings.Index(section, "\n#"); i >= 0 {
		section = section[:i]
	}
	out := map[string]place{}
	for _, m := range conceptRow.FindAllStringSubmatch(section, -1) {
		if _, dup := out[m[1]]; dup {
			t.Errorf("docs/design/architecture.md names the concept %q twice", m[1])
		}
		out[m[1]] = place{m[2], m[3]}
	}
	if len(out) == 0 {
		t.Fatal("docs/design/architecture.md's concept table has no rows")
	}
	return out
}

// homeDrift lists every row whose home does not exist.
func homeDrift(homes map[string]place) ([]string, error) {
	var msgs []string
	for _, concept := range slices.Sorted(maps.Keys(homes)) {
		home := homes[concept]
		there, err := home.exists()
		if err != nil {
			return nil, err
		}
		if !there {
			msgs = append(msgs, fmt.Sprintf("docs/design/architecture.md: the home of %q, %s, does not exist", concept, home))
		}
	}
	return msgs, nil
}

// TestArchitectureHomesExist: every concept's home in architecture.md
// exists.
func TestArchitectureHomesExist(t *testing.T) {
	msgs, err := homeDrift(conceptHomes(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs {
		t.Error(m)
	}
}

// TestArchitectureHomeDriftIsReported proves the check fails for a home
// that does not exist and passes one that does.
func TestArchitectureHomeDriftIsReported(t *testing.T) {
	homes := map[string]place{
		"probe":   {"prober", "Prober.Probe"},
		"widgets": {"pkg/widget", "Widget"},
	}
	msgs, err := homeDrift(homes)
	if err != nil {
		t.Fatal(err)
	}
	want := `docs/design/architecture.md: the home of "widgets", pkg/widget Widget, does not exist`
	if len(msgs) != 1 || msgs[0] != want {
		t.Errorf("drift messages = %q, want only %q", msgs, want)
	}
}

// TestDocsSinkBackoff: every page that states a failing sink's backoff
// states the code's (three pages said 30 s while the code waits 5 s).
func TestDocsSinkBackoff(t *testing.T) {
	re := regexp.MustCompile(`(\d+) ?s doubling to (\d+) ?h`)
	found := 0
	_ = filepath.WalkDir(repoRoot, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() && (d.Name() == ".git" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if filepath.Ext(path) != ".md" || strings.HasSuffix(path, "CHANGELOG.md") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range re.FindAllStringSubmatch(string(b), -1) {
			found++
			first, _ := strconv.Atoi(m[1])
			most, _ := strconv.Atoi(m[2])
			if time.Duration(first)*time.Second != notify.DefaultRedeliveryInitial || time.Duration(most)*time.Hour != notify.DefaultRedeliveryMax {
				rel, _ := filepath.Rel(repoRoot, path)
				t.Errorf("%s says %q; the code backs off from %v to %v", rel, m[0], notify.DefaultRedeliveryInitial, notify.DefaultRedeliveryMax)
			}
		}
		return nil
	})
	if found < 3 {
		t.Errorf("found the sink backoff stated %d times in the docs, want at least 3 (configuration.md, concepts.md, security.md)", found)
	}
}
