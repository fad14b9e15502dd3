package aggregator

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/msg"
	"github.com/mcpmon/mcpmon/pkg/store"
)

// shardWorld is 24 endpoints with a 1s timeout (no_data due at a window's
// end + grace + 1s) on a counting store: the even ones report in every
// window reported, the odd ones are silent.
type shardWorld struct {
	e   *aenv
	cs  *countingStore
	eps []string
}

func newShardWorld(t *testing.T) *shardWorld {
	e, cs := newCountingEnv(t)
	w := &shardWorld{e: e, cs: cs}
	for i := range 24 {
		id := fmt.Sprintf("n%02d", i)
		w.eps = append(w.eps, id)
		e.create(id, "@every 30s", func(ep *model.Endpoint) { ep.Timeout = time.Second })
	}
	return w
}

func (w *shardWorld) report(win time.Time) {
	w.e.t.Helper()
	for i, id := range w.eps {
		if i%2 == 1 {
			continue
		}
		r := res("", msg.StatusUp, "ok", win.Sub(w0))
		r.EndpointID, r.ProbeRunID = id, msg.ProbeRunID(id, r.Slot)
		if _, err := w.e.st.AddWindowResult(w.e.ctx, win, r); err != nil {
			w.e.t.Fatal(err)
		}
	}
}

// ownedBy groups the endpoints by the member that owns them.
func (w *shardWorld) ownedBy(members []string) map[string][]string {
	out := map[string][]string{}
	for _, id := range w.eps {
		out[OwnerOf(members, id)] = append(out[OwnerOf(members, id)], id)
	}
	return out
}

func (w *shardWorld) wantState(id string) msg.State {
	if slices.Index(w.eps, id)%2 == 0 {
		return msg.StateUp
	}
	return msg.StateNoData
}

// checkListing: exactly one no_data listing since the last take, of the
// shards in want, returning only endpoints of those shards.
func (w *shardWorld) checkListing(who string, want []int) {
	w.e.t.Helper()
	shards, listed := w.cs.takeListings()
	if len(shards) != 1 {
		w.e.t.Fatalf("%s: %d endpoint listings, want 1 (%v)", who, len(shards), shards)
	}
	got := slices.Sorted(slices.Values(shards[0]))
	if !slices.Equal(got, want) {
		w.e.t.Fatalf("%s listed the endpoints of shards %v, want %v", who, got, want)
	}
	for _, id := range listed[0] {
		if !slices.Contains(want, store.ShardOf(id)) {
			w.e.t.Fatalf("%s's listing returned %s of shard %d", who, id, store.ShardOf(id))
		}
	}
}

// checkVerdicts: got holds exactly the windows win of the endpoints in
// want, each in its expected state.
func (w *shardWorld) checkVerdicts(who string, got map[string]msg.Verdict, want []string, win time.Time) {
	w.e.t.Helper()
	ids := slices.Sorted(func(yield func(string) bool) {
		for id := range got {
			if !yield(id) {
				return
			}
		}
	})
	if !slices.Equal(ids, slices.Sorted(slices.Values(want))) {
		w.e.t.Fatalf("%s published for %v, want exactly %v", who, ids, want)
	}
	for id, v := range got {
		if !v.Window.Equal(win) || v.State != w.wantState(id) {
			w.e.t.Fatalf("%s: %s verdict %s for %s, want %s for %s", who, id, v.State, v.Window, w.wantState(id), win)
		}
	}
}

// TestNoDataReplicasListOnlyTheirShards: with a view of two live replicas,
// each no_data pass lists the endpoints of the replica's own shards only,
// and together the two decide every window once: each silent endpoint's
// no_data by its owner alone. In the next window, no endpoint having
// changed, neither lists anything and both still decide.
func TestNoDataReplicasListOnlyTheirShards(t *testing.T) {
	w := newShardWorld(t)
	e := w.e
	a, b := e.newReplica("agg-a"), e.newReplica("agg-b")
	members := []string{a.id, b.id}
	ownedBy := w.ownedBy(members)
	for _, r := range []*replica{a, b} {
		n := 0
		for _, id := range ownedBy[r.id] {
			if w.wantState(id) == msg.StateNoData {
				n++
			}
		}
		if n == 0 {
			t.Fatalf("%s owns no silent endpoint (%v): the test would not test its no_data", r.id, ownedBy)
		}
	}
	w.cs.takeListings()

	for i, win := range []time.Time{w0, w0.Add(time.Minute)} {
		w.report(win)
		e.clk.Set(win.Add(time.Minute + 12*time.Second))
		_ = b.mem.Beat(e.ctx) // both beat before either lists
		for _, r := range []*replica{a, b} {
			r.beatAndTick(t, e.ctx)
			mine, _ := newOwnership(r.id, members).shards()
			if i == 0 {
				w.checkListing(r.id, mine)
			} else if shards, _ := w.cs.takeListings(); len(shards) != 0 {
				t.Fatalf("window %d: %s listed shards %v with no endpoint changed, want none", i, r.id, shards)
			}
			w.checkVerdicts(fmt.Sprintf("window %d, %s", i, r.id), r.pub.take(), ownedBy[r.id], win)
			if got := testutil.ToFloat64(r.agg.m.Takeovers); got != 0 {
				t.Fatalf("%s took over %v windows, want none while both live", r.id, got)
			}
		}
	}
}

// TestNoDataSurvivorListsADeadReplicasShards: b dies after deciding a
// window. Once its heartbeat has expired a owns every shard, and at the
// next window it lists the endpoints of b's former shards — though none
// of them changed, so their stamps stood — and decides their no_data as
// its own, not as takeovers.
func TestNoDataSurvivorListsADeadReplicasShards(t *testing.T) {
	w := newShardWorld(t)
	e := w.e
	a, b := e.newReplica("agg-a"), e.newReplica("agg-b")
	members := []string{a.id, b.id}
	ownedBy := w.ownedBy(members)
	w.cs.takeListings()

	// Window 0: both live, each decides its own.
	w.report(w0)
	e.clk.Set(w0.Add(time.Minute + 12*time.Second))
	_ = b.mem.Beat(e.ctx)
	a.beatAndTick(t, e.ctx)
	b.beatAndTick(t, e.ctx)
	w.checkVerdicts("window 0, a", a.pub.take(), ownedBy[a.id], w0)
	w.checkVerdicts("window 0, b", b.pub.take(), ownedBy[b.id], w0)
	w.cs.takeListings()

	// b is killed: its last heartbeat (1m12s) expires at 1m42s, before
	// window 1 is listed at 2m12s.
	w1 := w0.Add(time.Minute)
	w.report(w1)
	e.clk.Set(w1.Add(time.Minute + 12*time.Second))
	a.beatAndTick(t, e.ctx)
	if live, _ := a.mem.Live(e.ctx); slices.Contains(live, b.id) {
		t.Fatalf("live %v, want b expired", live)
	}
	_, theirs := newOwnership(a.id, members).shards()
	w.checkListing("a, b dead", theirs)
	w.checkVerdicts("window 1, a alone", a.pub.take(), w.eps, w1)
	if got := testutil.ToFloat64(a.agg.m.Takeovers); got != 0 {
		t.Fatalf("a took over %v windows, want none: b's shards are its own now", got)
	}
}
