package alerter

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/alerter/notify"
	"github.com/mcpmon/mcpmon/alerter/sinks"
	"github.com/mcpmon/mcpmon/alerter/sinks/webhook"
	"github.com/mcpmon/mcpmon/pkg/alert"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/msg"
	"github.com/mcpmon/mcpmon/pkg/store"
	"github.com/mcpmon/mcpmon/pkg/testpeers"
)

const groupWait = 30 * time.Second

// stormEnv is an env with two real webhook sinks built from their
// configuration: "grouped" groups by class and host, "each" does not.
type stormEnv struct {
	*env
	grouped, each *testpeers.Receiver
	sinks         []alert.Sink
}

func newStormEnv(t *testing.T) *stormEnv { return newStormEnvOn(t, newEnv(t)) }

func newStormEnvOn(t *testing.T, base *env) *stormEnv {
	e := &stormEnv{env: base, grouped: testpeers.NewReceiver(t, nil), each: testpeers.NewReceiver(t, nil)}
	cfgs := []sinks.Config{
		{Name: "grouped", Type: sinks.TypeWebhook, URL: e.grouped.URL, Group: &sinks.Group{By: []string{"class", "host"}, Wait: groupWait}},
		{Name: "each", Type: sinks.TypeWebhook, URL: e.each.URL},
	}
	var err error
	if e.sinks, err = sinks.Build(cfgs, nil, nil); err != nil {
		t.Fatal(err)
	}
	return e
}

// gateway creates n endpoints behind one host, as servers fronted by one
// gateway are.
func (e *stormEnv) gateway(n int) []string {
	e.t.Helper()
	var ids []string
	for i := range n {
		id := fmt.Sprintf("gw%02d", i)
		if _, err := e.st.CreateEndpoint(e.ctx, model.Endpoint{ID: id, Name: "mcp " + id, URL: "https://gw.example.com/" + id + "/mcp",
			Schedule: "@every 1m", Timeout: 5 * time.Second}); err != nil {
			e.t.Fatal(err)
		}
		ids = append(ids, id)
	}
	return ids
}

func (e *stormEnv) alerter(owner string) *Alerter {
	return e.env.alerter(owner, func(o *Options) { o.Sinks = e.sinks })
}

// all publishes states for every endpoint and handles them.
func (e *stormEnv) all(a *Alerter, ids []string, from int, ss ...msg.State) {
	e.t.Helper()
	for _, id := range ids {
		e.states(id, from, ss...)
	}
	if errs := e.pump(a.Handle); errs != nil {
		e.t.Fatal(errs)
	}
}

func (e *stormEnv) sweep(a *Alerter) {
	e.t.Helper()
	if err := a.Sweep(e.ctx); err != nil {
		e.t.Fatal(err)
	}
}

// groupPayloads are the grouped deliveries r got, and how many plain ones.
func groupPayloads(t *testing.T, r *testpeers.Receiver) (groups []webhook.GroupPayload, plain []webhook.Payload) {
	t.Helper()
	for _, b := range r.Bodies() {
		var probe struct{ Type string }
		if err := json.Unmarshal(b, &probe); err != nil {
			t.Fatal(err)
		}
		if probe.Type == "group" {
			var g webhook.GroupPayload
			if err := json.Unmarshal(b, &g); err != nil {
				t.Fatal(err)
			}
			groups = append(groups, g)
			continue
		}
		var p webhook.Payload
		if err := json.Unmarshal(b, &p); err != nil {
			t.Fatal(err)
		}
		plain = append(plain, p)
	}
	return groups, plain
}

func (e *stormEnv) pendingOutboxes() int {
	e.t.Helper()
	ids, err := e.st.PendingOutboxes(e.ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	return len(ids)
}

// TestStormOfFiftyIsOneGroupedNotification: 50 endpoints behind one
// gateway fail together. The grouping sink gets one grouped open listing
// all 50 once the wait is over, and one grouped resolve once all have
// recovered; the sink without grouping gets 50 opens and 50 resolves; the
// store holds 50 incidents, each recording its open and resolve at the
// grouping sink as grouped.
func TestStormOfFiftyIsOneGroupedNotification(t *testing.T) {
	e := newStormEnv(t)
	ids := e.gateway(50)
	a := e.alerter("a")

	e.all(a, ids, 0, down, down)
	if n := len(e.each.Requests()); n != 50 {
		t.Fatalf("the sink without grouping got %d requests, want 50 opens", n)
	}
	e.sweep(a) // inside the wait: the group still collects
	if n := len(e.grouped.Requests()); n != 0 {
		t.Fatalf("the grouping sink got %d requests inside the wait, want 0", n)
	}
	e.clk.Advance(groupWait)
	e.sweep(a)
	e.sweep(a) // a second sweep sends nothing more
	groups, plain := groupPayloads(t, e.grouped)
	if len(groups) != 1 || len(plain) != 0 {
		t.Fatalf("grouping sink got %d grouped and %d plain notifications, want 1 and 0", len(groups), len(plain))
	}
	g := groups[0]
	if g.Kind != alert.KindOpen || g.Count != 50 || len(g.Members) != 50 || g.By["class"] != "refused" || g.By["host"] != "gw.example.com" {
		t.Fatalf("grouped open %+v", g)
	}
	if req := e.grouped.Requests()[0]; req.Header.Get(webhook.HeaderIdempotency) != g.Key || req.Header.Get(webhook.HeaderEvent) != "group-open" {
		t.Fatalf("headers %v, want the group's ledger key and group-open", req.Header)
	}
	incs, err := e.st.ListIncidents(e.ctx, store.IncidentFilter{})
	if err != nil || len(incs) != 50 {
		t.Fatalf("%d incidents (%v), want 50", len(incs), err)
	}
	for _, inc := range incs {
		if got := deliveryOutcome(t, e.env, inc.ID, "open", "grouped"); got != model.DeliveryGrouped {
			t.Fatalf("incident %s: open at the grouping sink recorded %q, want grouped", inc.ID, got)
		}
		if !e.ledgerDone(msg.LedgerKey(inc.EndpointID, inc.ID, "open", "grouped")) {
			t.Fatalf("incident %s: its own open key at the grouping sink is not done", inc.ID)
		}
	}
	if n := e.pendingOutboxes(); n != 0 {
		t.Fatalf("%d outboxes still pending after the grouped open", n)
	}

	e.all(a, ids, 2, up, up)
	if n := len(e.each.Requests()); n != 100 {
		t.Fatalf("the sink without grouping got %d requests, want 50 opens and 50 resolves", n)
	}
	e.sweep(a)
	e.sweep(a)
	groups, plain = groupPayloads(t, e.grouped)
	if len(groups) != 2 || len(plain) != 0 || groups[1].Kind != alert.KindResolve || groups[1].Count != 50 || groups[1].GroupID != g.GroupID || groups[1].ResolvedAt == nil {
		t.Fatalf("after recovery the grouping sink got %d grouped (%+v) and %d plain, want the open and one resolve of the same group", len(groups), groups, len(plain))
	}
	for _, inc := range incs {
		if got := deliveryOutcome(t, e.env, inc.ID, "resolve", "grouped"); got != model.DeliveryGrouped {
			t.Fatalf("incident %s: resolve at the grouping sink recorded %q, want grouped", inc.ID, got)
		}
	}
	if n := e.pendingOutboxes(); n != 0 {
		t.Fatalf("%d outboxes still pending after the grouped resolve", n)
	}
}

// TestLoneIncidentAfterTheWaitIsAPlainOpen: one endpoint failing alone
// reaches the grouping sink as the open it would get without grouping,
// with the same ledger key, once the wait is over; its resolve is plain
// too.
func TestLoneIncidentAfterTheWaitIsAPlainOpen(t *testing.T) {
	e := newStormEnv(t)
	ids := e.gateway(1)
	a := e.alerter("a")
	e.all(a, ids, 0, down, down)
	if n := len(e.grouped.Requests()); n != 0 {
		t.Fatalf("grouping sink got %d requests inside the wait", n)
	}
	e.clk.Advance(groupWait)
	e.sweep(a)
	e.sweep(a)
	groups, plain := groupPayloads(t, e.grouped)
	inc := e.incidents(ids[0])[0]
	if len(groups) != 0 || len(plain) != 1 || plain[0].Kind != alert.KindOpen || plain[0].Key != msg.LedgerKey(ids[0], inc.ID, "open", "grouped") {
		t.Fatalf("grouping sink got %d grouped and %+v plain, want one plain open with the ungrouped key", len(groups), plain)
	}
	e.all(a, ids, 2, up, up)
	if _, plain = groupPayloads(t, e.grouped); len(plain) != 2 || plain[1].Kind != alert.KindResolve {
		t.Fatalf("after recovery: %+v, want a plain resolve", plain)
	}
}

// TestGroupsAreSplitByKey: endpoints behind two hosts, and one failing in
// another class, make one group per key; an endpoint that fails after the
// wait starts a group of its own.
func TestGroupsAreSplitByKey(t *testing.T) {
	e := newStormEnv(t)
	a := e.alerter("a")
	for _, ep := range []struct{ id, host string }{{"a1", "a.example"}, {"a2", "a.example"}, {"b1", "b.example"}, {"b2", "b.example"}, {"b3", "b.example"}} {
		if _, err := e.st.CreateEndpoint(e.ctx, model.Endpoint{ID: ep.id, Name: ep.id, URL: "https://" + ep.host + "/" + ep.id,
			Schedule: "@every 1m", Timeout: 5 * time.Second}); err != nil {
			t.Fatal(err)
		}
	}
	e.all(a, []string{"a1", "a2", "b1", "b2"}, 0, down, down)
	// b3 fails in another class: its own key.
	for i, s := range []msg.State{down, down} {
		v := verdict("b3", win(i), s)
		v.Class = "timeout"
		e.publish(v)
	}
	if errs := e.pump(a.Handle); errs != nil {
		t.Fatal(errs)
	}
	e.clk.Advance(groupWait)
	e.sweep(a)
	groups, plain := groupPayloads(t, e.grouped)
	if len(groups) != 2 || len(plain) != 1 || plain[0].Endpoint.ID != "b3" {
		t.Fatalf("got %d groups and plain %+v, want a group per host and b3 alone", len(groups), plain)
	}
	for _, g := range groups {
		if g.Count != 2 {
			t.Fatalf("group %v has %d members, want 2", g.By, g.Count)
		}
	}
}

// TestGroupCrashAtEveryStep kills the alerter at each step of sending a
// grouped open; another replica takes over after the lease. The group
// goes out once, except for the one duplicate window every notification
// has (after the sink accepted, before the ledger mark), where it goes out
// again with the same Idempotency-Key; either way no member is ever sent
// alone and every outbox settles.
func TestGroupCrashAtEveryStep(t *testing.T) { testGroupCrashAtEveryStep(t, newEnv) }

func testGroupCrashAtEveryStep(t *testing.T, newEnv func(*testing.T) *env) {
	for _, tt := range []struct {
		point string
		sends int
	}{
		{"claimed", 1},       // group claimed, before the send
		{"sent", 2},          // sink accepted, ledger not marked: THE duplicate window
		{"marked", 1},        // ledger done, members not yet settled
		{"group-settled", 1}, // members settled, slot not yet written
	} {
		t.Run(tt.point, func(t *testing.T) {
			e := newStormEnvOn(t, newEnv(t))
			ids := e.gateway(5)
			dead := e.alerter("dead")
			e.all(dead, ids, 0, down, down)
			e.clk.Advance(groupWait)
			crashed := false
			dead.hook = func(p string) error {
				if p == tt.point && !crashed {
					crashed = true
					return fmt.Errorf("at %s: %w", p, notify.ErrCrash)
				}
				return nil
			}
			if err := dead.Sweep(e.ctx); !errors.Is(err, notify.ErrCrash) || !crashed {
				t.Fatalf("sweep: %v, want the injected crash", err)
			}
			e.clk.Advance(DefaultLease + time.Second)
			live := e.alerter("live")
			e.sweep(live)
			e.sweep(live)
			groups, plain := groupPayloads(t, e.grouped)
			if len(groups) != tt.sends || len(plain) != 0 {
				t.Fatalf("crash at %s: %d grouped and %d plain notifications, want %d and 0", tt.point, len(groups), len(plain), tt.sends)
			}
			for _, g := range groups {
				if g.Key != groups[0].Key || g.Count != 5 {
					t.Fatalf("crash at %s: %+v: a repeat must carry the same key and members", tt.point, groups)
				}
			}
			if n := e.pendingOutboxes(); n != 0 {
				t.Fatalf("crash at %s: %d outboxes still pending", tt.point, n)
			}
		})
	}
}

// TestTwoReplicasFormOneGroup: two alerters (other owners, one store)
// handle the storm's verdicts at once; the members still form one group,
// sent once.
func TestTwoReplicasFormOneGroup(t *testing.T) { testTwoReplicasFormOneGroup(t, newStormEnv(t)) }

func testTwoReplicasFormOneGroup(t *testing.T, e *stormEnv) {
	ids := e.gateway(20)
	a, b := e.alerter("a"), e.alerter("b")
	for _, id := range ids {
		e.states(id, 0, down, down)
	}
	done := make(chan []error)
	for _, r := range []*Alerter{a, b} {
		go func() { done <- e.pumpQuiet(r) }()
	}
	<-done
	<-done
	e.clk.Advance(DefaultLease + time.Second) // any redelivery due
	e.pump(a.Handle)
	e.sweep(a)
	e.sweep(b)
	e.sweep(a)
	groups, plain := groupPayloads(t, e.grouped)
	if len(groups) != 1 || len(plain) != 0 || groups[0].Count != 20 {
		t.Fatalf("%d groups (%+v) and %d plain, want one group of 20", len(groups), groups, len(plain))
	}
	if n := len(e.each.Requests()); n != 20 {
		t.Fatalf("the sink without grouping got %d opens, want 20", n)
	}
}

// pumpQuiet pumps without failing the test on handler errors (a held
// claim leaves a message for redelivery).
func (e *stormEnv) pumpQuiet(a *Alerter) []error {
	return e.pump(a.Handle)
}

func deliveryOutcome(t *testing.T, e *env, incidentID, kind, sink string) model.DeliveryOutcome {
	t.Helper()
	ds, err := e.st.Deliveries(e.ctx, incidentID)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range ds {
		if d.Kind == kind && d.Sink == sink {
			return d.Outcome
		}
	}
	return ""
}

func (e *env) ledgerDone(key string) bool {
	e.t.Helper()
	st, err := e.st.Claim(e.ctx, key, "probe", time.Minute)
	if err != nil {
		e.t.Fatal(err)
	}
	if st == store.ClaimAcquired {
		_ = e.st.Release(e.ctx, key, "probe")
	}
	return st == store.ClaimDone
}
