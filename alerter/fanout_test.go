package alerter

import (
	"net/http"
	"slices"
	"testing"

	"github.com/mcpmon/mcpmon/pkg/alert"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/queue"
)

// TestBrokenSinkDoesNotSilenceOthers: one sink of an endpoint fails
// every call (its receiver is down, answering 503; a permanent refusal
// such as a 400 is given up instead, see TestPermanentFailureIsNotRetried). The outbox is drained in order and stopped at the first
// notification any sink had not taken, so the healthy sink got the first
// open and then nothing: not the resolve, and not the open of the next
// incident. A broken sink must not silence the others; order is kept per
// sink (a sink never gets a resolve before its open).
func TestBrokenSinkDoesNotSilenceOthers(t *testing.T) {
	testBrokenSinkDoesNotSilenceOthers(t, newEnv(t))
}

func TestBrokenSinkDoesNotSilenceOthersRedis(t *testing.T) {
	testBrokenSinkDoesNotSilenceOthers(t, newRedisEnv(t))
}

func testBrokenSinkDoesNotSilenceOthers(t *testing.T, e *env) {
	e.endpoint("ep1", nil, nil)
	broken := newReceiver(t)
	broken.failNext(slices.Repeat([]int{http.StatusServiceUnavailable}, 5000)...)
	a := e.alerter("a", func(o *Options) {
		o.Sinks = []alert.Sink{e.sink, httpSink{name: "broken", url: broken.srv.URL}}
	})
	e.states("ep1", 0, down, down, up, up, down, down)
	// Every verdict fails (the broken sink's notification is left over) and
	// goes through its receives to the DLQ; the sweep keeps draining.
	for i := 0; ; i++ {
		errs := e.pump(a.Handle)
		_ = a.Sweep(e.ctx)
		if errs == nil {
			break
		}
		if i == 200 {
			t.Fatal("verdicts never consumed")
		}
		e.redeliver()
	}
	if got := e.rcv.kinds(); !slices.Equal(got, []string{"open", "resolve", "open"}) {
		t.Fatalf("healthy sink got %v, want [open resolve open] while the other sink is broken", got)
	}
	if got := broken.kinds(); len(got) != 0 {
		t.Fatalf("broken sink accepted %v", got)
	}

	// The broken sink is fixed: it catches up in order, once each.
	broken.mu.Lock()
	broken.fail = nil
	broken.mu.Unlock()
	e.redeliver()
	e.pump(a.Handle)
	if err := a.Sweep(e.ctx); err != nil {
		t.Fatal(err)
	}
	if got := broken.kinds(); !slices.Equal(got, []string{"open", "resolve", "open"}) {
		t.Fatalf("repaired sink got %v, want [open resolve open]", got)
	}
	if got := e.rcv.kinds(); !slices.Equal(got, []string{"open", "resolve", "open"}) {
		t.Fatalf("healthy sink got %v after the repair, want no repeats", got)
	}
}

// TestSinkOutageDoesNotDeadLetterLaterVerdicts: the sink is down for
// longer than ten visibility timeouts. The verdict whose notification failed
// was left in the queue, and the verdicts behind it in its FIFO group are
// received with it on every attempt (as on SQS), so after maxReceiveCount
// the whole backlog went to the DLQ unapplied: the up windows never reached
// the tracker, the incident stayed open and its resolve was never sent. The
// state change is durable before the send and the outbox keeps the
// notification, so a delivery failure must not hold the verdict back.
func TestSinkOutageDoesNotDeadLetterLaterVerdicts(t *testing.T) {
	testSinkOutageDoesNotDeadLetterLaterVerdicts(t, newEnv(t))
}

func TestSinkOutageDoesNotDeadLetterLaterVerdictsRedis(t *testing.T) {
	testSinkOutageDoesNotDeadLetterLaterVerdicts(t, newRedisEnv(t))
}

func testSinkOutageDoesNotDeadLetterLaterVerdicts(t *testing.T, e *env) {
	e.endpoint("ep1", nil, nil)
	a := e.alerter("a", func(o *Options) { o.RetryAttempts = 1 })
	e.rcv.failNext(slices.Repeat([]int{http.StatusServiceUnavailable}, 25)...)
	e.states("ep1", 0, down, down, up, up)
	for range 30 { // 61s each: the sink is down for about 20 minutes
		e.pump(a.Handle)
		_ = a.Sweep(e.ctx)
		e.redeliver()
	}
	if dl, err := e.broker.DLQ("verdicts").Receive(e.ctx, queue.ReceiveInput{Max: queue.MaxBatch}); err != nil || len(dl) != 0 {
		t.Errorf("%d verdicts dead-lettered (%v), want none", len(dl), err)
	}
	incs := e.incidents("ep1")
	if len(incs) != 1 || incs[0].State != model.IncidentResolved {
		t.Fatalf("incidents %+v, want one, resolved", incs)
	}
	if got := e.rcv.kinds(); !slices.Equal(got, []string{"open", "resolve"}) {
		t.Fatalf("alerts %v once the sink is back, want [open resolve]", got)
	}
}
