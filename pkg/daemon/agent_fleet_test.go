package daemon

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/auth"
	"github.com/mcpmon/mcpmon/pkg/msg"
	"github.com/mcpmon/mcpmon/pkg/testpeers"
	"github.com/mcpmon/mcpmon/pkg/testpeers/e2e"
)

// TestAgentOutlivesTheAPIReplicaItTalksTo is the acceptance of
// `mcpmon agent` on the distributed roles (fauxqs + redis-server, every
// role its own process) with two API replicas and the agent given both:
// the central SSRF guard refuses a server on 127.0.0.1, the agent probes
// it for its location. Mid-outage the replica the agent talks to is
// SIGKILLed (the agent moves to the other) and the agent itself is
// SIGKILLed and restarted; down then up still gives exactly one alert and
// one resolve. Revoked through the other replica, the key is refused
// within the keyring's cache time and the agent exits 1.
func TestAgentOutlivesTheAPIReplicaItTalksTo(t *testing.T) {
	t.Parallel() // waits on windows: overlapped with the other long end-to-end tests
	sqsEndpoint := testpeers.SQSEndpoint(t)
	redisURL := testpeers.RedisURL(t)
	if testing.Short() {
		t.Skip("builds and runs five processes; skipped with -short")
	}
	prefix := fmt.Sprintf("agentfleet%d-", time.Now().UnixNano())
	rcv, hook := newReceiver(t)
	peers := e2e.Distributed{SQSEndpoint: sqsEndpoint, RedisURL: redisURL, Prefix: prefix, SecretsKey: testSecretsKey}
	// The SSRF guard is on everywhere: no MCPMON_ALLOW_PRIVATE_TARGETS.
	f := testpeers.NewFleet(t, slices.Concat(os.Environ(), peers.Env(), []string{
		"MCPMON_WINDOW=2s", "MCPMON_GRACE=500ms",
		"MCPMON_WEBHOOK_URL=" + hook, "MCPMON_CLAIM_LEASE=5s", "MCPMON_VISIBILITY_TIMEOUT=4s",
		"MCPMON_LOG_LEVEL=debug",
	}))
	f.Run("queues", "ensure")
	out := strings.Fields(f.Run("keys", "create", "--local", "--name", "admin", "--scope", "admin"))
	i := slices.IndexFunc(out, func(s string) bool { return strings.HasPrefix(s, "mcpmon_") })
	if i < 0 {
		t.Fatalf("keys create printed no key: %q", out)
	}
	adminKey := out[i]

	// The API replicas listen on fixed addresses: api-1 comes back where
	// the agent was told it is.
	addrs := make([]string, 2)
	for i := range addrs {
		var err error
		if addrs[i], err = e2e.FreeAddr(); err != nil {
			t.Fatal(err)
		}
	}
	startAPI := func(i int) *e2e.Proc {
		t.Helper()
		p := testpeers.StartProcess(t, e2e.Spec{Name: fmt.Sprintf("api-%d", i+1), Path: f.Bin, Env: f.Env,
			Args: []string{"api", "--listen", addrs[i]}})
		if err := p.WaitReady(t.Context(), 30*time.Second, e2e.HTTPReady(addrs[i])); err != nil {
			t.Fatal(err)
		}
		return p
	}
	api1 := startAPI(0)
	startAPI(1)
	f.Start("aggregator", "aggregator")
	f.Start("alerter", "alerter", "--replica-id", "alerter-1")
	c1, c2 := apiClient{addr: addrs[0], key: adminKey}, apiClient{addr: addrs[1], key: adminKey}

	srv := newMCPServer(t)
	body := map[string]any{"name": "private", "url": srv.url(), "schedule": "@every 1s", "timeout": "1s"}
	if status, b := c1.send(t, http.MethodPost, "/v1/endpoints", body); status != http.StatusBadRequest || !strings.Contains(string(b), "#/url") {
		t.Fatalf("a loopback target for the central probers: %d %s, want 400 naming #/url (the SSRF guard is on)", status, b)
	}
	body["regions"] = []string{"loc-office"}
	id := c1.register(t, body)
	status, b := c2.send(t, http.MethodPost, "/v1/agents", map[string]any{"name": "office-1", "location": "office"})
	if status != http.StatusCreated {
		t.Fatalf("create agent: %d %s", status, b)
	}
	var created struct{ Key string }
	if err := json.Unmarshal(b, &created); err != nil || created.Key == "" {
		t.Fatalf("create agent answered %s (%v)", b, err)
	}

	agentEnv := append(os.Environ(), "MCPMON_AGENT_TOKEN="+created.Key)
	startAgent := func() *e2e.Proc {
		return testpeers.StartProcess(t, e2e.Spec{Name: "mcpmon agent", Path: f.Bin, Env: agentEnv,
			Args: []string{"agent", "--server", "http://" + addrs[0], "--server", "http://" + addrs[1], "--allow-private-targets"}})
	}
	agent := startAgent()
	eventually(t, 60*time.Second, "an up verdict from the agent's location", func() bool { return c2.latestState(t, id) == msg.StateUp })
	if strings.Contains(agent.Output(), "switching to the next") {
		t.Fatalf("the agent left api-1 while it was up:\n%s", agent.Output())
	}

	// The outage begins and the replica the agent talks to (the first it
	// was given, sticky while it answers) dies with it: the probes' results
	// reach the alerter through api-2.
	srv.stop()
	api1.Kill()
	open := rcv.wait(t, 60*time.Second)
	if open["kind"] != "open" {
		t.Fatalf("first alert = %v, want an open alert", open)
	}
	if !strings.Contains(agent.Output(), "switching to the next") {
		t.Fatalf("the agent alerted through api-2 without saying it switched:\n%s", agent.Output())
	}

	// Killed mid-outage and restarted, with api-1 still dead: the agent
	// finds api-2 and probing goes on, nothing repeats.
	agent.Kill()
	agent = startAgent()
	since := time.Now()
	eventually(t, 60*time.Second, "down verdicts from the restarted agent", func() bool {
		v := c2.lastVerdict(t, id)
		return v.State == msg.StateDown && v.Window.After(since)
	})
	startAPI(0)

	srv.start()
	resolve := rcv.wait(t, 60*time.Second)
	if resolve["kind"] != "resolve" || resolve["incidentId"] != open["incidentId"] {
		t.Fatalf("second alert = %v, want the resolve of %v", resolve, open["incidentId"])
	}

	// The agent is on api-2; revoked through api-1, every replica refuses
	// the key within the keyring's cache time.
	if status, b := c1.send(t, http.MethodDelete, "/v1/agents/office-1", nil); status != http.StatusOK {
		t.Fatalf("revoke agent: %d %s", status, b)
	}
	// A poll answers within a second (a probe is due every second); the
	// rest is slack for a loaded machine.
	within := auth.DefaultCacheTTL + 5*time.Second
	select {
	case <-agent.Exited():
	case <-time.After(within):
		t.Fatalf("the agent still runs %s after its key was revoked on the other replica", within)
	}
	if agent.Err() == nil || !strings.Contains(agent.Output(), "refused the agent key") {
		t.Fatalf("revoked agent exited with %v, output:\n%s", agent.Err(), agent.Output())
	}
	gone := time.Now()
	eventually(t, 30*time.Second, "no_data windows once the agent is gone", func() bool {
		v := c2.lastVerdict(t, id)
		return v.State == msg.StateNoData && v.Window.After(gone)
	})
	if got := rcv.all(); len(got) != 2 {
		t.Fatalf("received %d alerts, want exactly one open and one resolve: %v", len(got), got)
	}
}
