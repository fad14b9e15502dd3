package daemon

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/mcpmon/mcpmon/pkg/config"
	"github.com/mcpmon/mcpmon/prober"
)

// TestREADMEDocumentsEveryFlag keeps the README's configuration table true:
// a flag added to the code without a row fails here.
func TestREADMEDocumentsEveryFlag(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	o := config.Defaults()
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	o.Register(fs)
	fs.VisitAll(func(f *flag.Flag) {
		if !strings.Contains(string(readme), "| `--"+f.Name+"` |") {
			t.Errorf("README.md's configuration table has no row for --%s", f.Name)
		}
	})
}

// TestREADMEClassTable keeps the README's failure-class table equal to
// prober.Classes, the table the prober and the aggregator use.
func TestREADMEClassTable(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range prober.Classes() {
		row := fmt.Sprintf("| `%s` | %s | %s |", c.Class, c.Status, c.Doc)
		if !strings.Contains(string(readme), row) {
			t.Errorf("README.md lacks the class row %s", row)
		}
	}
}
