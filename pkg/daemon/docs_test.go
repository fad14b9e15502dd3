package daemon

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/config"
	"github.com/mcpmon/mcpmon/pkg/metrics"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/store"
	"github.com/mcpmon/mcpmon/pkg/testpeers"
	"github.com/mcpmon/mcpmon/prober"
)

// The reference pages under docs/reference are checked against the code
// they describe: a flag, class, metric family or event kind added without
// its row fails here.

const repoRoot = "../.."

// TestDocsConfigurationDocumentsEveryFlag keeps the configuration table true.
func TestDocsConfigurationDocumentsEveryFlag(t *testing.T) {
	doc := testpeers.RepoFile(t, "docs/reference/configuration.md")
	o := config.Defaults()
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	o.Register(fs)
	fs.VisitAll(func(f *flag.Flag) {
		_, row, ok := strings.Cut(doc, "| `--"+f.Name+"` |")
		if !ok {
			t.Errorf("docs/reference/configuration.md has no row for --%s", f.Name)
			return
		}
		// The default column, where it is one value, is the flag's.
		def, _, _ := strings.Cut(row, "|")
		def = strings.TrimSpace(def)
		switch {
		case def == "off":
			if f.DefValue != "false" {
				t.Errorf("configuration.md: --%s defaults to off, the flag to %q", f.Name, f.DefValue)
			}
		case len(def) > 2 && strings.Count(def, "`") == 2 && def[0] == '`' && def[len(def)-1] == '`':
			want := def[1 : len(def)-1]
			dw, errW := time.ParseDuration(want)
			dg, errG := time.ParseDuration(f.DefValue)
			if same := want == f.DefValue || (errW == nil && errG == nil && dw == dg); !same {
				t.Errorf("configuration.md: --%s defaults to %s, the flag to %q", f.Name, def, f.DefValue)
			}
		}
		// flag.PrintDefaults takes a backquoted word as the value's name.
		if strings.Contains(f.Usage, "`") {
			t.Errorf("--%s's usage has a backquote, which --help prints as the value's name: %q", f.Name, f.Usage)
		}
	})
}

// TestDocsClassTable keeps the failure-class table equal to prober.Classes,
// the table the prober and the aggregator use.
func TestDocsClassTable(t *testing.T) {
	doc := testpeers.RepoFile(t, "docs/reference/failure-classes.md")
	for _, c := range prober.Classes() {
		row := fmt.Sprintf("| `%s` | %s | %s |", c.Class, c.Status, c.Doc)
		if !strings.Contains(doc, row) {
			t.Errorf("docs/reference/failure-classes.md lacks the class row %s", row)
		}
	}
}

// TestDocsMetricsCatalog keeps the metrics page's table equal to the catalog.
func TestDocsMetricsCatalog(t *testing.T) {
	doc := testpeers.RepoFile(t, "docs/reference/metrics.md")
	for _, f := range metrics.Catalog() {
		labels := "—"
		if len(f.Labels) > 0 {
			labels = "`" + strings.Join(f.Labels, "`, `") + "`"
		}
		row := fmt.Sprintf("| `%s` | %s | %s | %s | %s |", f.Name, f.Type, labels, f.Owner, f.Cardinality)
		if !strings.Contains(doc, row) {
			t.Errorf("docs/reference/metrics.md lacks the row %s", row)
		}
	}
}

// TestDocsEventKinds keeps the events page naming every change-event kind.
func TestDocsEventKinds(t *testing.T) {
	doc := testpeers.RepoFile(t, "docs/reference/events.md")
	for _, k := range model.EventKinds() {
		if !strings.Contains(doc, "| `"+k+"` |") {
			t.Errorf("docs/reference/events.md has no row for the event kind %s", k)
		}
	}
}

// TestDocsEventBudget keeps the events page's budget the one the store
// applies.
func TestDocsEventBudget(t *testing.T) {
	doc := testpeers.RepoFile(t, "docs/reference/events.md")
	want := fmt.Sprintf("**%d events in a rolling hour\n  and %d in a rolling day**", store.EventsPerHour, store.EventsPerDay)
	if !strings.Contains(doc, want) {
		t.Errorf("docs/reference/events.md does not state the event budget %q", want)
	}
	if store.EventFlapQuiet != time.Hour || !strings.Contains(doc, "has made no change for an hour") {
		t.Errorf("docs/reference/events.md: the flapping period ends after %s without changes", store.EventFlapQuiet)
	}
	if retained := int(store.DefaultVerdictHistory/(24*time.Hour)) * store.EventsPerDay; !strings.Contains(doc, fmt.Sprintf("(%d over the 7-day\n  retention", retained)) {
		t.Errorf("docs/reference/events.md: a flapping endpoint keeps at most %d events over the retention", retained)
	}
}

// TestREADMEIsTheFrontDoor keeps the README short: what, why, the two
// commands, a first try and links; everything else is a docs/ page.
func TestREADMEIsTheFrontDoor(t *testing.T) {
	if n := strings.Count(testpeers.RepoFile(t, "README.md"), "\n"); n > 200 {
		t.Errorf("README.md has %d lines; move detail to a docs/ page (at most 200)", n)
	}
}

var mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// TestDocsLinksResolve checks every relative link of the README and the docs
// pages: the file exists, and a #fragment into a Markdown file names one of
// its headings.
func TestDocsLinksResolve(t *testing.T) {
	pages := []string{"README.md", "deploy/README.md", "alerter/sinks/README.md"}
	_ = filepath.WalkDir(filepath.Join(repoRoot, "docs"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".md") {
			rel, _ := filepath.Rel(repoRoot, p)
			pages = append(pages, rel)
		}
		return nil
	})
	for _, page := range pages {
		for _, m := range mdLink.FindAllStringSubmatch(stripCode(testpeers.RepoFile(t, page)), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, frag, _ := strings.Cut(target, "#")
			path := page
			if file != "" {
				path = filepath.Join(filepath.Dir(page), file)
			}
			if _, err := os.Stat(filepath.Join(repoRoot, path)); err != nil {
				t.Errorf("%s links to %s, which does not exist", page, target)
				continue
			}
			if frag != "" && strings.HasSuffix(path, ".md") && !hasAnchor(testpeers.RepoFile(t, path), frag) {
				t.Errorf("%s links to %s: %s has no heading #%s", page, target, path, frag)
			}
		}
	}
}

// stripCode drops fenced code blocks, whose brackets are not links.
func stripCode(s string) string {
	var b strings.Builder
	fence := false
	for _, line := range strings.Split(s, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fence = !fence
			continue
		}
		if !fence {
			b.WriteString(line + "\n")
		}
	}
	return b.String()
}

// hasAnchor reports whether doc has a heading whose GitHub anchor is frag.
func hasAnchor(doc, frag string) bool {
	for _, line := range strings.Split(stripCode(doc), "\n") {
		h := strings.TrimLeft(line, "#")
		if len(h) == len(line) || !strings.HasPrefix(h, " ") {
			continue
		}
		var a strings.Builder
		for _, r := range strings.ToLower(strings.TrimSpace(h)) {
			switch {
			case r == ' ':
				a.WriteRune('-')
			case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
				a.WriteRune(r)
			}
		}
		if a.String() == frag {
			return true
		}
	}
	return false
}

// TestEventKindsHaveOneDefinition: the change-event kinds are spelled once,
// in pkg/model/event.go, the event-kinds row of architecture.md's concept
// table; every other package names them through its constants. (Comments
// may quote them, and a failure class may share a name.)
func TestEventKindsHaveOneDefinition(t *testing.T) {
	home := filepath.Join("pkg", "model", "event.go")
	if row := conceptHomes(t)["event kinds"]; row.dir != filepath.Dir(home) {
		t.Errorf("docs/design/architecture.md puts the event kinds in %s; they are defined in %s", row.dir, home)
	}
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
		rel, _ := filepath.Rel(repoRoot, p)
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") || rel == home {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(b), "\n") {
			if l := strings.TrimSpace(line); strings.HasPrefix(l, "//") || strings.Contains(l, "Class") {
				continue
			}
			for _, k := range model.EventKinds() {
				if k != "version" && strings.Contains(line, `"`+k+`"`) { // "version" is too common a word
					t.Errorf("%s:%d spells the event kind %q; name it through pkg/model's constant", rel, i+1, k)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
