package cli

import (
	"context"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/testpeers"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// The command-line reference pages are checked against the command tree
// that Run executes: a command or flag added without its row fails here,
// and so does a row for a command or flag that is gone.

// commandTree is the tree Run builds, as a list in depth-first order.
func commandTree() []*cobra.Command {
	a := &app{ctx: context.Background(), io: IO{Getenv: func(string) string { return "" }}}
	var out []*cobra.Command
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Hidden {
			return
		}
		out = append(out, c)
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(a.root())
	return out
}

// daemonFlags is the flags cell of a role or operator task: cobra passes
// their arguments to pkg/daemon untouched, whose flags the configuration
// page lists.
const daemonFlags = "daemon flags ([configuration](configuration.md))"

// commandRow is the row docs/reference/cli.md holds for c: its path, its
// own flags (the root's global ones), and its one-line help.
func commandRow(c *cobra.Command) string {
	fs := c.LocalNonPersistentFlags()
	if !c.HasParent() {
		fs = c.PersistentFlags()
	}
	var flags []string
	fs.VisitAll(func(f *pflag.Flag) {
		s := "`--" + f.Name + "`"
		if f.Shorthand != "" {
			s = "`-" + f.Shorthand + "`, " + s
		}
		flags = append(flags, s)
	})
	cell := strings.Join(flags, " ")
	switch {
	case c.DisableFlagParsing && cell == "":
		cell = daemonFlags
	case cell == "":
		cell = "—"
	}
	return fmt.Sprintf("| `%s` | %s | %s |", c.CommandPath(), cell, c.Short)
}

var docCommandRow = regexp.MustCompile("(?m)^\\| `(mcpmon[a-z -]*)` \\|")

// TestDocsCLINamesEveryCommandAndFlag keeps cli.md's command table equal to
// the tree: every command with its flags and help line, and no row for a
// command the tree does not have.
func TestDocsCLINamesEveryCommandAndFlag(t *testing.T) {
	doc := testpeers.RepoFile(t, "docs/reference/cli.md")
	for _, msg := range cliTableDrift(doc, commandTree()) {
		t.Error(msg)
	}
}

func cliTableDrift(doc string, tree []*cobra.Command) []string {
	var msgs []string
	known := map[string]bool{}
	for _, c := range tree {
		known[c.CommandPath()] = true
		if row := commandRow(c); !strings.Contains(doc, row+"\n") {
			msgs = append(msgs, fmt.Sprintf("docs/reference/cli.md: the command table lacks (or has another row for) %s; want the row\n%s", c.CommandPath(), row))
		}
	}
	for _, m := range docCommandRow.FindAllStringSubmatch(doc, -1) {
		if !known[m[1]] {
			msgs = append(msgs, fmt.Sprintf("docs/reference/cli.md has a row for %s, which the command tree does not have", m[1]))
		}
	}
	return msgs
}

// TestDocsCLIDriftIsReported proves the check above fails both ways: a
// command added to the tree without a row, and a row whose command is gone.
func TestDocsCLIDriftIsReported(t *testing.T) {
	doc := testpeers.RepoFile(t, "docs/reference/cli.md")
	tree := commandTree()
	frob := &cobra.Command{Use: "frob", Short: "Frob an endpoint", RunE: func(*cobra.Command, []string) error { return nil }}
	frob.Flags().Bool("hard", false, "")
	tree[0].AddCommand(frob)
	tree = append(tree, frob)
	doc += "| `mcpmon gone` | — | Removed |\n"
	msgs := cliTableDrift(doc, tree)
	joined := strings.Join(msgs, "\n")
	for _, want := range []string{
		"the command table lacks (or has another row for) mcpmon frob; want the row\n| `mcpmon frob` | `--hard` | Frob an endpoint |",
		"has a row for mcpmon gone, which the command tree does not have",
	} {
		if !strings.Contains(joined, want) {
			t.Errorf("drift messages lack %q:\n%s", want, joined)
		}
	}
	if len(msgs) != 2 {
		t.Errorf("got %d messages, want 2:\n%s", len(msgs), joined)
	}
}

var flagName = regexp.MustCompile("`--([a-z0-9-]+)")

// TestDocsRegistryImportFlags keeps the flag table of registry-import.md
// equal to `mcpmon import registry`'s flags, defaults included.
func TestDocsRegistryImportFlags(t *testing.T) {
	doc := testpeers.RepoFile(t, "docs/reference/registry-import.md")
	var cmd *cobra.Command
	for _, c := range commandTree() {
		if c.CommandPath() == "mcpmon import registry" {
			cmd = c
		}
	}
	if cmd == nil {
		t.Fatal("the command tree has no `mcpmon import registry`")
	}
	rows := map[string][]string{} // flag → cells of its row
	for _, line := range strings.Split(doc, "\n") {
		if !strings.HasPrefix(line, "| `--") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), " | ")
		for _, m := range flagName.FindAllStringSubmatch(cells[0], -1) {
			rows[m[1]] = cells
		}
	}
	cmd.LocalNonPersistentFlags().VisitAll(func(f *pflag.Flag) {
		cells, ok := rows[f.Name]
		if !ok {
			t.Errorf("docs/reference/registry-import.md: the flag table has no row for --%s", f.Name)
			return
		}
		delete(rows, f.Name)
		if f.DefValue == "" || f.DefValue == "false" || len(cells) < 2 {
			return
		}
		if got := strings.Trim(strings.TrimSpace(cells[1]), "`"); !sameDefault(got, f.DefValue) {
			t.Errorf("docs/reference/registry-import.md: --%s defaults to %s, the table says %q", f.Name, f.DefValue, got)
		}
	})
	for _, name := range slices.Sorted(maps.Keys(rows)) {
		t.Errorf("docs/reference/registry-import.md has a row for --%s, which `mcpmon import registry` does not take", name)
	}
}

// sameDefault compares a documented default with a flag's: durations by
// value (`10m` is 10m0s).
func sameDefault(doc, flag string) bool {
	if doc == flag {
		return true
	}
	d1, err1 := time.ParseDuration(doc)
	d2, err2 := time.ParseDuration(flag)
	return err1 == nil && err2 == nil && d1 == d2
}
