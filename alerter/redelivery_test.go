package alerter

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/mcpmon/mcpmon/pkg/alert"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/msg"
)

// TestRedeliveryRule: the wait doubles from the initial one to the cap,
// jitter keeps it in [w/2, w], the last try falls on the give-up deadline
// and a failure at or after it gives up.
func TestRedeliveryRule(t *testing.T) {
	r := newRedelivery(DefaultGiveUpAfter)
	if r.initial != 30*time.Second || r.max != time.Hour {
		t.Fatalf("defaults for 24h: %+v", r)
	}
	start := t0
	cases := []struct {
		name     string
		failures int // already recorded
		since    time.Duration
		jitter   float64
		wantWait time.Duration
		gaveUp   bool
	}{
		{"first failure, no jitter", 0, 0, 0, 15 * time.Second, false},
		{"first failure, full jitter", 0, 0, 0.999999999, 30 * time.Second, false},
		{"third failure", 2, 5 * time.Minute, 1, 2 * time.Minute, false},
		{"capped", 20, 10 * time.Hour, 1, time.Hour, false},
		{"capped, low jitter", 20, 10 * time.Hour, 0, 30 * time.Minute, false},
		{"last try falls on the deadline", 30, 23*time.Hour + 50*time.Minute, 1, 10 * time.Minute, false},
		{"at the deadline", 31, 24 * time.Hour, 0, 0, true},
		{"past the deadline", 31, 30 * time.Hour, 0, 0, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := sinkRetry{Failures: c.failures}
			if c.failures > 0 {
				s.FirstFailedAt = start
			}
			now := start.Add(c.since)
			got, gaveUp := r.afterFailure(s, start, now, c.jitter)
			if gaveUp != c.gaveUp {
				t.Fatalf("gaveUp = %v, want %v", gaveUp, c.gaveUp)
			}
			if got.Failures != c.failures+1 || !got.FirstFailedAt.Equal(start) {
				t.Fatalf("state %+v: want failures %d since %s", got, c.failures+1, start)
			}
			if !gaveUp {
				if w := got.NextAt.Sub(now); w < c.wantWait-time.Second || w > c.wantWait {
					t.Fatalf("wait %s, want %s", w, c.wantWait)
				}
				if r.due(got, got.NextAt.Add(-time.Nanosecond)) || !r.due(got, got.NextAt) {
					t.Fatalf("due around NextAt %s is wrong", got.NextAt)
				}
			}
		})
	}
	// A restart's future origin (clock skew) starts the clock at now.
	if s, _ := r.afterFailure(sinkRetry{}, start.Add(time.Hour), start, 0); !s.FirstFailedAt.Equal(start) {
		t.Fatalf("future origin: FirstFailedAt %s, want now", s.FirstFailedAt)
	}
	// Scaled down: a give-up age of 2s still gets about a dozen tries.
	if small := newRedelivery(2 * time.Second); small.initial != 125*time.Millisecond || small.max != 500*time.Millisecond {
		t.Fatalf("2s: %+v", small)
	}
}

// TestFailingSinkBacksOffThenGivesUp: a sink that fails every call is not
// called by every drain: sweeps every 30s for a day of fake time call it a
// few dozen times (the per-sink backoff), then the incident's record says
// gave_up, the metric counts one, the notification leaves the outbox and no
// later sweep calls the sink. The state is in the outbox, so a new
// Alerter (a restart) keeps the wait instead of calling at once.
func TestFailingSinkBacksOffThenGivesUp(t *testing.T) {
	e := newEnv(t)
	e.endpoint("ep1", nil, nil)
	a := e.alerter("a", func(o *Options) { o.RetryAttempts = 1; o.GiveUpAfter = DefaultGiveUpAfter })
	e.rcv.failNext(make500s(100000)...)
	e.states("ep1", 0, down, down)
	if errs := e.pump(a.Handle); errs != nil {
		t.Fatal(errs)
	}
	if e.rcv.hits != 1 {
		t.Fatalf("first drain called the sink %d times, want 1", e.rcv.hits)
	}
	// A restart right away: the new process reads the wait from the outbox.
	a = e.alerter("a", func(o *Options) { o.RetryAttempts = 1; o.GiveUpAfter = DefaultGiveUpAfter })
	if err := a.Sweep(e.ctx); err != nil {
		t.Fatal(err)
	}
	if e.rcv.hits != 1 {
		t.Fatalf("a sweep right after a restart called the sink again (%d calls): the backoff was reset", e.rcv.hits)
	}
	inc := msg.IncidentID("ep1", win(1))
	sweeps := 0
	for e.delivery(inc).Outcome != model.DeliveryGaveUp {
		if sweeps++; sweeps > 3000 {
			t.Fatalf("no give-up after %d sweeps (%d calls)", sweeps, e.rcv.hits)
		}
		e.clk.Advance(DefaultSweepInterval)
		_ = a.Sweep(e.ctx)
	}
	elapsed := e.clk.Now().Sub(t0)
	if elapsed < DefaultGiveUpAfter || elapsed > DefaultGiveUpAfter+time.Hour {
		t.Fatalf("gave up after %s, want about %s", elapsed, DefaultGiveUpAfter)
	}
	if e.rcv.hits > 45 {
		t.Fatalf("the sink was called %d times in %s; want the backoff's few dozen, not one per sweep (%d)", e.rcv.hits, elapsed, sweeps)
	}
	if got := testutil.ToFloat64(a.m.GivenUp.WithLabelValues("hook")); got != 1 {
		t.Fatalf("deliveries_given_up_total{sink=hook} = %v, want 1", got)
	}
	tr, _ := e.st.GetTracker(e.ctx, "ep1")
	if d, _ := decodeData[trackerData](tr.Data, ""); len(d.Outbox) != 0 || tr.Pending != 0 {
		t.Fatalf("outbox %+v after giving up, want empty", d.Outbox)
	}
	hits := e.rcv.hits
	for range 10 {
		e.clk.Advance(time.Hour)
		_ = a.Sweep(e.ctx)
	}
	if e.rcv.hits != hits {
		t.Fatalf("the sink was called %d more times after giving up", e.rcv.hits-hits)
	}
}

func make500s(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = 500
	}
	return out
}

// failingEventSink is an event sink that fails every call and counts them.
type failingEventSink struct{ eventSink }

func (s *failingEventSink) NotifyEvent(context.Context, alert.EventNotification) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.got = append(s.got, "call")
	return errors.New("503")
}

// TestFailingEventSinkBacksOffThenGivesUp: change events follow the same
// rule as incidents: a sink failing every call is called a few dozen times
// in a day of runs every 5s, then the event is given up for it (counted,
// its ledger key done, the event unlisted) and never sent again.
func TestFailingEventSinkBacksOffThenGivesUp(t *testing.T) {
	e := newEnv(t)
	e.endpoint("ep", nil, nil)
	s := &failingEventSink{eventSink{name: "down"}}
	m := NewMetrics(nil, nil)
	a := e.alerter("a", func(o *Options) {
		o.Sinks = []alert.Sink{alert.Subscribed(s, []string{model.EventVersion})}
		o.Metrics, o.RetryAttempts, o.GiveUpAfter = m, 1, DefaultGiveUpAfter
	})
	e.changeEvent("ep", model.EventVersion)
	runs := 0
	for e.pendingEvents() > 0 {
		if runs++; runs > 20000 {
			t.Fatalf("still pending after %d runs (%d calls)", runs, len(s.keys()))
		}
		_ = a.NotifyEvents(e.ctx)
		e.clk.Advance(DefaultEventInterval)
	}
	if elapsed := e.clk.Now().Sub(t0); elapsed < DefaultGiveUpAfter || elapsed > DefaultGiveUpAfter+time.Hour {
		t.Fatalf("given up after %s, want about %s", elapsed, DefaultGiveUpAfter)
	}
	if n := len(s.keys()); n > 45 {
		t.Fatalf("the sink was called %d times over %d runs; want the backoff's few dozen", n, runs)
	}
	if got := testutil.ToFloat64(m.GivenUp.WithLabelValues("down")); got != 1 {
		t.Fatalf("deliveries_given_up_total{sink=down} = %v, want 1", got)
	}
}
