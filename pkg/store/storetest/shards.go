package storetest

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/clock"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/msg"
	"github.com/mcpmon/mcpmon/pkg/store"
)

// testOpenWindowsByShard: OpenWindowsIn lists exactly the open windows of
// the given shards' endpoints, in OpenWindows order and within its bound;
// the lists of a partition of the shards add up to OpenWindows; a decided
// window leaves its shard's list.
func testOpenWindowsByShard(t *testing.T, s store.Store, _ *clock.Fake) {
	ctx := t.Context()
	w0, w1 := Start, Start.Add(time.Minute)
	byShard := map[int][]string{}
	for i := range 40 {
		ep := fmt.Sprintf("ep-%02d", i)
		byShard[store.ShardOf(ep)] = append(byShard[store.ShardOf(ep)], ep)
		_, err := s.AddWindowResult(ctx, w0, result(ep, w0.Add(5*time.Second), "", msg.StatusUp))
		must(t, err)
		if i%2 == 0 {
			_, err = s.AddWindowResult(ctx, w1, result(ep, w1.Add(5*time.Second), "", msg.StatusUp))
			must(t, err)
		}
	}
	if len(byShard) < 10 {
		t.Fatalf("40 endpoints fell in %d shards; the case needs them spread", len(byShard))
	}
	all, err := s.OpenWindows(ctx, w1.Add(time.Minute))
	must(t, err)
	if len(all) != 60 {
		t.Fatalf("OpenWindows = %d windows, want 60", len(all))
	}
	in := func(shards []int, want []store.WindowRef) {
		t.Helper()
		got, err := s.OpenWindowsIn(ctx, w1.Add(time.Minute), shards)
		must(t, err)
		if got == nil || !sameRefs(got, want) {
			t.Fatalf("OpenWindowsIn(%v) = %+v, want %+v", shards, got, want)
		}
	}
	filter := func(refs []store.WindowRef, keep func(sh int) bool) []store.WindowRef {
		out := []store.WindowRef{}
		for _, r := range refs {
			if keep(store.ShardOf(r.EndpointID)) {
				out = append(out, r)
			}
		}
		return out
	}

	in(nil, []store.WindowRef{})
	in([]int{-1, store.ShardCount}, []store.WindowRef{})
	in(store.AllShards(), all)
	var even, odd []int
	for sh := range store.ShardCount {
		if sh%2 == 0 {
			even = append(even, sh)
		} else {
			odd = append(odd, sh)
		}
	}
	evens := filter(all, func(sh int) bool { return sh%2 == 0 })
	odds := filter(all, func(sh int) bool { return sh%2 == 1 })
	if len(evens) == 0 || len(odds) == 0 || len(evens)+len(odds) != len(all) {
		t.Fatalf("even shards %d + odd shards %d windows, want both non-empty and %d in all", len(evens), len(odds), len(all))
	}
	in(even, evens)
	in(odd, odds)
	// One shard, named twice: its endpoints' windows, once.
	one := store.ShardOf("ep-00")
	in([]int{one, one}, filter(all, func(sh int) bool { return sh == one }))

	// The bound applies per shard as it does to OpenWindows.
	got, err := s.OpenWindowsIn(ctx, w1, []int{one})
	must(t, err)
	for _, r := range got {
		if !r.Window.Equal(w0) {
			t.Fatalf("OpenWindowsIn(before %s) listed %+v", w1, r)
		}
	}

	// A verdict closes the window in its shard's list too.
	_, err = s.RecordVerdict(ctx, verdict("ep-00", w1, msg.StateUp))
	must(t, err)
	got, err = s.OpenWindowsIn(ctx, w1.Add(time.Minute), []int{one})
	must(t, err)
	for _, r := range got {
		if r.EndpointID == "ep-00" {
			t.Fatalf("decided window of ep-00 still listed in its shard: %+v", got)
		}
	}
}

func sameRefs(a, b []store.WindowRef) bool {
	return slices.EqualFunc(a, b, func(x, y store.WindowRef) bool {
		return x.EndpointID == y.EndpointID && x.Window.Equal(y.Window)
	})
}

// testEndpointsByShard: ListEndpointsIn lists exactly the endpoints of the
// given shards, ordered by ID; a shard's stamp moves on every create,
// update (a pause included) and delete of one of its endpoints, and on no
// write to another shard's endpoint.
func testEndpointsByShard(t *testing.T, s store.Store, _ *clock.Fake) {
	ctx := t.Context()
	byShard := map[int][]string{}
	var all []string
	for i := range 40 {
		id := fmt.Sprintf("ep-%02d", i)
		_, err := s.CreateEndpoint(ctx, model.Endpoint{ID: id, Name: id, URL: "https://" + id + ".example/mcp", Transport: "auto", Schedule: "@every 30s"})
		must(t, err)
		byShard[store.ShardOf(id)] = append(byShard[store.ShardOf(id)], id)
		all = append(all, id)
	}
	if len(byShard) < 10 {
		t.Fatalf("40 endpoints fell in %d shards; the case needs them spread", len(byShard))
	}
	in := func(shards []int, want []string) {
		t.Helper()
		eps, err := s.ListEndpointsIn(ctx, shards)
		must(t, err)
		got := []string{}
		for _, e := range eps {
			got = append(got, e.ID)
		}
		if eps == nil || !slices.Equal(got, want) {
			t.Fatalf("ListEndpointsIn(%v) = %v, want %v", shards, got, want)
		}
	}
	of := func(keep func(sh int) bool) []string {
		out := []string{}
		for _, id := range all { // all is in ID order
			if keep(store.ShardOf(id)) {
				out = append(out, id)
			}
		}
		return out
	}
	in(nil, []string{})
	in([]int{-1, store.ShardCount}, []string{})
	in(store.AllShards(), all)
	var even []int
	for sh := 0; sh < store.ShardCount; sh += 2 {
		even = append(even, sh)
	}
	in(even, of(func(sh int) bool { return sh%2 == 0 }))
	a, b := store.ShardOf("ep-00"), -1
	for sh := range byShard {
		if sh != a {
			b = sh
			break
		}
	}
	in([]int{a, a}, byShard[a])
	in([]int{b, a}, of(func(sh int) bool { return sh == a || sh == b }))

	stamps := func() (sa, sb uint64) {
		t.Helper()
		n, err := s.EndpointsStampsIn(ctx, []int{a, b, -1})
		must(t, err)
		if len(n) != 3 {
			t.Fatalf("EndpointsStampsIn of 3 shards = %v", n)
		}
		return n[0], n[1]
	}
	idA, idB := byShard[a][0], byShard[b][0]
	write := func(what string, moved, stood int, fn func()) {
		t.Helper()
		a0, b0 := stamps()
		fn()
		a1, b1 := stamps()
		got := map[int][2]uint64{a: {a0, a1}, b: {b0, b1}}
		if g := got[moved]; g[0] == g[1] {
			t.Fatalf("%s left the stamp of its shard %d at %d", what, moved, g[0])
		}
		if g := got[stood]; g[0] != g[1] {
			t.Fatalf("%s moved the stamp of shard %d (not its own) %d → %d", what, stood, g[0], g[1])
		}
	}
	update := func(id string, mod func(*model.Endpoint)) func() {
		return func() {
			e, err := s.GetEndpoint(ctx, id)
			must(t, err)
			mod(&e)
			_, err = s.UpdateEndpoint(ctx, e)
			must(t, err)
		}
	}
	write("an update in A", a, b, update(idA, func(e *model.Endpoint) { e.Name = "renamed" }))
	write("a pause in B", b, a, update(idB, func(e *model.Endpoint) { e.Paused = true }))
	write("a delete in A", a, b, func() { must(t, s.DeleteEndpoint(ctx, idA)) })
	newB := ""
	for i := 0; newB == ""; i++ {
		if id := fmt.Sprintf("new-%d", i); store.ShardOf(id) == b {
			newB = id
		}
	}
	write("a create in B", b, a, func() {
		_, err := s.CreateEndpoint(ctx, model.Endpoint{ID: newB, Name: newB, URL: "https://n.example/mcp", Transport: "auto", Schedule: "@every 30s"})
		must(t, err)
	})
	in([]int{a}, byShard[a][1:])
	a0, b0 := stamps()
	if _, err := s.CreateEndpoint(ctx, model.Endpoint{ID: newB, Name: newB, URL: "https://n.example/mcp", Transport: "auto", Schedule: "@every 30s"}); err == nil {
		t.Fatal("a second create of one ID succeeded")
	}
	if a1, b1 := stamps(); a1 != a0 || b1 != b0 {
		t.Fatalf("a refused create moved the stamps (%d, %d) → (%d, %d)", a0, b0, a1, b1)
	}
}
