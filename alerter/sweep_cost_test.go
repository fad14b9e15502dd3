package alerter

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/mcpmon/mcpmon/pkg/alert"
	"github.com/mcpmon/mcpmon/pkg/clock"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/msg"
	"github.com/mcpmon/mcpmon/pkg/store"
	"github.com/mcpmon/mcpmon/pkg/store/bolt"
	"github.com/mcpmon/mcpmon/pkg/store/redis"
	"github.com/mcpmon/mcpmon/pkg/store/redis/redistest"
)

// countingStore counts the store reads the alerter makes: one per call, and
// one per record a listing returns. ListIncidents, which walks the incident
// history, is counted on its own as well.
type countingStore struct {
	store.Store
	reads, historyListings atomic.Int64
}

func (s *countingStore) GetTracker(ctx context.Context, id string) (model.Tracker, error) {
	s.reads.Add(1)
	return s.Store.GetTracker(ctx, id)
}

func (s *countingStore) GetIncident(ctx context.Context, id string) (model.Incident, error) {
	s.reads.Add(1)
	return s.Store.GetIncident(ctx, id)
}

func (s *countingStore) GetEndpoint(ctx context.Context, id string) (model.Endpoint, error) {
	s.reads.Add(1)
	return s.Store.GetEndpoint(ctx, id)
}

func (s *countingStore) PendingOutboxes(ctx context.Context) ([]string, error) {
	ids, err := s.Store.PendingOutboxes(ctx)
	s.reads.Add(1 + int64(len(ids)))
	return ids, err
}

func (s *countingStore) CountOpenIncidents(ctx context.Context) (int, error) {
	s.reads.Add(1)
	return s.Store.CountOpenIncidents(ctx)
}

func (s *countingStore) ListObjects(ctx context.Context, kind string) (map[string][]byte, error) {
	docs, err := s.Store.ListObjects(ctx, kind)
	s.reads.Add(1 + int64(len(docs)))
	return docs, err
}

func (s *countingStore) ListIncidents(ctx context.Context, f store.IncidentFilter) ([]model.Incident, error) {
	s.historyListings.Add(1)
	incs, err := s.Store.ListIncidents(ctx, f)
	s.reads.Add(1 + int64(len(incs)))
	return incs, err
}

// seedResolved writes n resolved incidents (the history of an old
// deployment), a thousand per SaveTracker, over endpoints of their own.
func seedResolved(tb testing.TB, ctx context.Context, st store.Store, n int) {
	tb.Helper()
	const batch = 1000
	for k := 0; k*batch < n; k++ {
		ep := fmt.Sprintf("old-%d", k)
		var incs []model.Incident
		for i := k * batch; i < min(n, (k+1)*batch); i++ {
			w := t0.Add(-time.Duration(i+1) * time.Hour)
			incs = append(incs, model.Incident{ID: msg.IncidentID(ep, w), EndpointID: ep, State: model.IncidentResolved,
				OpenedWindow: w, OpenedAt: w, ResolvedWindow: &w, ResolvedAt: &w})
		}
		if err := st.SaveTracker(ctx, model.Tracker{EndpointID: ep}, incs...); err != nil {
			tb.Fatal(err)
		}
	}
}

// sweepWorld is a deployment with `resolved` incidents in its history and
// one endpoint whose open incident's notification waits in the outbox,
// deferred by a maintenance window that outlasts the test: every sweep
// drains that outbox and counts the open incident. It returns the alerter,
// on a countingStore.
func sweepWorld(tb testing.TB, st store.Store, clk *clock.Fake, resolved int) (*Alerter, *countingStore) {
	tb.Helper()
	ctx := context.Background()
	seedResolved(tb, ctx, st, resolved)
	if _, err := st.CreateEndpoint(ctx, model.Endpoint{ID: "ep1", Name: "mcp ep1", URL: "https://ep1.example/mcp", Schedule: "@every 1m", Timeout: 5 * time.Second}); err != nil {
		tb.Fatal(err)
	}
	doc, _ := json.Marshal(model.Maintenance{ID: "m1", EndpointIDs: []string{"ep1"}, Start: t0, End: t0.Add(24 * time.Hour)})
	if err := st.PutObject(ctx, model.MaintenanceKind, "m1", doc); err != nil {
		tb.Fatal(err)
	}
	cs := &countingStore{Store: st}
	a, err := New(Options{Store: cs, Sinks: []alert.Sink{httpSink{name: "hook", url: "http://127.0.0.1:1/unused"}}, Clock: clk, Owner: "a"})
	if err != nil {
		tb.Fatal(err)
	}
	for i := range 2 {
		clk.Set(win(i).Add(70 * time.Second))
		if err := a.process(ctx, verdict("ep1", win(i), msg.StateDown)); err != nil {
			tb.Fatal(err)
		}
	}
	if ids, err := st.PendingOutboxes(ctx); err != nil || len(ids) != 1 {
		tb.Fatalf("pending outboxes %v %v, want the deferred open of ep1", ids, err)
	}
	return a, cs
}

// readsPerSweep runs one sweep and returns the store reads it made.
func readsPerSweep(tb testing.TB, a *Alerter, cs *countingStore) int64 {
	tb.Helper()
	before := cs.reads.Load()
	if err := a.Sweep(context.Background()); err != nil {
		tb.Fatal(err)
	}
	return cs.reads.Load() - before
}

// TestSweepReadsDoNotGrowWithResolvedIncidents: a sweep reads the pending
// outboxes and the open-incident count from the store's indexes, never the
// incident history, so a deployment's age does not make it slower; and the
// open-incidents gauge is still right.
func TestSweepReadsDoNotGrowWithResolvedIncidents(t *testing.T) {
	for _, c := range []struct {
		name string
		open func(tb testing.TB, clk *clock.Fake) store.Store
	}{
		{"bolt", openBolt},
		{"redis", openRedis},
	} {
		t.Run(c.name, func(t *testing.T) {
			reads := map[int]int64{}
			for _, n := range []int{10, 2000} {
				clk := clock.NewFake(t0)
				a, cs := sweepWorld(t, c.open(t, clk), clk, n)
				reads[n] = readsPerSweep(t, a, cs)
				if got := cs.historyListings.Load(); got != 0 {
					t.Fatalf("%d resolved: %d incident-history listings during setup and sweep, want none", n, got)
				}
				if got := testutil.ToFloat64(a.m.IncidentsOpen); got != 1 {
					t.Fatalf("%d resolved: incidents_open = %v, want 1", n, got)
				}
			}
			if reads[10] != reads[2000] {
				t.Fatalf("store reads per sweep: %d with 10 resolved incidents, %d with 2000: want the same", reads[10], reads[2000])
			}
		})
	}
}

func openBolt(tb testing.TB, clk *clock.Fake) store.Store {
	st, err := bolt.Open(filepath.Join(tb.TempDir(), "store.db"), bolt.Options{Clock: clk, SweepInterval: -1})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { st.Close() })
	return st
}

func openRedis(tb testing.TB, clk *clock.Fake) store.Store {
	return redistest.Open(tb, redis.Options{Clock: clk, LeasesOnClock: true})
}

// BenchmarkSweep times one alerter sweep over a deployment with 100 and
// with 100,000 resolved incidents in its history (one deferred outbox to
// drain, one open incident to count), on bolt and on Redis, and reports
// the store reads each sweep made.
//
//	go test -run '^$' -bench Sweep -benchtime 200x ./alerter/
func BenchmarkSweep(b *testing.B) {
	for _, backend := range []struct {
		name string
		open func(tb testing.TB, clk *clock.Fake) store.Store
	}{
		{"bolt", openBolt},
		{"redis", openRedis},
	} {
		for _, n := range []int{100, 100_000} {
			b.Run(fmt.Sprintf("%s/resolved=%d", backend.name, n), func(b *testing.B) {
				clk := clock.NewFake(t0)
				a, cs := sweepWorld(b, backend.open(b, clk), clk, n)
				before, sweeps := cs.reads.Load(), 0
				for b.Loop() {
					if err := a.Sweep(b.Context()); err != nil {
						b.Fatal(err)
					}
					sweeps++
				}
				b.ReportMetric(float64(cs.reads.Load()-before)/float64(sweeps), "reads/sweep")
			})
		}
	}
}
