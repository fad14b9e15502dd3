package daemon

import (
	"encoding/json"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/msg"
	"github.com/mcpmon/mcpmon/pkg/testpeers"
	"github.com/mcpmon/mcpmon/pkg/testpeers/e2e"
)

// TestSilentAgentTellsItsTenantOnce: on `mcpmon run --regions eu`, an
// agent whose location probes three endpoints is SIGKILLed; one
// agent_offline (not one per endpoint) reaches the webhook they all alert,
// GET /v1/agents shows it offline since its last poll; with the location
// offline, an endpoint probed from eu and the location whose server dies
// is down (judged by eu alone), not regional; after a restart one
// agent_online follows.
func TestSilentAgentTellsItsTenantOnce(t *testing.T) {
	t.Parallel()
	srv, mixedSrv := newMCPServer(t), newMCPServer(t)
	rcv, hook := newReceiver(t)
	dir := t.TempDir()
	api := testpeers.StartMcpmon(t, []string{"run", "--listen", "127.0.0.1:0", "--data-dir", filepath.Join(dir, "data"),
		"--window", "1s", "--grace", "300ms", "--replica-id", "e2e", "--agent-offline-after", "1m",
		"--regions", "eu", "--allow-private-targets"},
		append(os.Environ(), "MCPMON_WEBHOOK_URL="+hook))
	c := apiClient{addr: strings.TrimPrefix(api.URL, "http://"), key: api.Token}
	var ids []string
	for _, name := range []string{"billing", "search"} {
		ids = append(ids, c.register(t, map[string]any{"name": name, "url": srv.url(), "schedule": "@every 1s", "timeout": "1s",
			"regions": []string{"loc-office"}}))
	}
	mixed := c.register(t, map[string]any{"name": "mixed", "url": mixedSrv.url(), "schedule": "@every 1s", "timeout": "1s",
		"regions": []string{"eu", "loc-office"}})
	status, b := c.send(t, http.MethodPost, "/v1/agents", map[string]any{"name": "office-1", "location": "office"})
	if status != http.StatusCreated {
		t.Fatalf("create agent: %d %s", status, b)
	}
	var created struct{ ID, Key string }
	if err := json.Unmarshal(b, &created); err != nil {
		t.Fatal(err)
	}
	bin := testpeers.Mcpmon(t)
	startAgent := func() *e2e.Proc {
		return testpeers.StartProcess(t, e2e.Spec{Name: "mcpmon agent", Path: bin, Env: append(os.Environ(), "MCPMON_AGENT_TOKEN="+created.Key),
			Args: []string{"agent", "--server", api.URL, "--allow-private-targets"}})
	}
	agent := startAgent()
	for _, id := range ids {
		eventually(t, 30*time.Second, "an up verdict from the agent's location", func() bool { return c.latestState(t, id) == msg.StateUp })
	}
	eventually(t, 30*time.Second, "an up verdict from eu and the location", func() bool {
		v := c.lastVerdict(t, mixed)
		return v.State == msg.StateUp && v.RegionStates["eu"] == msg.StateUp && v.RegionStates["loc-office"] == msg.StateUp
	})
	type view struct {
		Online           bool
		OfflineSince     *time.Time
		LastSeen         *time.Time
		ClockSkewSeconds *float64
	}
	agentView := func() view {
		var v view
		if err := json.Unmarshal([]byte(c.get(t, "/v1/agents/office-1")), &v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	if v := agentView(); !v.Online || v.OfflineSince != nil || v.ClockSkewSeconds == nil || math.Abs(*v.ClockSkewSeconds) > 5 {
		t.Fatalf("a polling agent: %+v, want online with a skew near 0 (one machine's clock)", v)
	}

	agent.Kill()
	<-agent.Exited()
	// Offline after 1m without a poll (its record is written every 15 s,
	// the watcher looks every 15 s).
	off := rcv.wait(t, 150*time.Second)
	if off["type"] != "event" || off["kind"] != "agent_offline" || !strings.Contains(off["message"].(string), "office-1") {
		t.Fatalf("first notification = %v, want agent_offline naming office-1", off)
	}
	// The notice judges the agent's record, the API the last poll it saw:
	// the record catches up with that poll (its trailing write), so once
	// the notice is out the API shows the agent offline since the same
	// poll.
	if v := agentView(); v.Online || v.OfflineSince == nil || !v.OfflineSince.Equal(*v.LastSeen) ||
		!strings.Contains(off["message"].(string), v.LastSeen.UTC().Format(time.RFC3339)) {
		t.Errorf("a silent agent after its agent_offline notice %q: %+v, want offline since its last poll, the one the notice names", off["message"], v)
	}
	// The agent's series: the dashboards' test cannot see them (its run
	// has no agent), so they are checked here, on the same /metrics.
	metricsText := c.get(t, "/metrics")
	for _, family := range []string{"mcpmon_agent_last_seen_timestamp_seconds", "mcpmon_agent_clock_skew_seconds",
		"mcpmon_agent_results_total", "mcpmon_agent_online"} {
		if !regexp.MustCompile(`(?m)^` + family + `\{[^}]*location="office"[^}]*\} `).MatchString(metricsText) {
			t.Errorf("/metrics has no %s series of location office", family)
		}
	}
	if !regexp.MustCompile(`(?m)^mcpmon_agent_online\{[^}]*location="office"[^}]*\} 0$`).MatchString(metricsText) {
		t.Errorf("mcpmon_agent_online of the silent agent is not 0")
	}
	for _, id := range ids {
		if v := c.lastVerdict(t, id); v.State == msg.StateDown {
			t.Errorf("endpoint %s is down while its only location is offline: %+v", id, v)
		}
	}

	// The location offline, eu alone judges the mixed endpoint: its
	// server gone, it is down and pages (critical), not regional.
	mixedSrv.stop()
	open := rcv.wait(t, 60*time.Second)
	if ep, _ := open["endpoint"].(map[string]any); open["kind"] != "open" || ep["id"] != mixed || open["severity"] != "critical" || open["incidentKind"] != "global" {
		t.Fatalf("after the mixed endpoint's server stopped: %v, want a critical open of %s", open, mixed)
	}
	if v := c.lastVerdict(t, mixed); v.State != msg.StateDown {
		t.Errorf("the mixed endpoint's last verdict: %+v, want down", v)
	}

	agent = startAgent()
	on := rcv.wait(t, 60*time.Second)
	if on["kind"] != "agent_online" || !strings.Contains(on["message"].(string), "back online after") {
		t.Fatalf("third notification = %v, want agent_online", on)
	}
	if got := rcv.all(); len(got) != 3 {
		t.Fatalf("received %d notifications, want agent_offline, the open and agent_online: %v", len(got), got)
	}
	if v := agentView(); !v.Online {
		t.Errorf("a restarted agent: %+v, want online", v)
	}
	agent.Kill()
}
