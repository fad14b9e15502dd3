package aggregator

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/mcpmon/mcpmon/pkg/clock"
	"github.com/mcpmon/mcpmon/pkg/metrics"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/msg"
	"github.com/mcpmon/mcpmon/pkg/queue"
	"github.com/mcpmon/mcpmon/pkg/queue/embedded"
	"github.com/mcpmon/mcpmon/pkg/store"
	"github.com/mcpmon/mcpmon/pkg/store/bolt"
)

// sender publishes straight to a queue (what *queue.Publisher does, without
// its batching timer); fail makes the next publishes fail, as a queue outage.
type sender struct {
	q    queue.Queue
	mu   sync.Mutex
	fail int
	sent int // publishes the queue accepted (duplicates included)
}

func (s *sender) Publish(ctx context.Context, in queue.SendInput) (string, error) {
	s.mu.Lock()
	if s.fail > 0 {
		s.fail--
		s.mu.Unlock()
		return "", errors.New("queue unavailable")
	}
	s.mu.Unlock()
	res, err := s.q.Send(ctx, []queue.SendInput{in})
	if err != nil {
		return "", err
	}
	if res[0].Err == nil {
		s.mu.Lock()
		s.sent++
		s.mu.Unlock()
	}
	return res[0].MessageID, res[0].Err
}

type aenv struct {
	t        *testing.T
	ctx      context.Context
	clk      *clock.Fake
	st       store.Store
	results  queue.Queue
	verdicts queue.Queue
	pub      *sender
	agg      *Aggregator
	reg      *prometheus.Registry
}

func newAenv(t *testing.T) *aenv {
	return newAenvWith(t, func(clk clock.Clock) store.Store {
		st, err := bolt.Open(filepath.Join(t.TempDir(), "s.db"), bolt.Options{Clock: clk, SweepInterval: -1})
		if err != nil {
			t.Fatal(err)
		}
		return st
	})
}

// newAenvWith builds the test world on the store open returns.
func newAenvWith(t *testing.T, open func(clock.Clock) store.Store) *aenv {
	clk := clock.NewFake(w0)
	st := open(clk)
	t.Cleanup(func() { st.Close() })
	b, err := embedded.Open("", queue.StageConfigs(), embedded.Options{Clock: clk, PollInterval: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	e := &aenv{t: t, ctx: t.Context(), clk: clk, st: st, results: b.Queue(msg.QueueResults), verdicts: b.Queue(msg.QueueVerdicts), reg: prometheus.NewRegistry()}
	e.pub = &sender{q: e.verdicts}
	e.agg, err = New(Options{Store: st, Publisher: e.pub, Window: time.Minute, Grace: 10 * time.Second, Clock: clk, Metrics: NewMetrics(e.reg, metrics.NewPipelineDelay(e.reg))})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateEndpoint(e.ctx, model.Endpoint{ID: "ep", URL: "https://ep.example/mcp", Schedule: "@every 30s"}); err != nil {
		t.Fatal(err)
	}
	return e
}

// newAggregator is another aggregator (a replica, or this one restarted) on
// the same store, queue and clock, with its own metrics.
func (e *aenv) newAggregator() *Aggregator {
	e.t.Helper()
	a, err := New(Options{Store: e.st, Publisher: e.pub, Window: time.Minute, Grace: 10 * time.Second, Clock: e.clk, Metrics: NewMetrics(nil, nil)})
	if err != nil {
		e.t.Fatal(err)
	}
	return a
}

func (e *aenv) sendResult(r msg.ProbeResult) string {
	e.t.Helper()
	res, err := e.results.Send(e.ctx, []queue.SendInput{{GroupID: r.GroupID(), DedupID: r.DedupID(), Body: r.Body()}})
	if err != nil || res[0].Err != nil {
		e.t.Fatal(err, res)
	}
	return res[0].MessageID
}

// consume handles every visible result message as queue.Consume would.
func (e *aenv) consume() {
	e.t.Helper()
	for {
		ms, err := e.results.Receive(e.ctx, queue.ReceiveInput{Max: 10})
		if err != nil {
			e.t.Fatal(err)
		}
		if len(ms) == 0 {
			return
		}
		for _, m := range ms {
			if err := e.agg.Handle(e.ctx, m); err != nil {
				e.t.Fatal(err)
			}
			if err := e.results.Delete(e.ctx, m.ReceiptHandle); err != nil {
				e.t.Fatal(err)
			}
		}
	}
}

func (e *aenv) published() []msg.Verdict {
	e.t.Helper()
	var vs []msg.Verdict
	for {
		ms, err := e.verdicts.Receive(e.ctx, queue.ReceiveInput{Max: 10})
		if err != nil {
			e.t.Fatal(err)
		}
		if len(ms) == 0 {
			return vs
		}
		for _, m := range ms {
			var v msg.Verdict
			if err := msg.Decode(m.Body, &v); err != nil {
				e.t.Fatal(err)
			}
			if m.DedupID != v.DedupID() || m.GroupID != v.EndpointID {
				e.t.Fatalf("verdict sent with dedup %q group %q, want %q %s", m.DedupID, m.GroupID, v.DedupID(), v.EndpointID)
			}
			vs = append(vs, v)
			_ = e.verdicts.Delete(e.ctx, m.ReceiptHandle)
		}
	}
}

func TestWindowDecidedAfterGraceOnce(t *testing.T) { testWindowDecidedAfterGraceOnce(t, newAenv(t)) }

func testWindowDecidedAfterGraceOnce(t *testing.T, e *aenv) {
	e.sendResult(res("", msg.StatusDown, "refused", 0))
	e.sendResult(res("", msg.StatusDown, "refused", 30*time.Second))
	e.consume()

	e.clk.Set(w0.Add(time.Minute + 5*time.Second)) // window over, grace not
	if err := e.agg.Tick(e.ctx); err != nil {
		t.Fatal(err)
	}
	if vs := e.published(); len(vs) != 0 {
		t.Fatalf("verdicts %v inside the grace period, want none", vs)
	}
	e.clk.Set(w0.Add(time.Minute + 10*time.Second))
	if err := e.agg.Tick(e.ctx); err != nil {
		t.Fatal(err)
	}
	vs := e.published()
	if len(vs) != 1 || vs[0].State != msg.StateDown || vs[0].Results != 2 || vs[0].DedupID() != "verdict-ep-2026-03-01T1200" {
		t.Fatalf("verdicts %+v, want one down verdict of 2 results, dedup verdict-ep-2026-03-01T1200", vs)
	}
	if err := e.agg.Tick(e.ctx); err != nil {
		t.Fatal(err)
	}
	if vs := e.published(); len(vs) != 0 {
		t.Fatalf("second tick published %v, want nothing", vs)
	}
	if got, _ := e.agg.m.VerdictState.Get("ep"); got != msg.StateDown {
		t.Fatalf("verdict_state{state=down} = %v, want 1", got)
	}
	if got := testutil.ToFloat64(e.agg.m.Verdicts.WithLabelValues("down")); got != 1 {
		t.Fatalf("verdicts_total{state=down} = %v, want 1", got)
	}
}

func TestDuplicateAndLateResults(t *testing.T) { testDuplicateAndLateResults(t, newAenv(t)) }

func testDuplicateAndLateResults(t *testing.T, e *aenv) {
	r := res("", msg.StatusUp, "ok", 0)
	e.sendResult(r)
	e.consume()
	// A redelivery of the same message (visibility expired after the effect,
	// before the delete) is one result.
	m := queue.Message{ID: "x", DedupID: r.DedupID(), GroupID: "ep", Body: r.Body()}
	if err := e.agg.Handle(e.ctx, m); err != nil {
		t.Fatal(err)
	}
	if got := testutil.ToFloat64(e.agg.m.ResultsDuplicate); got != 1 {
		t.Fatalf("results_duplicate_total = %v, want 1", got)
	}
	// The same result handed over by a prober of this process: the value
	// itself, no body to decode (queue.Handoff.PublishValue).
	if err := e.agg.Handle(e.ctx, queue.Message{ID: "handoff-" + r.DedupID(), DedupID: r.DedupID(), GroupID: "ep", Value: r}); err != nil {
		t.Fatalf("handed-over result: %v", err)
	}
	if got := testutil.ToFloat64(e.agg.m.ResultsDuplicate); got != 2 {
		t.Fatalf("results_duplicate_total = %v after the handed-over copy, want 2", got)
	}
	e.clk.Set(w0.Add(2 * time.Minute))
	if err := e.agg.Tick(e.ctx); err != nil {
		t.Fatal(err)
	}
	if vs := e.published(); len(vs) != 1 || vs[0].Results != 1 {
		t.Fatalf("verdicts %+v, want one of one result", vs)
	}
	// Beyond SQS's five minutes the same result is accepted as a new
	// message; its window is decided, so it is late and changes nothing.
	e.clk.Advance(10 * time.Minute)
	e.sendResult(r)
	late := res("", msg.StatusDown, "refused", 45*time.Second) // another run, same window
	e.sendResult(late)
	e.consume()
	if got := testutil.ToFloat64(e.agg.m.ResultsLate); got != 2 {
		t.Fatalf("results_late_total = %v, want 2", got)
	}
	if err := e.agg.Tick(e.ctx); err != nil {
		t.Fatal(err)
	}
	// The late results change nothing; the only verdict is the no_data of
	// 12:10, the latest closed window, in which ep was due and silent.
	if vs := e.published(); len(vs) != 1 || vs[0].State != msg.StateNoData || !vs[0].Window.Equal(w0.Add(10*time.Minute)) {
		t.Fatalf("published %+v, want only the no_data verdict of 12:10", vs)
	}
	hist, err := e.st.ListVerdicts(e.ctx, "ep", 10)
	if err != nil || len(hist) != 2 || hist[1].State != msg.StateUp || !hist[1].Window.Equal(w0) || hist[0].State != msg.StateNoData {
		t.Fatalf("verdict history %+v %v, want the up verdict of 12:00 and the no_data of 12:10", hist, err)
	}
}

func TestPublishFailureRetriedNextTickInOrder(t *testing.T) {
	e := newAenv(t)
	e.sendResult(res("", msg.StatusDown, "refused", 0))
	e.sendResult(res("", msg.StatusUp, "ok", time.Minute))
	e.consume()
	e.clk.Set(w0.Add(3 * time.Minute))
	e.pub.fail = 1
	if err := e.agg.Tick(e.ctx); err == nil {
		t.Fatal("Tick with the queue down returned nil, want the publish error")
	}
	if vs := e.published(); len(vs) != 0 {
		t.Fatalf("published %v: the later window must wait for the earlier one", vs)
	}
	if err := e.agg.Tick(e.ctx); err != nil {
		t.Fatal(err)
	}
	vs := e.published()
	if len(vs) != 2 || !vs[0].Window.Equal(w0) || !vs[1].Window.Equal(w0.Add(time.Minute)) {
		t.Fatalf("verdicts %+v, want windows 12:00 then 12:01", vs)
	}
}

// A crash after publishing and before recording decides the window again:
// same dedup ID, collapsed by the queue within five minutes.
func TestCrashBetweenPublishAndRecord(t *testing.T) {
	e := newAenv(t)
	r := res("", msg.StatusDown, "refused", 0)
	e.sendResult(r)
	e.consume()
	e.clk.Set(w0.Add(2 * time.Minute))
	v := Decide("ep", w0, time.Minute, []msg.ProbeResult{r}, 0)
	v.EmittedAt = e.clk.Now()
	if _, err := e.pub.Publish(e.ctx, queue.SendInput{GroupID: v.GroupID(), DedupID: v.DedupID(), Body: v.Body()}); err != nil {
		t.Fatal(err)
	}
	// ... crash: not recorded. A restarted aggregator ticks. (It started
	// after the silent window 12:01 began, so that window is not no_data.)
	e.clk.Advance(time.Minute)
	if err := e.newAggregator().Tick(e.ctx); err != nil {
		t.Fatal(err)
	}
	if vs := e.published(); len(vs) != 1 {
		t.Fatalf("%d verdict messages %+v, want 1 (the re-publish collapses on its dedup ID)", len(vs), vs)
	}
	if last, err := e.st.LastVerdict(e.ctx, "ep"); err != nil || !last.Window.Equal(w0) {
		t.Fatalf("last verdict %+v %v, want window recorded", last, err)
	}
}

func TestMetricsMatchCatalog(t *testing.T) {
	e := newAenv(t)
	e.sendResult(res("", msg.StatusDown, "refused", 0))
	e.consume()
	e.clk.Set(w0.Add(2 * time.Minute))
	if err := e.agg.Tick(e.ctx); err != nil {
		t.Fatal(err)
	}
	if err := metrics.Lint(e.reg); err != nil {
		t.Fatal(err)
	}
}

var (
	_ Store     = (*bolt.Store)(nil)
	_ Publisher = (*queue.Publisher)(nil)
)

// TestRunDecidesOnItsOwn drives Run's ticker under synctest: the window
// closes, grace passes, and the verdict comes out without anyone calling
// Tick.
func TestRunDecidesOnItsOwn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st, err := bolt.Open(filepath.Join(t.TempDir(), "s.db"), bolt.Options{SweepInterval: -1})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		b, err := embedded.Open("", queue.StageConfigs(), embedded.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		verdicts := b.Queue(msg.QueueVerdicts)
		agg, err := New(Options{Store: st, Publisher: &sender{q: verdicts}, Window: 2 * time.Second, Grace: 500 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		now := time.Now()
		r := res("", msg.StatusDown, "refused", 0)
		r.Slot, r.StartedAt = now, now
		if _, err := st.AddWindowResult(t.Context(), agg.WindowOf(now), r); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error)
		go func() { done <- agg.Run(ctx) }()
		time.Sleep(5 * time.Second) // fake time inside the bubble
		ms, err := verdicts.Receive(t.Context(), queue.ReceiveInput{Max: 10})
		if err != nil || len(ms) != 1 {
			t.Fatalf("verdicts %d %v after the window closed, want 1", len(ms), err)
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("Run = %v, want nil on cancel", err)
		}
	})
}
