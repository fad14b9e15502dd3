package cli

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/api/apispec"
	apiv1 "github.com/mcpmon/mcpmon/pkg/api/v1"
)

// TestConformanceCommandAgainstARealServer: a real `mcpmon run` probes a
// go-sdk server (2025-11-25, without cross-origin protection) and
// `mcpmon conformance` shows the era's rules from its latest result: the
// foreign-Origin rule fails and the rest pass, the endpoint is up all the
// same, --strict exits 1 naming the count, an unknown endpoint exits 3.
func TestConformanceCommandAgainstARealServer(t *testing.T) {
	if testing.Short() {
		t.Skip("starts mcpmon run and waits for a probe")
	}
	mcpURL, _ := newMCPServer(t)
	h := &harness{t: t, hc: apispec.Client(t), env: map[string]string{}}
	dataDir := t.TempDir()
	key := strings.TrimSpace(h.ok("keys", "create", "--local", "--init", "--name", "ci", "--scope", "write", "--data-dir", dataDir))
	addr, stop := h.startServer(dataDir)
	defer stop()
	h.setenv("MCPMON_SERVER", "http://"+addr)
	h.setenv("MCPMON_TOKEN", key)
	h.ok("endpoints", "add", "--name", "gate", "--url", mcpURL, "--schedule", "@every 1s", "--timeout", "1s")

	var v apiv1.ConformanceView
	eventually(t, 30*time.Second, "a judged conformance", func() bool {
		out, _, code := h.run("conformance", "gate", "-o", "json")
		return code == ExitOK && json.Unmarshal([]byte(out), &v) == nil && v.Era != ""
	})
	outcomes := map[string]string{}
	for _, r := range v.Rules {
		outcomes[r.ID] = r.Outcome
	}
	if v.Era != "2025-11-25" || outcomes["foreign-origin-refused"] != "fail" || outcomes["batch-refused"] != "pass" || outcomes["discover-result-schema"] != "n/a" || v.Failed != 1 {
		t.Fatalf("conformance %+v", v)
	}
	out := h.ok("conformance", "gate")
	if !strings.Contains(out, "foreign-origin-refused") || !strings.Contains(out, "want 403") || strings.Contains(out, "discover-result-schema") ||
		!strings.Contains(out, "Endpoint:") || !strings.Contains(out, "gate (") {
		t.Errorf("table:\n%s", out)
	}
	if out := h.ok("conformance", "gate", "--all"); !strings.Contains(out, "discover-result-schema") {
		t.Errorf("--all leaves out the other eras' rules:\n%s", out)
	}
	var ep apiv1.EndpointView
	h.json(&ep, "endpoints", "get", "gate")
	if ep.LatestResult == nil || ep.LatestResult.Status != "up" {
		t.Errorf("latest result %+v: a non-conforming server that answers is up", ep.LatestResult)
	}
	h.fails(ExitError, "fails 1 conformance rule", "conformance", "gate", "--strict")
	h.fails(ExitNotFound, "nosuch", "conformance", "nosuch")
}
