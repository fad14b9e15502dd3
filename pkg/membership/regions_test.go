package membership

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/clock"
)

func TestRegionsLiveAt(t *testing.T) {
	const ttl = 30 * time.Second
	beats := []Beat{
		{ID: "a", Region: "eu", LastSeen: t0},
		{ID: "b", Region: "eu", LastSeen: t0.Add(-time.Hour)},
		{ID: "c", Region: "us", LastSeen: t0.Add(-ttl)},               // exactly the TTL old: live
		{ID: "d", Region: "ap", LastSeen: t0.Add(-ttl - time.Second)}, // past it
		{ID: "e", LastSeen: t0},                                       // a member of no region
	}
	tests := []struct {
		name string
		at   time.Time
		want []string
	}{
		{"now", t0, []string{"eu", "us"}},
		{"an older window: ap was live then", t0.Add(-time.Minute), []string{"ap", "eu", "us"}},
		{"nobody since", t0.Add(2 * ttl), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := RegionsLiveAt(beats, tt.at, ttl); !slices.Equal(got, tt.want) {
				t.Errorf("RegionsLiveAt = %v, want %v", got, tt.want)
			}
		})
	}
}

// gauge records what Regions reported as live now.
type gauge struct{ sets [][]string }

func (g *gauge) SetLive(regions []string) { g.sets = append(g.sets, regions) }

// TestRegionsNarrowDueRegions: on a real store, probers' heartbeats are
// read back as the live regions; a region whose probers stopped beating
// drops out after the TTL; day-old heartbeats are deleted; the store is
// listed at most once per interval, and each listing sets the gauge; with
// no heartbeat at all the reader says it cannot tell.
func TestRegionsNarrowDueRegions(t *testing.T) {
	clk := clock.NewFake(t0)
	for name, st := range openStores(t, clk) {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			cs := &countingStore{Store: st}
			g := &gauge{}
			r, err := NewRegions(Options{Store: cs, Kind: "prober-heartbeat", Clock: clk}, g)
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := r.LiveAt(ctx, clk.Now()); ok {
				t.Fatal("no heartbeat written, yet the reader claims to know the live set")
			}
			prober := func(id, region string) *Membership {
				m, err := New(Options{Store: st, Kind: "prober-heartbeat", ID: id, Region: region, Clock: clk})
				if err != nil {
					t.Fatal(err)
				}
				return m
			}
			eu, us := prober("a", "eu"), prober("b", "us")
			_ = eu.Beat(ctx)
			_ = us.Beat(ctx)
			if err := st.PutObject(ctx, "prober-heartbeat", "ap|gone", []byte(`{"id":"gone","region":"ap","lastSeen":"2026-11-29T12:00:00Z"}`)); err != nil {
				t.Fatal(err)
			}
			clk.Advance(DefaultInterval)
			live, ok := r.LiveAt(ctx, clk.Now())
			if !ok || !slices.Equal(live, []string{"eu", "us"}) {
				t.Fatalf("live = %v %v, want [eu us]", live, ok)
			}
			if docs, _ := st.ListObjects(ctx, "prober-heartbeat"); docs["ap|gone"] != nil {
				t.Fatal("a day-old heartbeat was kept")
			}
			if got := g.sets[len(g.sets)-1]; !slices.Equal(got, []string{"eu", "us"}) {
				t.Fatalf("gauge set to %v, want [eu us]", got)
			}
			n, sets := cs.lists, len(g.sets)
			clk.Advance(DefaultInterval / 2)
			r.LiveAt(ctx, clk.Now())
			if cs.lists != n || len(g.sets) != sets {
				t.Fatalf("listed %d more times within one interval, gauge set %d more; want none", cs.lists-n, len(g.sets)-sets)
			}
			// eu keeps beating; us stops.
			clk.Advance(3 * DefaultInterval)
			_ = eu.Beat(ctx)
			live, ok = r.LiveAt(ctx, clk.Now())
			if !ok || !slices.Equal(live, []string{"eu"}) {
				t.Fatalf("live after us stopped = %v %v, want [eu]", live, ok)
			}
			if got := g.sets[len(g.sets)-1]; !slices.Equal(got, []string{"eu"}) {
				t.Fatalf("gauge set to %v, want [eu]", got)
			}
		})
	}
}

// TestRegionsReadTheOldProberFormat is the rolling upgrade: probers of the
// previous release still write {region, replica, lastSeen} under
// region|replica while upgraded ones write membership beats; the reader
// counts both, and a prober of the previous release reading what an
// upgraded one wrote finds its region and time where it looks.
func TestRegionsReadTheOldProberFormat(t *testing.T) {
	clk := clock.NewFake(t0)
	for name, st := range openStores(t, clk) {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			old := func(region, replica string, at time.Time) {
				// The exact bytes the previous release's prober wrote.
				doc, _ := json.Marshal(struct {
					Region   string    `json:"region"`
					Replica  string    `json:"replica"`
					LastSeen time.Time `json:"lastSeen"`
				}{region, replica, at})
				if err := st.PutObject(ctx, "prober-heartbeat", region+"|"+replica, doc); err != nil {
					t.Fatal(err)
				}
			}
			old("eu", "old-1", clk.Now())
			old("ap", "", clk.Now()) // a prober started without a replica ID
			old("sa", "old-2", clk.Now().Add(-time.Hour))
			us, err := New(Options{Store: st, Kind: "prober-heartbeat", ID: "new-1", Region: "us", Clock: clk})
			if err != nil {
				t.Fatal(err)
			}
			if err := us.Beat(ctx); err != nil {
				t.Fatal(err)
			}
			r, err := NewRegions(Options{Store: st, Kind: "prober-heartbeat", Clock: clk}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if live, ok := r.LiveAt(ctx, clk.Now()); !ok || !slices.Equal(live, []string{"ap", "eu", "us"}) {
				t.Fatalf("live = %v %v, want [ap eu us]: the old probers' regions count, sa's beat is past the TTL", live, ok)
			}

			docs, err := st.ListObjects(ctx, "prober-heartbeat")
			if err != nil {
				t.Fatal(err)
			}
			var prev struct {
				Region   string    `json:"region"`
				LastSeen time.Time `json:"lastSeen"`
			}
			doc := docs["us|new-1"]
			if err := json.Unmarshal(doc, &prev); err != nil || prev.Region != "us" || !prev.LastSeen.Equal(clk.Now()) {
				t.Fatalf("an upgraded prober's heartbeat %s reads as region %q at %s in the old shape (%v)", doc, prev.Region, prev.LastSeen, err)
			}
		})
	}
}

// TestKeepOnStopLeavesTheHeartbeat: a member that keeps its heartbeat stays
// live for the TTL after a clean stop.
func TestKeepOnStopLeavesTheHeartbeat(t *testing.T) {
	clk := clock.NewFake(t0)
	st := openStores(t, clk)["bolt"]
	wrote := &countingStore{Store: st, put: make(chan struct{}, 1)}
	m, err := New(Options{Store: wrote, Kind: "prober-heartbeat", ID: "a", Region: "eu", KeepOnStop: true, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error)
	go func() { done <- m.Run(ctx) }()
	<-wrote.put
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if docs, _ := st.ListObjects(t.Context(), "prober-heartbeat"); docs["eu|a"] == nil {
		t.Fatal("the heartbeat was deleted on a clean stop")
	}
}

// TestNewRegionsNeedsStoreAndKind: a reader without a kind cannot list.
func TestNewRegionsNeedsStoreAndKind(t *testing.T) {
	if _, err := NewRegions(Options{Kind: "k"}, nil); err == nil {
		t.Error("NewRegions without a store succeeded")
	}
	if _, err := NewRegions(Options{Store: openStores(t, clock.Real{})["bolt"]}, nil); err == nil {
		t.Error("NewRegions without a kind succeeded")
	}
}
