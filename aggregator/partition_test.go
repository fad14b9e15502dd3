package aggregator

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/mcpmon/mcpmon/pkg/membership"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/msg"
	"github.com/mcpmon/mcpmon/pkg/queue"
)

// recorder publishes through the test world's sender and remembers what
// this replica published, so a test can tell which replica decided what
// (the queue itself collapses the copies).
type recorder struct {
	next Publisher
	mu   sync.Mutex
	vs   []msg.Verdict
}

func (r *recorder) Publish(ctx context.Context, in queue.SendInput) (string, error) {
	var v msg.Verdict
	if err := msg.Decode(in.Body, &v); err != nil {
		return "", err
	}
	r.mu.Lock()
	r.vs = append(r.vs, v)
	r.mu.Unlock()
	return r.next.Publish(ctx, in)
}

// take returns what was published since the last take, by endpoint.
func (r *recorder) take() map[string]msg.Verdict {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]msg.Verdict{}
	for _, v := range r.vs {
		if _, dup := out[v.EndpointID]; dup {
			panic(fmt.Sprintf("%s published twice by one replica", v.EndpointID))
		}
		out[v.EndpointID] = v
	}
	r.vs = nil
	return out
}

// replica is one aggregator replica of a partitioned pair: its membership
// on the shared store, its aggregator and what it published.
type replica struct {
	id  string
	mem *membership.Membership
	agg *Aggregator
	pub *recorder
}

func (e *aenv) newReplica(id string) *replica {
	e.t.Helper()
	mem, err := membership.New(membership.Options{Store: e.st, Kind: "aggregator-heartbeat", ID: id, Interval: 10 * time.Second, TTL: 30 * time.Second, Clock: e.clk})
	if err != nil {
		e.t.Fatal(err)
	}
	r := &replica{id: id, mem: mem, pub: &recorder{next: e.pub}}
	r.agg, err = New(Options{
		Store: e.st, Publisher: r.pub, Window: time.Minute, Grace: 10 * time.Second, TickInterval: 5 * time.Second,
		Members: mem, Replica: id, MemberTTL: mem.TTL(), Clock: e.clk, Metrics: NewMetrics(nil, nil),
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return r
}

// beatAndTick is one Run iteration at the current time: heartbeat, tick.
func (r *replica) beatAndTick(t *testing.T, ctx context.Context) {
	t.Helper()
	if err := r.mem.Beat(ctx); err != nil {
		t.Fatal(err)
	}
	if err := r.agg.Tick(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestReplicasSplitWindowsAndTakeOverAKilledOne runs two aggregator
// replicas on a real Redis store with one clock. Even endpoints report
// every window, odd ones are silent (no_data). While both live, each
// decides exactly the endpoints it owns — disjoint, together all, each
// window published once. Then b is killed after its heartbeat but before
// deciding: a decides b's open windows once they are the takeover margin
// past their decision time, while b still counts as live. b's silent
// endpoints get no no_data for that window: a lists only its own shards'
// endpoints, and b's become its own when b's heartbeat expires. From the
// next window on a owns everything and decides at the normal time, no_data
// of b's former shards included.
func TestReplicasSplitWindowsAndTakeOverAKilledOne(t *testing.T) {
	e := newRedisAenv(t)
	ctx := e.ctx
	if err := e.st.DeleteEndpoint(ctx, "ep"); err != nil {
		t.Fatal(err)
	}
	var eps []string
	for i := range 24 {
		id := fmt.Sprintf("p%02d", i)
		eps = append(eps, id)
		// A 1s timeout: a window is decided at end + grace (+1s when a
		// slot falls in its last second), no_data at end + grace + 1s.
		e.create(id, "@every 30s", func(ep *model.Endpoint) { ep.Timeout = time.Second })
	}
	report := func(w time.Time) {
		for i, id := range eps {
			if i%2 == 1 {
				continue // silent: no_data
			}
			r := res("", msg.StatusUp, "ok", w.Sub(w0))
			r.EndpointID, r.ProbeRunID = id, msg.ProbeRunID(id, r.Slot)
			if _, err := e.st.AddWindowResult(ctx, w, r); err != nil {
				t.Fatal(err)
			}
		}
	}
	wantState := func(id string) msg.State {
		if slices.Index(eps, id)%2 == 0 {
			return msg.StateUp
		}
		return msg.StateNoData
	}
	a, b := e.newReplica("agg-a"), e.newReplica("agg-b")
	ownedBy := map[string][]string{}
	for _, id := range eps {
		o := OwnerOf([]string{a.id, b.id}, id)
		ownedBy[o] = append(ownedBy[o], id)
	}
	if len(ownedBy[a.id]) < 4 || len(ownedBy[b.id]) < 4 {
		t.Fatalf("ownership %v too lopsided for this test", ownedBy)
	}
	check := func(phase string, got map[string]msg.Verdict, want []string, w time.Time) {
		t.Helper()
		if ids := slices.Sorted(func(yield func(string) bool) {
			for id := range got {
				if !yield(id) {
					return
				}
			}
		}); !slices.Equal(ids, want) {
			t.Fatalf("%s: published for %v, want exactly %v", phase, ids, want)
		}
		for id, v := range got {
			if !v.Window.Equal(w) || v.State != wantState(id) {
				t.Fatalf("%s: %s verdict %s for %s, want %s for %s", phase, id, v.State, v.Window, wantState(id), w)
			}
		}
	}

	// Window 1: both live. Decided and no_data due by 1m11s.
	w1 := w0
	report(w1)
	e.clk.Set(w1.Add(time.Minute + 12*time.Second))
	_ = b.mem.Beat(ctx) // both beat before either lists
	a.beatAndTick(t, ctx)
	b.beatAndTick(t, ctx)
	check("both live, a", a.pub.take(), ownedBy[a.id], w1)
	check("both live, b", b.pub.take(), ownedBy[b.id], w1)
	if got := testutil.ToFloat64(a.agg.m.Members); got != 2 {
		t.Fatalf("a's members gauge = %v, want 2", got)
	}

	// Window 2: b beats at 2m25s, past the window's decision time, and is
	// killed before deciding anything: it counts as live until 2m55s.
	w2 := w0.Add(time.Minute)
	report(w2)
	e.clk.Set(w2.Add(time.Minute + 12*time.Second))
	_ = b.mem.Beat(ctx) // alive, but it will not decide
	a.beatAndTick(t, ctx)
	check("b hung, a's own", a.pub.take(), ownedBy[a.id], w2)
	e.clk.Set(w2.Add(time.Minute + 25*time.Second))
	_ = b.mem.Beat(ctx) // b's last sign of life
	a.beatAndTick(t, ctx)
	check("b dead, within the takeover margin", a.pub.take(), nil, w2)
	// Takeover: decision time (≤ 2m11s) + TTL 30s + 2 ticks of 5s ≤ 2m51s;
	// b's heartbeat (2m25s) is 27s old, so b still owns its endpoints.
	e.clk.Set(w2.Add(time.Minute + 52*time.Second))
	a.beatAndTick(t, ctx)
	if live, _ := a.mem.Live(ctx); !slices.Contains(live, b.id) {
		t.Fatalf("live %v at the takeover, want b still counted (the test would not test takeover)", live)
	}
	var bReporting []string
	for _, id := range ownedBy[b.id] {
		if wantState(id) != msg.StateNoData {
			bReporting = append(bReporting, id)
		}
	}
	if len(bReporting) == len(ownedBy[b.id]) {
		t.Fatalf("b owns no silent endpoint (%v): the test would not test its no_data", ownedBy[b.id])
	}
	check("takeover by a", a.pub.take(), bReporting, w2)
	if got, want := testutil.ToFloat64(a.agg.m.Takeovers), float64(len(bReporting)); got != want {
		t.Fatalf("a's takeovers = %v, want %v (b's open windows)", got, want)
	}

	// Window 3: b's heartbeat is past the TTL: a owns everything and decides
	// at the normal time, no takeover.
	w3 := w0.Add(2 * time.Minute)
	report(w3)
	e.clk.Set(w3.Add(time.Minute + 12*time.Second))
	a.beatAndTick(t, ctx)
	check("b gone, a owns all", a.pub.take(), eps, w3)
	if got := testutil.ToFloat64(a.agg.m.Members); got != 1 {
		t.Fatalf("a's members gauge = %v, want 1", got)
	}
	if got, want := testutil.ToFloat64(a.agg.m.Takeovers), float64(len(bReporting)); got != want {
		t.Fatalf("a's takeovers = %v after b expired, want still %v", got, want)
	}

	// The store: every endpoint has windows 1, 2 and 3, but b's silent
	// ones, which have 1 and 3.
	for _, id := range eps {
		hist, err := e.st.ListVerdicts(ctx, id, 10)
		if err != nil {
			t.Fatal(err)
		}
		var ws []time.Time
		for _, v := range hist {
			ws = append(ws, v.Window)
		}
		want := []time.Time{w3, w2, w1}
		if OwnerOf([]string{a.id, b.id}, id) == b.id && wantState(id) == msg.StateNoData {
			want = []time.Time{w3, w1}
		}
		if !slices.EqualFunc(ws, want, time.Time.Equal) {
			t.Fatalf("%s history windows %v, want %v", id, ws, want)
		}
	}
}

// TestNoViewOwnsEverything: a replica whose membership cannot tell (no
// listing ever succeeded) decides every window, as before partitioning,
// rather than going silent.
func TestNoViewOwnsEverything(t *testing.T) {
	e := newAenv(t)
	e.sendResult(res("", msg.StatusUp, "ok", 0))
	e.consume()
	a, err := New(Options{Store: e.st, Publisher: e.pub, Window: time.Minute, Grace: 10 * time.Second, Clock: e.clk,
		Members: blindMembers{}, Replica: "agg-a", Metrics: NewMetrics(nil, nil)})
	if err != nil {
		t.Fatal(err)
	}
	e.tickAt(w0.Add(2*time.Minute), a)
	if vs := e.published(); len(vs) != 1 || vs[0].State != msg.StateUp {
		t.Fatalf("published %+v, want the up verdict", vs)
	}
	if got := testutil.ToFloat64(a.m.Takeovers); got != 0 {
		t.Fatalf("takeovers = %v, want 0: without a view every endpoint is its own", got)
	}
}

type blindMembers struct{}

func (blindMembers) Live(context.Context) ([]string, bool) { return nil, false }
