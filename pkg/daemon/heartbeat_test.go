package daemon

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/clock"
	"github.com/mcpmon/mcpmon/pkg/config"
)

func TestLiveRegions(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	beats := []heartbeat{
		{Region: "eu", Replica: "a", LastSeen: t0},
		{Region: "eu", Replica: "b", LastSeen: t0.Add(-time.Hour)},
		{Region: "us", Replica: "c", LastSeen: t0.Add(-heartbeatTTL)},
		{Region: "ap", Replica: "d", LastSeen: t0.Add(-heartbeatTTL - time.Second)},
	}
	tests := []struct {
		at   time.Time
		want []string
	}{
		{t0, []string{"eu", "us"}},                         // ap's last beat is past the TTL
		{t0.Add(-time.Minute), []string{"ap", "eu", "us"}}, // an older window: ap was live then
		{t0.Add(2 * heartbeatTTL), nil},                    // nobody since
	}
	for _, tt := range tests {
		if got := liveRegions(beats, tt.at, heartbeatTTL); !slices.Equal(got, tt.want) {
			t.Errorf("liveRegions at %s = %v, want %v", tt.at, got, tt.want)
		}
	}
}

// TestHeartbeatsNarrowDueRegions: heartbeats written to a real store are
// read back as the live set, a region whose probers stopped beating drops
// out after the TTL, stale replicas are forgotten, and with no heartbeat at
// all the reader says it cannot tell.
func TestHeartbeatsNarrowDueRegions(t *testing.T) {
	st := openBolt(t)
	clk := clock.NewFake(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC))
	h := &heartbeats{st: st, clk: clk}
	if _, ok := h.LiveAt(t.Context(), clk.Now()); ok {
		t.Fatal("no heartbeat written, yet the reader claims to know the live set")
	}
	put := func(region, replica string, at time.Time) {
		doc, _ := json.Marshal(heartbeat{Region: region, Replica: replica, LastSeen: at})
		if err := st.PutObject(t.Context(), HeartbeatKind, region+"|"+replica, doc); err != nil {
			t.Fatal(err)
		}
	}
	put("eu", "a", clk.Now())
	put("us", "b", clk.Now())
	put("ap", "gone", clk.Now().Add(-48*time.Hour))
	clk.Advance(heartbeatInterval)
	live, ok := h.LiveAt(t.Context(), clk.Now())
	if !ok || !slices.Equal(live, []string{"eu", "us"}) {
		t.Fatalf("live = %v %v, want [eu us]", live, ok)
	}
	if _, err := st.GetObject(t.Context(), HeartbeatKind, "ap|gone"); err == nil {
		t.Fatal("a replica's day-old heartbeat was kept")
	}
	// eu keeps beating; us stops.
	clk.Advance(heartbeatTTL)
	put("eu", "a", clk.Now())
	live, ok = h.LiveAt(t.Context(), clk.Now())
	if !ok || !slices.Equal(live, []string{"eu"}) {
		t.Fatalf("live after us stopped = %v %v, want [eu]", live, ok)
	}
}

// A prober outside the region set would consume a queue nobody sends to:
// it does not start, and says why.
func TestProberRegionMustBeInTheSet(t *testing.T) {
	o := fastOptions(t)
	o.Regions = []string{"eu", "us"}
	o.Region = "ap"
	_, err := Start(t.Context(), RoleProber, o, Deps{})
	if !IsUsage(err) || !strings.Contains(err.Error(), "--region") {
		t.Fatalf("Start = %v, want a usage error naming --region", err)
	}
}

// TestAggregatorReplicasSeeEachOther: two aggregator processes on SQS and
// Redis heartbeat under their replica IDs and count each other; one that
// stops cleanly deletes its heartbeat, and the other counts itself alone.
// With the embedded store there is no membership: one aggregator decides
// everything, as before.
func TestAggregatorReplicasSeeEachOther(t *testing.T) {
	o := fastOptions(t) // 1s windows: heartbeats every second, TTL 3s
	o.Auth = config.AuthNone
	setupSQS(t, &o)
	setupRedis(t, &o)
	start := func(id string) *Daemon {
		t.Helper()
		ro := o
		ro.ReplicaID = id
		d, err := Start(t.Context(), RoleAggregator, ro, Deps{Logger: testLogger(t)})
		if err != nil {
			t.Fatalf("start aggregator %s: %v", id, err)
		}
		t.Cleanup(func() { d.Stop(); _ = d.Wait() })
		return d
	}
	members := func(d *Daemon) float64 {
		mfs, err := d.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() == "mcpmon_aggregator_members" {
				return mf.GetMetric()[0].GetGauge().GetValue()
			}
		}
		return -1
	}
	a, b := start("agg-a"), start("agg-b")
	eventually(t, 10*time.Second, "both replicas counting two members", func() bool { return members(a) == 2 && members(b) == 2 })
	st := a.Store()
	b.Stop()
	if err := b.Wait(); err != nil {
		t.Fatal(err)
	}
	docs, err := st.ListObjects(t.Context(), AggregatorHeartbeatKind)
	if err != nil || docs["agg-b"] != nil || docs["agg-a"] == nil {
		t.Fatalf("heartbeats after b stopped: %v %v, want only agg-a's", slices.Collect(maps.Keys(docs)), err)
	}
	eventually(t, 10*time.Second, "a counting itself alone", func() bool { return members(a) == 1 })

	e := fastOptions(t)
	e.Auth = config.AuthNone
	d, err := Start(t.Context(), RoleAll, e, Deps{Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Stop(); _ = d.Wait() })
	if docs, err := d.Store().ListObjects(t.Context(), AggregatorHeartbeatKind); err != nil || len(docs) != 0 {
		t.Fatalf("embedded store heartbeats %v %v, want none", docs, err)
	}
	if got := members(d); got != 0 {
		t.Fatalf("embedded members gauge = %v, want 0 (no view: decides every window)", got)
	}
}
