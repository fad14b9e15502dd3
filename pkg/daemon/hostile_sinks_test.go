package daemon

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/alerter/notify"
	"github.com/mcpmon/mcpmon/pkg/config"
)

// bodySink is a real local HTTP receiver that keeps every request body
// and answers each with status.
type bodySink struct {
	mu     sync.Mutex
	bodies [][]byte
	status int
	srv    *httptest.Server
}

func newBodySink(t *testing.T, status int) *bodySink {
	t.Helper()
	b := &bodySink{status: status}
	b.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		b.mu.Lock()
		b.bodies = append(b.bodies, body)
		b.mu.Unlock()
		w.WriteHeader(b.status)
		_, _ = io.WriteString(w, "ok")
	}))
	t.Cleanup(b.srv.Close)
	return b
}

func (b *bodySink) count() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.bodies)
}

func (b *bodySink) body(i int) []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.bodies[i]
}

// startSinkDaemon starts `mcpmon run` with one-second windows, private
// targets allowed (the receivers listen on loopback) and the API open on
// loopback, and returns a client for it.
func startSinkDaemon(t *testing.T, mut func(*config.Options)) (*Daemon, apiClient) {
	t.Helper()
	o := fastOptions(t)
	o.Auth = config.AuthNone
	o.RateLimit = 0 // the tests poll the incident
	if mut != nil {
		mut(&o)
	}
	d, err := Start(t.Context(), RoleAll, o, Deps{Logger: testLogger(t), Stdout: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Stop(); _ = d.Wait() })
	return d, apiClient{addr: d.Addr()}
}

// deadTarget is the URL of an MCP server that has stopped: every probe of
// it fails, so an incident opens within a few windows.
func deadTarget(t *testing.T) string {
	t.Helper()
	srv := newMCPServer(t)
	srv.stop()
	return srv.url()
}

// TestSlackFallbackTextEscapedEndToEnd: an endpoint whose name carries a
// channel mention and a link opens an incident; the Slack message the
// running server posts has no raw mention or link in its fallback `text`
// (what Slack puts in the channel notification), as in its blocks.
func TestSlackFallbackTextEscapedEndToEnd(t *testing.T) {
	t.Parallel() // waits on windows: overlapped with the other long end-to-end tests
	slack := newBodySink(t, http.StatusOK)
	_, c := startSinkDaemon(t, nil)
	c.register(t, map[string]any{
		"name": "db <!channel> <https://evil.example|login>", "url": deadTarget(t), "schedule": "@every 1s", "timeout": "1s",
		"sinks": []map[string]any{{"name": "chat", "type": "slack", "url": slack.srv.URL + "/services/T0/B0/tok"}},
	})
	eventually(t, 30*time.Second, "the open notification at Slack", func() bool { return slack.count() > 0 })
	var m struct {
		Text string `json:"text"`
	}
	if err := json.Unmarshal(slack.body(0), &m); err != nil {
		t.Fatal(err)
	}
	if strings.ContainsAny(m.Text, "<>") || !strings.Contains(m.Text, "&lt;!channel&gt;") {
		t.Fatalf("Slack fallback text %q: want the endpoint name escaped (&lt;!channel&gt;), no raw < or >", m.Text)
	}
}

// delivery is one element of an incident's notifications.
type delivery struct {
	Kind      string `json:"kind"`
	Sink      string `json:"sink"`
	Outcome   string `json:"outcome"`
	Attempts  int    `json:"attempts"`
	LastError string `json:"lastError"`
}

// deliveries returns the notifications of the endpoint's newest incident
// as GET /v1/incidents/{id} shows them (nil while it has none).
func (c apiClient) deliveries(t *testing.T, endpointID string) []delivery {
	t.Helper()
	var list struct {
		Incidents []struct {
			ID string `json:"id"`
		} `json:"incidents"`
	}
	if err := json.Unmarshal([]byte(c.get(t, "/v1/incidents?endpoint="+endpointID)), &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Incidents) == 0 {
		return nil
	}
	var inc struct {
		Notifications []delivery `json:"notifications"`
	}
	if err := json.Unmarshal([]byte(c.get(t, "/v1/incidents/"+list.Incidents[0].ID)), &inc); err != nil {
		t.Fatal(err)
	}
	return inc.Notifications
}

// TestSinkErrorsDoNotNameTheResolver: a tenant's sink whose host does not
// resolve fails; the error stored on the incident's delivery and shown to
// the tenant names the host, never the resolver's address.
func TestSinkErrorsDoNotNameTheResolver(t *testing.T) {
	t.Parallel() // waits on windows: overlapped with the other long end-to-end tests
	_, c := startSinkDaemon(t, nil)
	id := c.register(t, map[string]any{
		"name": "db", "url": deadTarget(t), "schedule": "@every 1s", "timeout": "1s",
		"sinks": []map[string]any{{"name": "hook", "type": "webhook", "url": "http://hooks.mcpmon-no-such-host.invalid/hook"}},
	})
	var d delivery
	eventually(t, 60*time.Second, "a failed delivery on the incident", func() bool {
		for _, x := range c.deliveries(t, id) {
			if x.Sink == "hook" && x.LastError != "" {
				d = x
				return true
			}
		}
		return false
	})
	if !strings.Contains(d.LastError, "hooks.mcpmon-no-such-host.invalid") || resolverRE.MatchString(d.LastError) {
		t.Fatalf("delivery lastError %q: want the sink's host named, not the resolver's address", d.LastError)
	}
}

// resolverRE matches how Go names a resolver in a lookup error.
var resolverRE = regexp.MustCompile(`\bon \[?[0-9a-fA-F.:]+\]?:53\b`)

// verdictWindows counts the endpoint's verdicts the API lists (up to 100):
// a test's way to see windows pass on a real server.
func (c apiClient) verdictWindows(t *testing.T, id string) int {
	t.Helper()
	var out struct {
		Verdicts []json.RawMessage `json:"verdicts"`
	}
	if err := json.Unmarshal([]byte(c.get(t, "/v1/endpoints/"+id+"/verdicts?limit=100")), &out); err != nil {
		t.Fatal(err)
	}
	return len(out.Verdicts)
}

// sinkOutcome is the outcome of the endpoint's newest incident's open
// notification at sink ("" while it has none).
func (c apiClient) sinkOutcome(t *testing.T, id, sink string) delivery {
	t.Helper()
	for _, d := range c.deliveries(t, id) {
		if d.Sink == sink && d.Kind == "open" {
			return d
		}
	}
	return delivery{}
}

// TestFailingSinkIsNotRetriedEveryDrain: a receiver that answers 500 to
// everything gets one dispatch's retries for an open notification and
// then, while verdicts keep arriving each second, only the redeliveries
// its backoff allows (notify.DefaultRedeliveryInitial, doubling, each
// jittered to at least half): later drains do not call it again on every
// verdict.
func TestFailingSinkIsNotRetriedEveryDrain(t *testing.T) {
	t.Parallel() // waits on windows: overlapped with the other long end-to-end tests
	hook := newBodySink(t, http.StatusInternalServerError)
	_, c := startSinkDaemon(t, nil)
	id := c.register(t, map[string]any{
		"name": "db", "url": deadTarget(t), "schedule": "@every 1s", "timeout": "1s",
		"sinks": []map[string]any{{"name": "hook", "type": "webhook", "url": hook.srv.URL + "/hook"}},
	})
	eventually(t, 60*time.Second, "the first failed dispatch on the incident", func() bool {
		return c.sinkOutcome(t, id, "hook").Outcome == "failed"
	})
	failedAt := time.Now()
	calls, seen := hook.count(), c.verdictWindows(t, id)
	eventually(t, 30*time.Second, "five more verdicts", func() bool { return c.verdictWindows(t, id) >= seen+5 })
	// Redeliveries that fit since the first failure, each after at least
	// half its wait: 2.5 s, then 5 s, 10 s, … with the 5 s default.
	elapsed, redeliveries := time.Since(failedAt), 0
	for wait, at := notify.DefaultRedeliveryInitial/2, notify.DefaultRedeliveryInitial/2; at <= elapsed; wait *= 2 {
		redeliveries++
		at += 2 * wait
	}
	if redeliveries >= 5 {
		t.Fatalf("five windows took %s: too long to tell a backoff from a retry on every verdict", elapsed)
	}
	if got := hook.count(); got-calls > redeliveries*calls {
		t.Fatalf("the failing sink was called %d more times in five windows (%s) after its first failed dispatch (%d calls): want at most %d redeliveries of %d calls",
			got-calls, elapsed.Round(time.Millisecond), calls, redeliveries, calls)
	}
}

// TestFailingSinkGivenUpEndToEnd: with --sink-give-up-after 3s, a sink
// that keeps failing is given up: GET /v1/incidents/{id} shows gave_up on
// its delivery, /metrics counts it, and the sink is not called again.
func TestFailingSinkGivenUpEndToEnd(t *testing.T) {
	t.Parallel() // waits on windows: overlapped with the other long end-to-end tests
	hook := newBodySink(t, http.StatusInternalServerError)
	d, c := startSinkDaemon(t, func(o *config.Options) { o.SinkGiveUpAfter = 3 * time.Second })
	id := c.register(t, map[string]any{
		"name": "db", "url": deadTarget(t), "schedule": "@every 1s", "timeout": "1s",
		"sinks": []map[string]any{{"name": "hook", "type": "webhook", "url": hook.srv.URL + "/hook"}},
	})
	eventually(t, 90*time.Second, "gave_up on the incident's delivery", func() bool {
		return c.sinkOutcome(t, id, "hook").Outcome == "gave_up"
	})
	if dl := c.sinkOutcome(t, id, "hook"); !strings.Contains(dl.LastError, "given up") || dl.Attempts == 0 {
		t.Fatalf("delivery %+v: want the give-up reason and the attempts", dl)
	}
	resp, err := http.Get("http://" + d.Addr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	m, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(m), `mcpmon_deliveries_given_up_total{sink="endpoint:webhook"} 1`) {
		t.Fatalf("/metrics lacks mcpmon_deliveries_given_up_total{sink=\"endpoint:webhook\"} 1")
	}
	calls, seen := hook.count(), c.verdictWindows(t, id)
	eventually(t, 30*time.Second, "five more verdicts", func() bool { return c.verdictWindows(t, id) >= seen+5 })
	if got := hook.count(); got != calls {
		t.Fatalf("the sink was called %d more times after it was given up", got-calls)
	}
}
