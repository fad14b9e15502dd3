package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/api/apispec"
	apiv1 "github.com/mcpmon/mcpmon/pkg/api/v1"
)

func TestWaitCheck(t *testing.T) {
	since := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	before, after := since.Add(-time.Minute), since.Add(time.Minute)
	for _, c := range []struct {
		name    string
		v       apiv1.EndpointView
		f       waitFlags
		reached bool
	}{
		{"wanted state", apiv1.EndpointView{State: "up"}, waitFlags{until: []string{"up"}}, true},
		{"another state", apiv1.EndpointView{State: "down"}, waitFlags{until: []string{"up"}}, false},
		{"one of several", apiv1.EndpointView{State: "degraded"}, waitFlags{until: []string{"up", "degraded"}}, true},
		{"fresh: a verdict from before the start", apiv1.EndpointView{State: "up", StateWindow: &before}, waitFlags{until: []string{"up"}, fresh: true}, false},
		{"fresh: a verdict after the start", apiv1.EndpointView{State: "up", StateWindow: &after}, waitFlags{until: []string{"up"}, fresh: true}, true},
		{"fresh: a window starting at the start", apiv1.EndpointView{State: "up", StateWindow: &since}, waitFlags{until: []string{"up"}, fresh: true}, true},
		{"fresh: no window", apiv1.EndpointView{State: "up"}, waitFlags{until: []string{"up"}, fresh: true}, false},
		{"fresh does not apply to paused", apiv1.EndpointView{State: "paused"}, waitFlags{until: []string{"paused"}, fresh: true}, true},
	} {
		if got := waitCheck(c.v, c.f, since); got != c.reached {
			t.Errorf("%s: waitCheck = %v, want %v", c.name, got, c.reached)
		}
	}
}

// TestWaitAgainstARealServer gates on a real endpoint of a real `mcpmon
// run`: it reaches up, times out with one line naming the state it was
// left in, and refuses a state that does not exist.
func TestWaitAgainstARealServer(t *testing.T) {
	if testing.Short() {
		t.Skip("starts mcpmon run and waits for a verdict")
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

	out, errOut, code := h.run("wait", "gate", "--until", "up", "--fresh", "--interval", "100ms", "--timeout", "60s")
	if code != ExitOK || !strings.Contains(out, "up") {
		t.Fatalf("wait --until up: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if !strings.Contains(errOut, "gate: up") {
		t.Errorf("wait printed no progress line for the state it reached: %q", errOut)
	}
	// The progress lines come first; the reason is the one last line.
	_, errOut, code = h.run("wait", "gate", "--until", "down", "--interval", "100ms", "--timeout", "300ms")
	lines := strings.Split(strings.TrimSuffix(errOut, "\n"), "\n")
	if last := lines[len(lines)-1]; code != ExitError || last != "mcpmon wait: endpoint gate is up after 300ms, not down" {
		t.Errorf("wait --until down past its timeout: exit %d, stderr %q; want 1 and the reason as the last line", code, errOut)
	}
	// Between state changes, a line every ProgressEvery says what it is
	// waiting for and how long it has been; the reason is still last.
	h.progressEvery = 100 * time.Millisecond
	_, errOut, code = h.run("wait", "gate", "--until", "down", "--interval", "100ms", "--timeout", "450ms")
	lines = strings.Split(strings.TrimSuffix(errOut, "\n"), "\n")
	if code != ExitError || !strings.Contains(errOut, "wait gate: up after 100ms (until down; timeout 450ms)") || !strings.HasPrefix(lines[len(lines)-1], "mcpmon wait: endpoint gate is up after 450ms") {
		t.Errorf("wait --until down with progress: exit %d, stderr %q; want progress lines, then the reason", code, errOut)
	}
	h.progressEvery = 0
	h.fails(ExitUsage, "--until \"sideways\"", "wait", "gate", "--until", "sideways")
	h.fails(ExitNotFound, "nosuch", "wait", "nosuch", "--until", "up", "--timeout", "5s")
}
