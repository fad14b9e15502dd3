package alerter

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/alerter/sinks"
	"github.com/mcpmon/mcpmon/alerter/sinks/webhook"
	"github.com/mcpmon/mcpmon/pkg/alert"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/store"
)

func TestDecideAgents(t *testing.T) {
	const after = 90 * time.Second
	now := t0
	seen := func(last time.Time) model.AgentSeen {
		return model.AgentSeen{Tenant: "acme", Location: "office", Name: "office-1", LastSeen: last}
	}
	cases := []struct {
		name    string
		seen    map[string]model.AgentSeen
		notices map[string]agentNotice
		want    []agentStep
	}{
		{name: "online, nothing owed", seen: map[string]model.AgentSeen{"a": seen(now.Add(-89 * time.Second))}},
		{name: "silent for the timeout: offline since its last poll",
			seen: map[string]model.AgentSeen{"a": seen(now.Add(-after))},
			want: []agentStep{{ID: "a", Seen: seen(now.Add(-after)), Kind: KindAgentOffline, Since: now.Add(-after)}}},
		{name: "offline and already told: nothing",
			seen:    map[string]model.AgentSeen{"a": seen(now.Add(-time.Hour))},
			notices: map[string]agentNotice{"a": {OfflineSince: now.Add(-time.Hour)}}},
		{name: "polled after the notice: back online",
			seen:    map[string]model.AgentSeen{"a": seen(now.Add(-time.Second))},
			notices: map[string]agentNotice{"a": {OfflineSince: now.Add(-12 * time.Minute)}},
			want:    []agentStep{{ID: "a", Seen: seen(now.Add(-time.Second)), Kind: KindAgentOnline, Since: now.Add(-12 * time.Minute), Back: now.Add(-time.Second)}}},
		{name: "back and silent again before a run: back online first",
			seen:    map[string]model.AgentSeen{"a": seen(now.Add(-5 * time.Minute))},
			notices: map[string]agentNotice{"a": {OfflineSince: now.Add(-time.Hour)}},
			want:    []agentStep{{ID: "a", Seen: seen(now.Add(-5 * time.Minute)), Kind: KindAgentOnline, Since: now.Add(-time.Hour), Back: now.Add(-5 * time.Minute)}}},
		{name: "never polled: nothing", seen: map[string]model.AgentSeen{"a": {Tenant: "acme", Location: "office"}}},
		{name: "a record without a location: nothing", seen: map[string]model.AgentSeen{"a": {LastSeen: now.Add(-time.Hour)}}},
		{name: "revoked (no record): the notice is forgotten, no message",
			notices: map[string]agentNotice{"a": {OfflineSince: now.Add(-time.Hour)}},
			want:    []agentStep{{ID: "a"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := decideAgents(c.seen, c.notices, now, after)
			if !slices.EqualFunc(got, c.want, func(x, y agentStep) bool {
				return x.ID == y.ID && x.Kind == y.Kind && x.Since.Equal(y.Since) && x.Back.Equal(y.Back) && x.Seen.LastSeen.Equal(y.Seen.LastSeen)
			}) {
				t.Errorf("decideAgents = %+v, want %+v", got, c.want)
			}
		})
	}
}

// hookBodies is a real webhook receiver on 127.0.0.1 keeping each event
// delivery's body.
type hookBodies struct {
	srv *httptest.Server
	mu  sync.Mutex
	got []webhook.EventPayload
}

func newHookBodies(t *testing.T) *hookBodies {
	h := &hookBodies{}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var p webhook.EventPayload
		if json.Unmarshal(b, &p) != nil || p.Type != "event" {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		h.mu.Lock()
		h.got = append(h.got, p)
		h.mu.Unlock()
	}))
	t.Cleanup(h.srv.Close)
	return h
}

func (h *hookBodies) take() []webhook.EventPayload {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := h.got
	h.got = nil
	return out
}

func (e *env) agentRecord(id string, s model.AgentSeen) {
	e.t.Helper()
	doc, _ := json.Marshal(s)
	if err := e.st.PutObject(e.ctx, store.KindAgentSeen, id, doc); err != nil {
		e.t.Fatal(err)
	}
}

// TestSilentAgentNotifiedOncePerSink: an agent whose location probes two
// endpoints (each with the same own webhook sink) goes silent; two alerter
// replicas running the watcher send exactly one "offline" to the sink, and
// one "back online" once it polls again; an agent of another location, and
// another tenant's endpoint of the same location name, are not involved.
func TestSilentAgentNotifiedOncePerSink(t *testing.T) {
	e := newEnv(t)
	office, other := newHookBodies(t), newHookBodies(t)
	own := func(url string) json.RawMessage {
		return json.RawMessage(`[{"name":"team","type":"webhook","url":"` + url + `"}]`)
	}
	for _, ep := range []model.Endpoint{
		{ID: "ep1", Tenant: "acme", Name: "billing", URL: "http://10.0.0.7/mcp", Schedule: "@every 30s", Regions: []string{"loc-office"}, Sinks: own(office.srv.URL)},
		{ID: "ep2", Tenant: "acme", Name: "search", URL: "http://10.0.0.8/mcp", Schedule: "@every 30s", Regions: []string{"loc-office"}, Sinks: own(office.srv.URL)},
		{ID: "ep3", Tenant: "globex", Name: "theirs", URL: "http://10.0.0.9/mcp", Schedule: "@every 30s", Regions: []string{"loc-office"}, Sinks: own(other.srv.URL)},
	} {
		if _, err := e.st.CreateEndpoint(e.ctx, ep); err != nil {
			t.Fatal(err)
		}
	}
	res := sinks.NewEndpointResolver(nil, true, nil)
	sinksFor := func(_ context.Context, ep model.Endpoint) ([]alert.Sink, error) { return res.For(ep.ID, ep.Sinks) }
	replicas := []*Alerter{
		e.alerter("r1", func(o *Options) { o.SinksFor = sinksFor }),
		e.alerter("r2", func(o *Options) { o.SinksFor = sinksFor }),
	}
	run := func() {
		t.Helper()
		for _, a := range replicas {
			if err := a.NotifyAgents(e.ctx); err != nil {
				t.Fatalf("NotifyAgents: %v", err)
			}
		}
	}
	last := e.clk.Now()
	e.agentRecord("k1", model.AgentSeen{Tenant: "acme", Location: "office", Name: "office-1", LastSeen: last})
	run()
	if got := office.take(); len(got) != 0 {
		t.Fatalf("an agent that just polled: %d messages", len(got))
	}

	e.clk.Advance(model.DefaultAgentOfflineAfter - time.Second)
	run()
	if got := office.take(); len(got) != 0 {
		t.Fatalf("a second before the offline timeout: %d messages", len(got))
	}
	e.clk.Advance(time.Second)
	run()
	run() // a restart or another tick: the ledger and the notice say it was sent
	got := office.take()
	if len(got) != 1 {
		t.Fatalf("offline: %d messages to the location's sink, want 1: %+v", len(got), got)
	}
	n := got[0]
	if n.Kind != KindAgentOffline || !strings.Contains(n.Message, "office-1") || !strings.Contains(n.Message, "offline since "+last.Format(time.RFC3339)) {
		t.Errorf("offline message: kind %q, %q", n.Kind, n.Message)
	}
	if want := "agent-k1-" + n.Fingerprint + "-offline:team-"; !strings.HasPrefix(n.Key, want) {
		t.Errorf("offline key %q, want prefix %q", n.Key, want)
	}
	if len(other.take()) != 0 {
		t.Error("another tenant's sink heard of acme's agent")
	}

	e.clk.Advance(12 * time.Minute)
	run()
	if got := office.take(); len(got) != 0 {
		t.Fatalf("still offline 12 minutes on: %d more messages", len(got))
	}
	e.agentRecord("k1", model.AgentSeen{Tenant: "acme", Location: "office", Name: "office-1", LastSeen: e.clk.Now()})
	run()
	run()
	got = office.take()
	if len(got) != 1 || got[0].Kind != KindAgentOnline || !strings.Contains(got[0].Message, "back online after 13m30s") {
		t.Fatalf("back online: %+v, want one agent_online saying after 13m30s", got)
	}
	if _, err := e.st.GetObject(e.ctx, store.KindAgentOffline, "k1"); err == nil {
		t.Error("the offline notice outlived the agent's return")
	}
}

// TestRevokedAgentIsNotReported: the API drops a revoked agent's record,
// so its silence is no news, and a notice it left is forgotten quietly.
func TestRevokedAgentIsNotReported(t *testing.T) {
	e := newEnv(t)
	if _, err := e.st.CreateEndpoint(e.ctx, model.Endpoint{ID: "ep1", Name: "billing", URL: "http://10.0.0.7/mcp", Schedule: "@every 30s", Regions: []string{"loc-office"}}); err != nil {
		t.Fatal(err)
	}
	ev := &eventSink{name: "hook"}
	a := e.alerter("r1", func(o *Options) { o.Sinks = []alert.Sink{ev} })
	e.agentRecord("k1", model.AgentSeen{Location: "office", Name: "office-1", LastSeen: e.clk.Now()})
	e.clk.Advance(2 * time.Minute)
	if err := a.NotifyAgents(e.ctx); err != nil {
		t.Fatal(err)
	}
	if keys := ev.keys(); len(keys) != 1 || !strings.HasPrefix(keys[0], "agent-k1-") {
		t.Fatalf("offline through a global sink: %v", keys)
	}
	if err := e.st.DeleteObject(e.ctx, store.KindAgentSeen, "k1"); err != nil { // revoked
		t.Fatal(err)
	}
	if err := a.NotifyAgents(e.ctx); err != nil {
		t.Fatal(err)
	}
	if keys := ev.keys(); len(keys) != 1 {
		t.Errorf("a revoked agent's notice sent more: %v", keys)
	}
	if _, err := e.st.GetObject(e.ctx, store.KindAgentOffline, "k1"); err == nil {
		t.Error("a revoked agent's notice is kept")
	}
}

func TestAgentGap(t *testing.T) {
	for d, want := range map[time.Duration]string{
		40 * time.Second: "40s", 12 * time.Minute: "12m", 13*time.Minute + 30*time.Second: "13m30s",
		time.Hour: "1h", 90*time.Minute + 20*time.Second: "1h30m",
	} {
		if got := gap(d); got != want {
			t.Errorf("gap(%s) = %q, want %q", d, got, want)
		}
	}
}

// TestAgentNoticeSkipsCriticalOnlySinks: a sink routed to critical
// incidents only is not woken for an agent; one that takes warnings is.
func TestAgentNoticeSkipsCriticalOnlySinks(t *testing.T) {
	e := newEnv(t)
	if _, err := e.st.CreateEndpoint(e.ctx, model.Endpoint{ID: "ep1", Name: "billing", URL: "http://10.0.0.7/mcp", Schedule: "@every 30s", Regions: []string{"loc-office"}}); err != nil {
		t.Fatal(err)
	}
	pager, chat := newHookBodies(t), newHookBodies(t)
	global, err := sinks.Build([]sinks.Config{
		{Name: "pager", Type: "webhook", URL: pager.srv.URL, Severities: []string{model.SeverityCritical}},
		{Name: "chat", Type: "webhook", URL: chat.srv.URL},
	}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	a := e.alerter("r1", func(o *Options) { o.Sinks = global })
	e.agentRecord("k1", model.AgentSeen{Location: "office", Name: "office-1", LastSeen: e.clk.Now()})
	e.clk.Advance(2 * time.Minute)
	if err := a.NotifyAgents(e.ctx); err != nil {
		t.Fatal(err)
	}
	if n := len(pager.take()); n != 0 {
		t.Errorf("the critical-only pager got %d agent notices", n)
	}
	if got := chat.take(); len(got) != 1 || got[0].Kind != KindAgentOffline {
		t.Errorf("the chat sink got %+v, want one agent_offline", got)
	}
}
