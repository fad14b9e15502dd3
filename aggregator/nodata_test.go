package aggregator

import (
	"context"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/mcpmon/mcpmon/pkg/clock"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/msg"
	"github.com/mcpmon/mcpmon/pkg/schedule"
	"github.com/mcpmon/mcpmon/pkg/store"
	"github.com/mcpmon/mcpmon/pkg/store/bolt"
)

// newNoDataEnv is the test world without the fixture endpoint "ep" (created
// at w0, so it would be silent from 12:01 on); the tests create their own.
func newNoDataEnv(t *testing.T) *aenv {
	e := newAenv(t)
	if err := e.st.DeleteEndpoint(e.ctx, "ep"); err != nil {
		t.Fatal(err)
	}
	return e
}

// create registers endpoint id, created an hour before w0 unless at is set.
func (e *aenv) create(id, schedule string, mod ...func(*model.Endpoint)) {
	e.t.Helper()
	ep := model.Endpoint{ID: id, URL: "https://" + id + ".example/mcp", Schedule: schedule, CreatedAt: w0.Add(-time.Hour)}
	for _, m := range mod {
		m(&ep)
	}
	if _, err := e.st.CreateEndpoint(e.ctx, ep); err != nil {
		e.t.Fatal(err)
	}
}

// tickAt sets the clock and ticks agg (e.agg if nil).
func (e *aenv) tickAt(at time.Time, aggs ...*Aggregator) {
	e.t.Helper()
	e.clk.Set(at)
	if len(aggs) == 0 {
		aggs = []*Aggregator{e.agg}
	}
	for _, a := range aggs {
		if err := a.Tick(e.ctx); err != nil {
			e.t.Fatal(err)
		}
	}
}

// noDataDue is when window w's no_data is decided with the test world's
// 1m window, 10s grace and the default 10s probe timeout.
func noDataDue(w time.Time) time.Time {
	return w.Add(time.Minute + 10*time.Second + DefaultProbeTimeout)
}

func byEndpoint(vs []msg.Verdict) map[string][]msg.Verdict {
	out := map[string][]msg.Verdict{}
	for _, v := range vs {
		out[v.EndpointID] = append(out[v.EndpointID], v)
	}
	return out
}

func TestNoDataForSilentWindow(t *testing.T) { testNoDataForSilentWindow(t, newNoDataEnv(t)) }

func testNoDataForSilentWindow(t *testing.T, e *aenv) {
	e.create("silent", "@every 10s")

	// Window closed and grace over: the probe of the last slot may still
	// be running, so nothing yet.
	e.tickAt(w0.Add(time.Minute + 10*time.Second))
	if vs := e.published(); len(vs) != 0 {
		t.Fatalf("published %+v before a probe started in the window could have finished, want nothing", vs)
	}
	e.tickAt(noDataDue(w0))
	vs := e.published()
	if len(vs) != 1 {
		t.Fatalf("published %+v, want exactly one no_data verdict", vs)
	}
	v := vs[0]
	if v.State != msg.StateNoData || v.EndpointID != "silent" || !v.Window.Equal(w0) || v.WindowSecs != 60 || v.Results != 0 ||
		v.DedupID() != "verdict-silent-2026-03-01T1200" || v.EmittedAt.IsZero() {
		t.Fatalf("verdict %+v (dedup %s), want no_data of silent for 12:00, dedup verdict-silent-2026-03-01T1200", v, v.DedupID())
	}
	// Idempotent: ticking again publishes nothing.
	e.tickAt(noDataDue(w0).Add(time.Second))
	if vs := e.published(); len(vs) != 0 {
		t.Fatalf("second tick published %+v, want nothing", vs)
	}
	last, err := e.st.LastVerdict(e.ctx, "silent")
	if err != nil || last.State != msg.StateNoData || !last.Window.Equal(w0) {
		t.Fatalf("last verdict %+v %v, want the no_data of 12:00 recorded", last, err)
	}
	if got := testutil.ToFloat64(e.agg.m.Verdicts.WithLabelValues("no_data")); got != 1 {
		t.Fatalf("verdicts_total{state=no_data} = %v, want 1", got)
	}
	if got, _ := e.agg.m.VerdictState.Get("silent"); got != msg.StateNoData {
		t.Fatalf("verdict_state{endpoint=silent,state=no_data} = %v, want 1", got)
	}
	// The next silent window gets its own, one window later.
	e.tickAt(noDataDue(w0.Add(time.Minute)))
	if vs := e.published(); len(vs) != 1 || vs[0].DedupID() != "verdict-silent-2026-03-01T1201" {
		t.Fatalf("published %+v, want the no_data of 12:01", vs)
	}
}

// An endpoint probed every 5 minutes has a slot in one of five one-minute
// windows; the other four are not silent, just unscheduled.
func TestNoDataOnlyForWindowsWithSlots(t *testing.T) {
	e := newNoDataEnv(t)
	e.create("sparse", "@every 5m")
	sl, err := schedule.New("sparse", "@every 5m")
	if err != nil {
		t.Fatal(err)
	}
	var got []time.Time
	withSlot := 0
	for i := range 5 {
		w := w0.Add(time.Duration(i) * time.Minute)
		if sl.In(w, w.Add(time.Minute)) > 0 {
			withSlot++
		}
		e.tickAt(noDataDue(w))
		for _, v := range e.published() {
			if v.State != msg.StateNoData {
				t.Fatalf("verdict %+v, want only no_data", v)
			}
			got = append(got, v.Window)
		}
	}
	if withSlot != 1 {
		t.Fatalf("%d of the 5 windows 12:00-12:04 hold a slot of @every 5m, want 1", withSlot)
	}
	if len(got) != 1 || sl.In(got[0], got[0].Add(time.Minute)) != 1 {
		t.Fatalf("no_data windows %v, want exactly the one holding the slot", got)
	}
}

func TestNoDataSkipsPausedAndDeletedEndpoints(t *testing.T) {
	e := newNoDataEnv(t)
	e.create("silent", "@every 10s") // control: proves the pass ran
	e.create("paused", "@every 10s", func(ep *model.Endpoint) { ep.Paused = true })
	e.create("deleted", "@every 10s")
	e.create("gone", "@every 10s")
	if err := e.st.DeleteEndpoint(e.ctx, "deleted"); err != nil {
		t.Fatal(err)
	}
	// "gone" is listed as a candidate at the window's close, then deleted
	// before its no_data is due.
	e.tickAt(w0.Add(time.Minute + 10*time.Second))
	if err := e.st.DeleteEndpoint(e.ctx, "gone"); err != nil {
		t.Fatal(err)
	}
	e.tickAt(noDataDue(w0))
	got := byEndpoint(e.published())
	if len(got["silent"]) != 1 || len(got) != 1 {
		t.Fatalf("verdicts by endpoint %+v, want one no_data for silent only", got)
	}
}

// Windows cut by the endpoint's creation or a change (an unpause, a new
// schedule) are not no_data: the scheduler may have picked the change up
// mid-window.
func TestNoDataNotBeforeEndpointExisted(t *testing.T) {
	e := newNoDataEnv(t)
	e.create("new", "@every 10s", func(ep *model.Endpoint) { ep.CreatedAt = w0.Add(30 * time.Second) })
	e.tickAt(noDataDue(w0))
	if vs := e.published(); len(vs) != 0 {
		t.Fatalf("published %+v for the window the endpoint was created in, want nothing", vs)
	}
	e.tickAt(noDataDue(w0.Add(time.Minute)))
	if vs := e.published(); len(vs) != 1 || !vs[0].Window.Equal(w0.Add(time.Minute)) {
		t.Fatalf("published %+v, want the no_data of 12:01, the first whole window", vs)
	}
}

// A window with results is decided from them, never no_data, including a
// result that arrives after the grace period but within the probe timeout.
func TestNoDataNeverForWindowWithResults(t *testing.T) {
	e := newNoDataEnv(t)
	e.create("ep", "@every 30s")
	e.sendResult(res("", msg.StatusDown, "refused", 0))
	e.consume()
	e.tickAt(noDataDue(w0))
	if vs := e.published(); len(vs) != 1 || vs[0].State != msg.StateDown || vs[0].Results != 1 {
		t.Fatalf("published %+v, want one down verdict of 1 result", vs)
	}

	// 12:01: the probe of the 12:01:30 slot is slow: no result at the
	// window's close + grace, one before the probe timeout ran out.
	w1 := w0.Add(time.Minute)
	e.tickAt(w1.Add(time.Minute + 10*time.Second))
	if vs := e.published(); len(vs) != 0 {
		t.Fatalf("published %+v at 12:02:10, want nothing yet", vs)
	}
	e.clk.Set(w1.Add(time.Minute + 15*time.Second))
	e.sendResult(res("", msg.StatusDown, "timeout", 90*time.Second))
	e.consume()
	e.tickAt(noDataDue(w1))
	vs := e.published()
	if len(vs) != 1 || vs[0].State != msg.StateDown || !vs[0].Window.Equal(w1) {
		t.Fatalf("published %+v, want the down verdict of 12:01", vs)
	}
	if got := testutil.ToFloat64(e.agg.m.Verdicts.WithLabelValues("no_data")); got != 0 {
		t.Fatalf("verdicts_total{state=no_data} = %v, want 0", got)
	}
}

// Two aggregators on one store and queue, ticking at once: one no_data
// message and one recorded verdict per window.
func TestNoDataOncePerWindowAcrossReplicas(t *testing.T) {
	e := newNoDataEnv(t)
	e.create("silent", "@every 10s")
	a, b := e.agg, e.newAggregator()
	for i := range 3 {
		w := w0.Add(time.Duration(i) * time.Minute)
		e.clk.Set(noDataDue(w))
		var wg sync.WaitGroup
		for _, agg := range []*Aggregator{a, b} {
			wg.Go(func() {
				if err := agg.Tick(e.ctx); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		vs := e.published()
		if len(vs) != 1 || vs[0].State != msg.StateNoData || vs[0].DedupID() != msg.VerdictDedupID("silent", w, 60) {
			t.Fatalf("window %s: published %+v, want one no_data message", w.Format("15:04"), vs)
		}
	}
	hist, err := e.st.ListVerdicts(e.ctx, "silent", 0)
	if err != nil || len(hist) != 3 {
		t.Fatalf("history %+v %v, want 3 no_data verdicts", hist, err)
	}
	na := testutil.ToFloat64(a.m.Verdicts.WithLabelValues("no_data"))
	nb := testutil.ToFloat64(b.m.Verdicts.WithLabelValues("no_data"))
	if na+nb != 3 {
		t.Fatalf("verdicts_total{state=no_data} = %v + %v across the replicas, want 3", na, nb)
	}
}

// The bound: after a stall (or at start) only the most recent closed window
// is considered, never a backlog; and no window that began before the
// aggregator started.
func TestNoDataBound(t *testing.T) {
	e := newNoDataEnv(t)
	e.create("silent", "@every 10s")
	e.tickAt(w0.Add(10 * time.Minute)) // first tick after ten silent windows
	vs := e.published()
	if len(vs) != 1 || !vs[0].Window.Equal(w0.Add(8*time.Minute)) {
		t.Fatalf("published %+v, want only the no_data of 12:08, the latest window whose probe timeout ran out", vs)
	}

	// An aggregator started at 12:10:30 leaves 12:10 alone, decides 12:11.
	e.clk.Set(w0.Add(10*time.Minute + 30*time.Second))
	restarted := e.newAggregator()
	e.tickAt(noDataDue(w0.Add(10*time.Minute)), restarted)
	if vs := e.published(); len(vs) != 0 {
		t.Fatalf("restarted aggregator published %+v for a window that began before it started, want nothing", vs)
	}
	e.tickAt(noDataDue(w0.Add(11*time.Minute)), restarted)
	if vs := e.published(); len(vs) != 1 || !vs[0].Window.Equal(w0.Add(11*time.Minute)) {
		t.Fatalf("published %+v, want the no_data of 12:11", vs)
	}
}

// A failed publish leaves the candidate pending; the next tick publishes it
// under the same dedup ID.
func TestNoDataRetriedAfterPublishFailure(t *testing.T) {
	e := newNoDataEnv(t)
	e.create("silent", "@every 10s")
	e.clk.Set(noDataDue(w0))
	e.pub.fail = 1
	if err := e.agg.Tick(e.ctx); err == nil {
		t.Fatal("Tick with the queue down returned nil, want the publish error")
	}
	if _, err := e.st.LastVerdict(e.ctx, "silent"); err == nil {
		t.Fatal("a verdict was recorded although its publish failed")
	}
	e.tickAt(noDataDue(w0).Add(time.Second))
	if vs := e.published(); len(vs) != 1 || vs[0].DedupID() != "verdict-silent-2026-03-01T1200" {
		t.Fatalf("published %+v, want the no_data of 12:00 on retry", vs)
	}

	// The queue stays down past 12:01's and 12:02's deadlines: when it is
	// back, only the latest due window is published, not the backlog.
	e.pub.fail = 1 << 20
	for _, w := range []time.Time{w0.Add(time.Minute), w0.Add(2 * time.Minute)} {
		e.clk.Set(noDataDue(w))
		if err := e.agg.Tick(e.ctx); err == nil {
			t.Fatal("Tick with the queue down returned nil, want the publish error")
		}
	}
	e.pub.fail = 0
	e.tickAt(noDataDue(w0.Add(2 * time.Minute)).Add(time.Second))
	e.tickAt(noDataDue(w0.Add(2 * time.Minute)).Add(2 * time.Second))
	if vs := e.published(); len(vs) != 1 || vs[0].DedupID() != "verdict-silent-2026-03-01T1202" {
		t.Fatalf("published %+v, want only the no_data of 12:02", vs)
	}
}

// Another replica decided the window from a result that reached it after
// this one listed the window as silent: this one publishes nothing, not
// even a copy for the queue to collapse.
func TestNoDataYieldsToAnotherReplicasVerdict(t *testing.T) {
	e := newNoDataEnv(t)
	e.create("ep", "@every 30s")
	other := e.newAggregator()
	e.tickAt(w0.Add(time.Minute+10*time.Second), e.agg) // ep listed: no result in 12:00
	e.clk.Set(w0.Add(time.Minute + 15*time.Second))
	e.sendResult(res("", msg.StatusDown, "timeout", 30*time.Second))
	e.consume()
	e.tickAt(w0.Add(time.Minute+16*time.Second), other) // decides 12:00 from the result
	sent := e.pub.sent
	e.tickAt(noDataDue(w0), e.agg)
	if e.pub.sent != sent {
		t.Fatalf("%d publishes after the other replica's verdict, want none", e.pub.sent-sent)
	}
	if vs := e.published(); len(vs) != 1 || vs[0].State != msg.StateDown {
		t.Fatalf("published %+v, want the other replica's down verdict only", vs)
	}
}

// countingStore is the bolt store counting the no_data pass's endpoint
// listings (with the shards and endpoints each read) and single endpoint
// reads.
type countingStore struct {
	*bolt.Store
	lists int
	gets  atomic.Int64

	mu     sync.Mutex
	shards [][]int    // per listing, the shards asked for
	listed [][]string // per listing, the endpoint IDs returned
}

func (c *countingStore) ListEndpointsIn(ctx context.Context, shards []int) ([]model.Endpoint, error) {
	eps, err := c.Store.ListEndpointsIn(ctx, shards)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lists++
	ids := []string{}
	for _, e := range eps {
		ids = append(ids, e.ID)
	}
	c.shards = append(c.shards, slices.Clone(shards))
	c.listed = append(c.listed, ids)
	return eps, err
}

// takeListings returns the listings since the last take.
func (c *countingStore) takeListings() (shards [][]int, listed [][]string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	shards, listed = c.shards, c.listed
	c.shards, c.listed = nil, nil
	return shards, listed
}

func (c *countingStore) GetEndpoint(ctx context.Context, id string) (model.Endpoint, error) {
	c.gets.Add(1)
	return c.Store.GetEndpoint(ctx, id)
}

// newCountingEnv is newNoDataEnv over a countingStore.
func newCountingEnv(t *testing.T) (*aenv, *countingStore) {
	var cs *countingStore
	e := newAenvWith(t, func(clk clock.Clock) store.Store {
		st, err := bolt.Open(filepath.Join(t.TempDir(), "s.db"), bolt.Options{Clock: clk, SweepInterval: -1})
		if err != nil {
			t.Fatal(err)
		}
		cs = &countingStore{Store: st}
		return cs
	})
	if err := e.st.DeleteEndpoint(e.ctx, "ep"); err != nil {
		t.Fatal(err)
	}
	return e, cs
}

// The once-per-window no_data listing reads the shards' endpoints stamps
// and decodes a shard's endpoints only when one of them changed (or every
// staleViews): an idle fleet is not decoded every minute, a write relists
// only its own shard, and no silent window is missed for it.
func TestNoDataListsAgainOnlyWhenAnEndpointChanged(t *testing.T) {
	e, cs := newCountingEnv(t)
	e.create("silent", "@every 10s")
	for i := range 4 {
		w := w0.Add(time.Duration(i) * time.Minute)
		e.tickAt(noDataDue(w))
		if vs := e.published(); len(vs) != 1 || vs[0].State != msg.StateNoData || !vs[0].Window.Equal(w) {
			t.Fatalf("window %s: published %+v, want its no_data", w.Format("15:04"), vs)
		}
	}
	if cs.lists != 1 {
		t.Fatalf("%d listings over four unchanged windows, want 1", cs.lists)
	}

	// Another replica registers "new" (created before the window it is
	// judged in): the stamp moves, the next listing sees it.
	e.create("new", "@every 10s")
	w := w0.Add(5 * time.Minute)
	e.tickAt(noDataDue(w.Add(-time.Minute)))
	_ = e.published()
	e.tickAt(noDataDue(w))
	if got := byEndpoint(e.published()); len(got["new"]) != 1 || len(got["silent"]) != 1 {
		t.Fatalf("window %s after a create: published %+v, want a no_data each for new and silent", w.Format("15:04"), got)
	}
	if cs.lists != 2 {
		t.Fatalf("%d listings after a create, want 2", cs.lists)
	}
	// The second listing read only the shard the create wrote.
	if shards, _ := cs.takeListings(); len(shards) != 2 || !slices.Equal(shards[1], []int{store.ShardOf("new")}) {
		t.Fatalf("listings of shards %v, want the last of only new's shard %d", shards, store.ShardOf("new"))
	}

	// However still the stamp, the views are listed again after staleViews.
	before := cs.lists
	e.tickAt(noDataDue(w.Add(staleViews + time.Minute)))
	if cs.lists != before+1 {
		t.Fatalf("%d listings after %s unchanged, want %d", cs.lists, staleViews, before+1)
	}
}
