package daemon

import (
	"encoding/json"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/config"
	"github.com/mcpmon/mcpmon/pkg/store"
	"github.com/mcpmon/mcpmon/pkg/store/bolt"
)

// TestProberHeartbeatsAreReadableByEveryRelease: `run --regions` beats once
// per region under region|replica, in a document a reader of the release
// before membership carried prober heartbeats ({region, replica, lastSeen})
// still reads as its region's, so old aggregators beside new probers keep
// their regions; a clean stop keeps the heartbeats, so the region stays
// live across a restart.
func TestProberHeartbeatsAreReadableByEveryRelease(t *testing.T) {
	o := fastOptions(t)
	o.Auth = config.AuthNone
	o.Regions = threeRegions
	o.ReplicaID = "r1"
	d, err := Start(t.Context(), RoleAll, o, Deps{Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "a heartbeat per region", func() bool {
		docs, err := d.Store().ListObjects(t.Context(), store.KindProberHeartbeat)
		return err == nil && len(docs) == len(threeRegions)
	})
	d.Stop()
	if err := d.Wait(); err != nil {
		t.Fatal(err)
	}
	st, err := bolt.Open(filepath.Join(o.DataDir, "store.db"), bolt.Options{SweepInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	docs, err := st.ListObjects(t.Context(), store.KindProberHeartbeat)
	if err != nil || len(docs) != len(threeRegions) {
		t.Fatalf("heartbeats after a clean stop: %d, %v; want one per region, kept", len(docs), err)
	}
	for _, r := range threeRegions {
		var old struct {
			Region   string    `json:"region"`
			LastSeen time.Time `json:"lastSeen"`
		}
		doc := docs[r+"|r1"]
		if err := json.Unmarshal(doc, &old); err != nil || old.Region != r || old.LastSeen.IsZero() {
			t.Errorf("heartbeat %s|r1 = %s: an older reader sees region %q at %s (%v)", r, doc, old.Region, old.LastSeen, err)
		}
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
	docs, err := st.ListObjects(t.Context(), store.KindAggregatorHeartbeat)
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
	if docs, err := d.Store().ListObjects(t.Context(), store.KindAggregatorHeartbeat); err != nil || len(docs) != 0 {
		t.Fatalf("embedded store heartbeats %v %v, want none", docs, err)
	}
	if got := members(d); got != 0 {
		t.Fatalf("embedded members gauge = %v, want 0 (no view: decides every window)", got)
	}
}
