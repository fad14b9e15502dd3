package membership

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/clock"
	"github.com/mcpmon/mcpmon/pkg/store"
	"github.com/mcpmon/mcpmon/pkg/store/bolt"
	"github.com/mcpmon/mcpmon/pkg/store/redis"
	"github.com/mcpmon/mcpmon/pkg/store/redis/redistest"
)

var (
	_ Store = (*bolt.Store)(nil)
	_ Store = (*redis.Store)(nil)
)

var t0 = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

func TestLiveAt(t *testing.T) {
	const ttl = 30 * time.Second
	beats := []Beat{
		{ID: "b", LastSeen: t0},
		{ID: "a", LastSeen: t0.Add(-ttl)},               // exactly the TTL old: live
		{ID: "c", LastSeen: t0.Add(-ttl - time.Second)}, // past it
		{ID: "b", LastSeen: t0.Add(-time.Hour)},         // a stale duplicate
	}
	tests := []struct {
		name string
		at   time.Time
		want []string
	}{
		{"now", t0, []string{"a", "b"}},
		{"earlier", t0.Add(-time.Minute), []string{"a", "b", "c"}},
		{"nobody since", t0.Add(2 * ttl), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := LiveAt(beats, tt.at, ttl); !slices.Equal(got, tt.want) {
				t.Errorf("LiveAt = %v, want %v", got, tt.want)
			}
		})
	}
}

func openStores(t *testing.T, clk clock.Clock) map[string]Store {
	bs, err := bolt.Open(filepath.Join(t.TempDir(), "s.db"), bolt.Options{Clock: clk, SweepInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bs.Close() })
	rs := redistest.Open(t, redis.Options{Clock: clk})
	return map[string]Store{"bolt": bs, "redis": rs}
}

// TestMembersComeAndGo: on a real store, two replicas see each other; a
// killed one (no more beats) drops out after the TTL, a clean one at the
// next listing; day-old heartbeats are deleted; and the view is listed at
// most once per interval.
func TestMembersComeAndGo(t *testing.T) {
	clk := clock.NewFake(t0)
	for name, st := range openStores(t, clk) {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			cs := &countingStore{Store: st}
			newM := func(id string) *Membership {
				m, err := New(Options{Store: cs, Kind: "test-heartbeat", ID: id, Interval: 10 * time.Second, Clock: clk})
				if err != nil {
					t.Fatal(err)
				}
				return m
			}
			a, b, c := newM("a"), newM("b"), newM("c")
			if err := st.PutObject(ctx, "test-heartbeat", "gone", []byte(`{"id":"gone","lastSeen":"2026-11-29T12:00:00Z"}`)); err != nil {
				t.Fatal(err)
			}
			for _, m := range []*Membership{a, b, c} {
				if err := m.Beat(ctx); err != nil {
					t.Fatal(err)
				}
			}
			if live, ok := a.Live(ctx); !ok || !slices.Equal(live, []string{"a", "b", "c"}) {
				t.Fatalf("live = %v %v, want [a b c]", live, ok)
			}
			if docs, _ := st.ListObjects(ctx, "test-heartbeat"); docs["gone"] != nil {
				t.Fatal("a day-old heartbeat was kept")
			}
			// Within the interval the view is not listed again.
			n := cs.lists
			clk.Advance(5 * time.Second)
			a.Live(ctx)
			if cs.lists != n {
				t.Fatalf("listed %d times within one interval, want once", cs.lists-n+1)
			}
			// c leaves cleanly; b is killed (stops beating); a keeps beating.
			if err := c.Leave(ctx); err != nil {
				t.Fatal(err)
			}
			clk.Advance(5 * time.Second)
			_ = a.Beat(ctx)
			if live, _ := a.Live(ctx); !slices.Equal(live, []string{"a", "b"}) {
				t.Fatalf("live after c left = %v, want [a b]", live)
			}
			for range 3 {
				clk.Advance(10 * time.Second)
				_ = a.Beat(ctx)
			}
			if live, _ := a.Live(ctx); !slices.Equal(live, []string{"a"}) {
				t.Fatalf("live a TTL after b was killed = %v, want [a]", live)
			}
		})
	}
}

// TestViewUnknownUntilListed: a reader whose store never answered cannot
// tell; one that listed once keeps judging that listing against the clock,
// so members age out even while the store is failing.
func TestViewUnknownUntilListed(t *testing.T) {
	clk := clock.NewFake(t0)
	st := openStores(t, clk)["bolt"]
	fs := &countingStore{Store: st, fail: true}
	m, err := New(Options{Store: fs, Kind: "k", ID: "a", Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := m.Live(t.Context()); ok {
		t.Fatal("no listing succeeded, yet the view claims to be known")
	}
	fs.fail = false
	_ = m.Beat(t.Context())
	if live, ok := m.Live(t.Context()); !ok || !slices.Equal(live, []string{"a"}) {
		t.Fatalf("live = %v %v, want [a]", live, ok)
	}
	fs.fail = true
	clk.Advance(m.TTL() + m.opts.Interval)
	if live, ok := m.Live(t.Context()); !ok || len(live) != 0 {
		t.Fatalf("live after the TTL with the store failing = %v %v, want none (known)", live, ok)
	}
}

// TestRunLeavesOnStop: Run beats at once and deletes the heartbeat when
// its context ends.
func TestRunLeavesOnStop(t *testing.T) {
	clk := clock.NewFake(t0)
	st := openStores(t, clk)["bolt"]
	m, err := New(Options{Store: st, Kind: "k", ID: "a", Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error)
	wrote := &countingStore{Store: st, put: make(chan struct{}, 1)}
	m.opts.Store = wrote
	go func() { done <- m.Run(ctx) }()
	<-wrote.put
	if docs, _ := st.ListObjects(t.Context(), "k"); docs["a"] == nil {
		t.Fatal("Run wrote no heartbeat")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if docs, _ := st.ListObjects(t.Context(), "k"); docs["a"] != nil {
		t.Fatal("the heartbeat outlived a clean stop")
	}
}

// countingStore counts listings and can fail them, as a store outage.
type countingStore struct {
	Store
	mu    sync.Mutex
	lists int
	fail  bool
	put   chan struct{}
}

func (s *countingStore) ListObjects(ctx context.Context, kind string) (map[string][]byte, error) {
	s.mu.Lock()
	s.lists++
	fail := s.fail
	s.mu.Unlock()
	if fail {
		return nil, fmt.Errorf("list: %w", store.ErrUnavailable)
	}
	return s.Store.ListObjects(ctx, kind)
}

func (s *countingStore) PutObject(ctx context.Context, kind, id string, doc []byte) error {
	err := s.Store.PutObject(ctx, kind, id, doc)
	if s.put != nil {
		select {
		case s.put <- struct{}{}:
		default:
		}
	}
	return err
}
