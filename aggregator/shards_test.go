package aggregator

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/membership"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/msg"
	"github.com/mcpmon/mcpmon/pkg/store"
)

// listingStore records how the aggregator lists open windows.
type listingStore struct {
	store.Store
	mu    sync.Mutex
	all   int           // OpenWindows calls
	calls []listingCall // OpenWindowsIn calls
}

type listingCall struct {
	before time.Time
	shards []int
}

func (l *listingStore) OpenWindows(ctx context.Context, before time.Time) ([]store.WindowRef, error) {
	l.mu.Lock()
	l.all++
	l.mu.Unlock()
	return l.Store.OpenWindows(ctx, before)
}

func (l *listingStore) OpenWindowsIn(ctx context.Context, before time.Time, shards []int) ([]store.WindowRef, error) {
	l.mu.Lock()
	l.calls = append(l.calls, listingCall{before, slices.Clone(shards)})
	l.mu.Unlock()
	return l.Store.OpenWindowsIn(ctx, before, shards)
}

func (l *listingStore) take() (all int, calls []listingCall) {
	l.mu.Lock()
	defer l.mu.Unlock()
	all, calls = l.all, l.calls
	l.all, l.calls = 0, nil
	return all, calls
}

// TestReplicaListsOnlyItsShards: with a view of two live replicas, each
// tick lists the windows of the replica's own shards up to the decision
// bound, and the other shards' only up to the takeover bound — never the
// whole deployment. The two replicas' shards are disjoint and cover every
// shard, and together they decide every endpoint's window exactly once.
func TestReplicaListsOnlyItsShards(t *testing.T) {
	e := newAenv(t)
	ctx := e.ctx
	ls := &listingStore{Store: e.st}
	var eps []string
	for i := range 16 {
		id := fmt.Sprintf("s%02d", i)
		eps = append(eps, id)
		e.create(id, "@every 30s", func(ep *model.Endpoint) { ep.Timeout = time.Second })
	}
	type rep struct {
		id  string
		mem *membership.Membership
		agg *Aggregator
		pub *recorder
	}
	newRep := func(id string) *rep {
		mem, err := membership.New(membership.Options{Store: ls, Kind: "aggregator-heartbeat", ID: id, Interval: 10 * time.Second, TTL: 30 * time.Second, Clock: e.clk})
		if err != nil {
			t.Fatal(err)
		}
		r := &rep{id: id, mem: mem, pub: &recorder{next: e.pub}}
		r.agg, err = New(Options{
			Store: ls, Publisher: r.pub, Window: time.Minute, Grace: 10 * time.Second, TickInterval: 5 * time.Second,
			Members: mem, Replica: id, MemberTTL: mem.TTL(), Clock: e.clk, Metrics: NewMetrics(nil, nil),
		})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	a, b := newRep("agg-a"), newRep("agg-b")
	for _, id := range eps {
		r := res("", msg.StatusUp, "ok", 5*time.Second)
		r.EndpointID, r.ProbeRunID = id, msg.ProbeRunID(id, r.Slot)
		if _, err := e.st.AddWindowResult(ctx, w0, r); err != nil {
			t.Fatal(err)
		}
	}
	e.clk.Set(w0.Add(time.Minute + 12*time.Second))
	for _, r := range []*rep{a, b} {
		if err := r.mem.Beat(ctx); err != nil {
			t.Fatal(err)
		}
	}
	members := []string{a.id, b.id}
	decided := map[string]string{}
	var owned [store.ShardCount]int
	for _, r := range []*rep{a, b} {
		ls.take()
		if err := r.agg.Tick(ctx); err != nil {
			t.Fatal(err)
		}
		all, calls := ls.take()
		if all != 0 {
			t.Fatalf("%s listed every window %d times", r.id, all)
		}
		// Its own shards to the decision bound, the others' to the
		// takeover bound, then (no_data) the others' up to the window.
		if len(calls) < 2 {
			t.Fatalf("%s listed %d times, want its shards and the others' overdue ones: %+v", r.id, len(calls), calls)
		}
		mine, others := calls[0], calls[1]
		if !others.before.Before(mine.before) {
			t.Fatalf("%s listed the other shards up to %s, not before its own bound %s", r.id, others.before, mine.before)
		}
		for _, sh := range mine.shards {
			if o := Owner(members, shardKey(sh)); o != r.id {
				t.Fatalf("%s listed shard %d as its own; its owner is %s", r.id, sh, o)
			}
			owned[sh]++
		}
		if len(mine.shards)+len(others.shards) != store.ShardCount || len(mine.shards) == 0 {
			t.Fatalf("%s: %d own + %d other shards, want a non-empty share of %d", r.id, len(mine.shards), len(others.shards), store.ShardCount)
		}
		for id := range r.pub.take() {
			if prev, dup := decided[id]; dup {
				t.Fatalf("%s decided by %s and %s", id, prev, r.id)
			}
			if o := OwnerOf(members, id); o != r.id {
				t.Fatalf("%s decided %s, owned by %s", r.id, id, o)
			}
			decided[id] = r.id
		}
	}
	for sh, n := range owned {
		if n != 1 {
			t.Fatalf("shard %d listed as own by %d replicas, want 1", sh, n)
		}
	}
	if len(decided) != len(eps) {
		t.Fatalf("decided %d of %d endpoints: %v", len(decided), len(eps), decided)
	}
}

// TestShardOwnersSplitEveryShardOnce: each shard has exactly one owner
// among the members, every member owns a share, and no share is more than
// half again its fair part (128 shards are coarse: the spread is wider
// than over endpoints).
func TestShardOwnersSplitEveryShardOnce(t *testing.T) {
	for _, n := range []int{1, 2, 3, 4, 8} {
		t.Run(fmt.Sprint(n, " members"), func(t *testing.T) {
			var members []string
			for i := range n {
				members = append(members, fmt.Sprintf("ip-10-0-1-%d-%d", i, 4000+i))
			}
			count := map[string]int{}
			for _, m := range members {
				mine, others := newOwnership(m, members).shards()
				if len(mine)+len(others) != store.ShardCount {
					t.Fatalf("%s: %d + %d shards", m, len(mine), len(others))
				}
				count[m] = len(mine)
			}
			total, fair := 0, float64(store.ShardCount)/float64(n)
			for _, m := range members {
				total += count[m]
				if c := float64(count[m]); c == 0 || c > 1.5*fair {
					t.Errorf("%s owns %d shards, want about %.0f (%v)", m, count[m], fair, count)
				}
			}
			if total != store.ShardCount {
				t.Fatalf("shards owned %d times in all, want %d (%v)", total, store.ShardCount, count)
			}
		})
	}
}
