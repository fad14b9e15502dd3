package daemon

import (
	"flag"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/mcpmon/mcpmon/pkg/config"
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
