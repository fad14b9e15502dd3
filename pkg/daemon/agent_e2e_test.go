package daemon

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/msg"
	"github.com/mcpmon/mcpmon/pkg/testpeers"
	"github.com/mcpmon/mcpmon/pkg/testpeers/e2e"
)

// TestAgentProbesWhatTheCentralProberMayNot is the acceptance of
// `mcpmon agent` on `mcpmon run`: the central SSRF guard refuses a server
// on 127.0.0.1, an agent with private targets allowed probes it for its
// location; down then up gives one alert and one resolve, though the agent
// is SIGKILLed and restarted mid-outage; its key reads nothing else; once
// revoked, the agent exits within seconds with one line, and its
// location's windows are no_data.
func TestAgentProbesWhatTheCentralProberMayNot(t *testing.T) {
	t.Parallel()
	srv := newMCPServer(t)
	rcv, hook := newReceiver(t)
	dir := t.TempDir()
	// The SSRF guard is on: no --allow-private-targets.
	api := testpeers.StartMcpmon(t, []string{"run", "--listen", "127.0.0.1:0", "--data-dir", filepath.Join(dir, "data"),
		"--window", "1s", "--grace", "300ms", "--replica-id", "e2e", "--agent-secrets-over-http"},
		append(os.Environ(), "MCPMON_WEBHOOK_URL="+hook))
	c := apiClient{addr: strings.TrimPrefix(api.URL, "http://"), key: api.Token}

	const secret = "Bearer agent-e2e-secret"
	body := map[string]any{"name": "private", "url": srv.url(), "schedule": "@every 1s", "timeout": "1s",
		"headers": map[string]string{"Authorization": secret}}
	if status, b := c.send(t, http.MethodPost, "/v1/endpoints", body); status != http.StatusBadRequest || !strings.Contains(string(b), "#/url") {
		t.Fatalf("a loopback target for the central probers: %d %s, want 400 naming #/url (the SSRF guard is on)", status, b)
	}
	body["regions"] = []string{"loc-office"}
	id := c.register(t, body)

	status, b := c.send(t, http.MethodPost, "/v1/agents", map[string]any{"name": "office-1", "location": "office"})
	if status != http.StatusCreated {
		t.Fatalf("create agent: %d %s", status, b)
	}
	var created struct{ ID, Key, Region string }
	if err := json.Unmarshal(b, &created); err != nil || !strings.HasPrefix(created.Key, "mcpmon_") || created.Region != "loc-office" {
		t.Fatalf("create agent answered %s (%v)", b, err)
	}
	agentKey := apiClient{addr: c.addr, key: created.Key}
	for _, path := range []string{"/v1/endpoints", "/v1/endpoints/" + id, "/v1/agents", "/v1/keys"} {
		if status, _ := agentKey.send(t, http.MethodGet, path, nil); status != http.StatusForbidden {
			t.Errorf("agent key GET %s: %d, want 403", path, status)
		}
	}
	if status, _ := c.send(t, http.MethodGet, "/v1/agent/commands?wait=0s", nil); status != http.StatusForbidden {
		t.Errorf("an admin key fetching agent commands: %d, want 403", status)
	}

	bin := testpeers.Mcpmon(t)
	agentEnv := append(os.Environ(), "MCPMON_AGENT_TOKEN="+created.Key)
	startAgent := func() *e2e.Proc {
		return testpeers.StartProcess(t, e2e.Spec{Name: "mcpmon agent", Path: bin, Env: agentEnv,
			Args: []string{"agent", "--server", api.URL, "--allow-private-targets"}})
	}
	agent := startAgent()
	eventually(t, 30*time.Second, "an up verdict from the agent's location", func() bool {
		return c.latestState(t, id) == msg.StateUp
	})
	latest := c.get(t, "/v1/endpoints/"+id)
	if !strings.Contains(latest, `"region":"loc-office"`) {
		t.Errorf("the latest result is not the agent location's: %s", latest)
	}
	// The agent's results went to this process's aggregator directly,
	// not through the embedded results queue (the central prober is idle).
	handed, sent := metricValue(t, c.get(t, "/metrics"), `mcpmon_queue_handoffs_total{queue="results"}`),
		metricValue(t, c.get(t, "/metrics"), `mcpmon_queue_sends_total{queue="results"}`)
	if handed < 1 || sent != 0 {
		t.Errorf("agent results: %v handed to the aggregator, %v sent to the results queue; want them handed over, none sent", handed, sent)
	}
	for _, path := range []string{"/v1/endpoints/" + id, "/v1/agents"} {
		if strings.Contains(c.get(t, path), "agent-e2e-secret") {
			t.Errorf("GET %s returns the endpoint's secret header", path)
		}
	}

	srv.stop()
	open := rcv.wait(t, 30*time.Second)
	if open["kind"] != "open" {
		t.Fatalf("first alert = %v, want an open alert", open)
	}
	incidentID, _ := open["incidentId"].(string)

	// Killed mid-outage, restarted: probing goes on, nothing repeats.
	agent.Kill()
	<-agent.Exited()
	agent = startAgent()
	since := time.Now()
	eventually(t, 30*time.Second, "down verdicts from the restarted agent", func() bool {
		v := c.lastVerdict(t, id)
		return v.State == msg.StateDown && v.Window.After(since)
	})

	srv.start()
	resolve := rcv.wait(t, 30*time.Second)
	if resolve["kind"] != "resolve" || resolve["incidentId"] != incidentID {
		t.Fatalf("second alert = %v, want the resolve of %s", resolve, incidentID)
	}

	var agents struct {
		Agents []struct {
			Name, Version   string
			LastSeen        *time.Time
			ProbesPerMinute int
		}
	}
	if err := json.Unmarshal([]byte(c.get(t, "/v1/agents")), &agents); err != nil || len(agents.Agents) != 1 ||
		agents.Agents[0].LastSeen == nil || agents.Agents[0].Version == "" {
		t.Fatalf("GET /v1/agents = %+v (%v), want office-1 seen, with its version", agents, err)
	}

	if status, b := c.send(t, http.MethodDelete, "/v1/agents/office-1", nil); status != http.StatusOK {
		t.Fatalf("revoke agent: %d %s", status, b)
	}
	select {
	case <-agent.Exited():
	case <-time.After(15 * time.Second):
		t.Fatal("the agent still runs 15s after its key was revoked")
	}
	if agent.Err() == nil || !strings.Contains(agent.Output(), "refused the agent key") {
		t.Fatalf("revoked agent exited with %v, output:\n%s", agent.Err(), agent.Output())
	}
	// Its location silent, the endpoint's windows are no_data, not down,
	// and page nobody.
	gone := time.Now()
	eventually(t, 30*time.Second, "no_data windows once the agent is gone", func() bool {
		v := c.lastVerdict(t, id)
		return v.State == msg.StateNoData && v.Window.After(gone)
	})
	if got := rcv.all(); len(got) != 2 {
		t.Fatalf("received %d alerts, want one open and one resolve: %v", len(got), got)
	}
}

// lastVerdict is the endpoint's latest verdict (zero before its first).
func (c apiClient) lastVerdict(t *testing.T, id string) msg.Verdict {
	t.Helper()
	var out struct {
		Verdicts []msg.Verdict `json:"verdicts"`
	}
	if err := json.NewDecoder(bytes.NewReader([]byte(c.get(t, "/v1/endpoints/"+id+"/verdicts?limit=1")))).Decode(&out); err != nil {
		t.Fatal(err)
	}
	if len(out.Verdicts) == 0 {
		return msg.Verdict{}
	}
	return out.Verdicts[0]
}

// metricValue is the value of series (name and labels, as exposed) in a
// /metrics text, 0 when it is not there.
func metricValue(t *testing.T, text, series string) float64 {
	t.Helper()
	for line := range strings.Lines(text) {
		if rest, ok := strings.CutPrefix(line, series+" "); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			if err != nil {
				t.Fatalf("series %s: %v", series, err)
			}
			return v
		}
	}
	return 0
}
