package cli

import (
	"bytes"
	"strings"
	"testing"
)

// TestHelpNeverShowsTheToken: MCPMON_TOKEN is --token's value, but --help
// (pasted into tickets and CI logs) must not print it as the default.
func TestHelpNeverShowsTheToken(t *testing.T) {
	const key = "mcpmon_secretkeyvalue"
	for _, args := range [][]string{{"--help"}, {"endpoints", "add", "--help"}, {"probe", "--help"}} {
		var out bytes.Buffer
		code := Run(t.Context(), args, IO{Getenv: func(k string) string {
			if k == "MCPMON_TOKEN" {
				return key
			}
			return ""
		}, Stdout: &out, Stderr: &out})
		if code != ExitOK || !strings.Contains(out.String(), "--token") {
			t.Fatalf("mcpmon %s: exit %d\n%s", strings.Join(args, " "), code, out.String())
		}
		if strings.Contains(out.String(), key) {
			t.Errorf("mcpmon %s prints the API key:\n%s", strings.Join(args, " "), out.String())
		}
	}
}
