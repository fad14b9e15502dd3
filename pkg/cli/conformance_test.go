package cli

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpmon/mcpmon/pkg/msg"
	"github.com/mcpmon/mcpmon/pkg/testpeers"
)

// TestConformanceClientScenarios runs the MCP conformance suite's client
// scenarios (@modelcontextprotocol/conformance, the servers the MCP
// maintainers wrote to test clients) with `mcpmon probe` as the client, and
// checks what a monitor must get right there: the handshake scenario passes
// the suite's own checks, and every authorization scenario — both discovery
// eras, metadata at each well-known variant, no metadata at all — is
// classified auth_required (alive and protected), never down; given client
// credentials, the probe discovers the token URL and gets in.
//
// A probe is not an OAuth client for people: it does not register, open a
// browser or follow step-up scopes, so the suite's checks of those flows
// fail by design and only the probe's verdict is asserted for them.
func TestConformanceClientScenarios(t *testing.T) {
	entry, node := testpeers.Conformance(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		scenario    string
		class       string
		suitePasses bool // the suite's own checks all pass
	}{
		{"initialize", "ok", true},
		{"auth/metadata-default", "auth_required", false},
		{"auth/metadata-var1", "auth_required", false},
		{"auth/metadata-var2", "auth_required", false},
		{"auth/scope-step-up", "auth_required", false},
		{"auth/2025-03-26-oauth-metadata-backcompat", "auth_required", false},
		{"auth/2025-03-26-oauth-endpoint-fallback", "auth_required", false},
		// Client credentials: the token URL discovered from the metadata,
		// the secret sent with HTTP Basic, the token accepted.
		{"auth/client-credentials-basic", "ok", true},
	} {
		t.Run(tc.scenario, func(t *testing.T) {
			t.Parallel()
			out := t.TempDir()
			cmd := exec.CommandContext(t.Context(), node, entry, "client",
				"--command", self+" probe --allow-private-targets -o json",
				"--scenario", tc.scenario, "--timeout", "20000", "-o", out)
			cmd.Env = append(os.Environ(), envRunAsMCPMON+"=1")
			log, runErr := cmd.CombinedOutput()

			dirs, _ := filepath.Glob(filepath.Join(out, tc.scenario+"-*"))
			if len(dirs) != 1 {
				t.Fatalf("conformance client --scenario %s: no results directory (%v)\n%s", tc.scenario, runErr, log)
			}
			stdout, err := os.ReadFile(filepath.Join(dirs[0], "stdout.txt"))
			if err != nil {
				t.Fatal(err)
			}
			var res msg.ProbeResult
			if err := json.Unmarshal(stdout, &res); err != nil {
				stderr, _ := os.ReadFile(filepath.Join(dirs[0], "stderr.txt"))
				t.Fatalf("mcpmon probe printed no result: %v\nstdout: %s\nstderr: %s\nsuite: %s", err, stdout, stderr, log)
			}
			if res.Status != msg.StatusUp || res.Class != tc.class {
				t.Errorf("probe: %s %s (%s), want up %s", res.Status, res.Class, res.Error, tc.class)
			}
			if !tc.suitePasses {
				return
			}
			if runErr != nil {
				t.Errorf("the suite failed (%v):\n%s", runErr, log)
			}
			var checks []struct{ ID, Status, Description string }
			b, err := os.ReadFile(filepath.Join(dirs[0], "checks.json"))
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(b, &checks); err != nil {
				t.Fatal(err)
			}
			passed := 0
			for _, c := range checks {
				switch c.Status {
				case "SUCCESS":
					passed++
				case "FAILURE", "WARNING":
					t.Errorf("check %s: %s (%s)", c.ID, c.Status, strings.TrimSpace(c.Description))
				}
			}
			if passed == 0 {
				t.Errorf("no check passed: %s", b)
			}
		})
	}
}
