package alerter

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/mcpmon/mcpmon/alerter/notify"
	"github.com/mcpmon/mcpmon/pkg/alert"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/msg"
)

// TestFailingSinkBacksOffThenGivesUp: a sink that fails every call is not
// called by every drain: sweeps every 30s for a day of fake time call it a
// few dozen times (the per-sink backoff), then the incident's record says
// gave_up, the metric counts one, the notification leaves the outbox and no
// later sweep calls the sink. The state is in the outbox, so a new
// Alerter (a restart) keeps the wait instead of calling at once.
func TestFailingSinkBacksOffThenGivesUp(t *testing.T) {
	e := newEnv(t)
	e.endpoint("ep1", nil, nil)
	a := e.alerter("a", func(o *Options) { o.RetryAttempts = 1; o.GiveUpAfter = notify.DefaultGiveUpAfter })
	e.rcv.failNext(make500s(100000)...)
	e.states("ep1", 0, down, down)
	if errs := e.pump(a.Handle); errs != nil {
		t.Fatal(errs)
	}
	if e.rcv.hits != 1 {
		t.Fatalf("first drain called the sink %d times, want 1", e.rcv.hits)
	}
	// A restart right away: the new process reads the wait from the outbox.
	a = e.alerter("a", func(o *Options) { o.RetryAttempts = 1; o.GiveUpAfter = notify.DefaultGiveUpAfter })
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
	if elapsed < notify.DefaultGiveUpAfter || elapsed > notify.DefaultGiveUpAfter+time.Hour {
		t.Fatalf("gave up after %s, want about %s", elapsed, notify.DefaultGiveUpAfter)
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
		o.Metrics, o.RetryAttempts, o.GiveUpAfter = m, 1, notify.DefaultGiveUpAfter
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
	if elapsed := e.clk.Now().Sub(t0); elapsed < notify.DefaultGiveUpAfter || elapsed > notify.DefaultGiveUpAfter+time.Hour {
		t.Fatalf("given up after %s, want about %s", elapsed, notify.DefaultGiveUpAfter)
	}
	if n := len(s.keys()); n > 45 {
		t.Fatalf("the sink was called %d times over %d runs; want the backoff's few dozen", n, runs)
	}
	if got := testutil.ToFloat64(m.GivenUp.WithLabelValues("down")); got != 1 {
		t.Fatalf("deliveries_given_up_total{sink=down} = %v, want 1", got)
	}
}
