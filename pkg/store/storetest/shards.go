package storetest

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/clock"
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
