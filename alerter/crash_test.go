package alerter

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/alerter/notify"
	"github.com/mcpmon/mcpmon/pkg/alert"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/msg"
	"github.com/mcpmon/mcpmon/pkg/queue"
)

// TestCrashAtEveryStep kills the alerter (an injected crash: processing stops
// where it is, nothing is released, and a new alerter with another identity
// takes over on the same store) at each step of notifying an incident's open,
// a change event and an owner's update. Both go through the one notify pipeline, so their
// rows name the same ledger steps, and both have one duplicate window: a
// crash between the sink's acceptance and the ledger mark.
func TestCrashAtEveryStep(t *testing.T) { testCrashAtEveryStep(t, newEnv) }

func testCrashAtEveryStep(t *testing.T, newEnv func(*testing.T) *env) {
	testIncidentCrashAtEveryStep(t, newEnv)
	for _, tt := range []struct {
		point string
		sends int
	}{
		{"claimed", 1}, // claim taken, before the send: the lease must lapse first
		{"sent", 2},    // sink accepted, ledger not marked: THE duplicate window
		{"marked", 1},  // ledger done, event not yet unlisted
		{"settled", 1}, // event unlisted
	} {
		t.Run("event-"+tt.point, func(t *testing.T) { testEventCrashAt(t, newEnv(t), tt.point, tt.sends) })
	}
	for _, tt := range []struct {
		point string
		sends int
	}{
		{"adopted", 1}, // notice in the outbox, before the claim
		{"claimed", 1}, // claim taken, before the send: the lease must lapse first
		{"sent", 2},    // sink accepted, ledger not marked: THE duplicate window
		{"marked", 1},  // ledger done, outbox not yet settled
		{"settled", 1}, // outbox settled
	} {
		t.Run("update-"+tt.point, func(t *testing.T) { testUpdateCrashAt(t, newEnv(t), tt.point, tt.sends) })
	}
}

// testIncidentCrashAtEveryStep crashes at each step of handling the verdict
// that opens an incident; the verdict message is not deleted either.
func testIncidentCrashAtEveryStep(t *testing.T, newEnv func(*testing.T) *env) {
	tests := []struct {
		point string
		// sends is how many times the sink receives the open notification.
		sends int
	}{
		{"received", 1}, // after receive, before the state change
		{"applied", 1},  // state change and outbox saved, before the claim
		{"claimed", 1},  // claim taken, before the send: the lease must lapse first
		{"sent", 2},     // sink accepted, ledger not marked: THE duplicate window
		{"marked", 1},   // ledger done, outbox not yet settled
		{"settled", 1},  // everything done, message not deleted
	}
	for _, tt := range tests {
		t.Run(tt.point, func(t *testing.T) {
			e := newEnv(t)
			e.endpoint("ep1", nil, nil)
			dead := e.alerter("replica-1")
			crashed := false
			dead.hook = func(p string) error {
				if p == tt.point && !crashed && e.openingVerdict(t, p) {
					crashed = true
					return fmt.Errorf("at %s: %w", p, notify.ErrCrash)
				}
				return nil
			}
			e.states("ep1", 0, down, down)
			errs := e.pump(dead.Handle)
			if !crashed || len(errs) != 1 {
				t.Fatalf("crash at %s: crashed=%v errors=%v, want one injected crash", tt.point, crashed, errs)
			}

			before := map[string]int{"received": 0, "applied": 0, "claimed": 0, "sent": 1, "marked": 1, "settled": 1}[tt.point]
			if got := len(e.rcv.notifications()); got != before {
				t.Fatalf("before takeover: %d notifications, want %d", got, before)
			}
			next := e.alerter("replica-2")
			// Redeliveries until the message is consumed; the claim of a dead
			// replica lapses after its lease (2m), i.e. within three
			// visibility timeouts.
			for i := 0; ; i++ {
				e.redeliver()
				if errs := e.pump(next.Handle); errs == nil {
					break
				}
				if i == 5 {
					t.Fatalf("message still not consumed after %d redeliveries", i+1)
				}
			}
			if err := next.Sweep(e.ctx); err != nil {
				t.Fatal(err)
			}
			got := e.rcv.notifications()
			if len(got) != tt.sends {
				t.Fatalf("crash at %s: sink got %d open notifications, want %d", tt.point, len(got), tt.sends)
			}
			for _, n := range got {
				if n.Kind != alert.KindOpen || n.Key != got[0].Key || n.IncidentID != got[0].IncidentID {
					t.Fatalf("crash at %s: notifications %+v: a repeat must carry the same key and incident ID", tt.point, got)
				}
			}
			if incs := e.incidents("ep1"); len(incs) != 1 {
				t.Fatalf("%d incidents, want 1", len(incs))
			}

			// The rest of the incident is unaffected: one resolve.
			e.states("ep1", 2, up, up)
			if errs := e.pump(next.Handle); errs != nil {
				t.Fatal(errs)
			}
			if n := e.rcv.notifications(); n[len(n)-1].Kind != alert.KindResolve || len(n) != tt.sends+1 {
				t.Fatalf("after recovery: %v, want one resolve more", e.rcv.kinds())
			}
		})
	}
}

// testEventCrashAt: a replica killed at point of a change event's
// notification; another replica (after the dead one's lease) finishes it.
func testEventCrashAt(t *testing.T, e *env, point string, sends int) {
	e.endpoint("ep", nil, nil)
	sink := &eventSink{name: "hook"}
	sinks := []alert.Sink{alert.Subscribed(sink, []string{model.EventCatalogSecurity})}
	dead := e.alerter("dead", func(o *Options) { o.Sinks = sinks })
	dead.hook = func(p string) error {
		if p == point {
			return fmt.Errorf("at %s: %w", p, notify.ErrCrash)
		}
		return nil
	}
	e.changeEvent("ep", model.EventCatalogSecurity)
	if err := dead.NotifyEvents(e.ctx); !errors.Is(err, notify.ErrCrash) {
		t.Fatalf("crash at %s: err = %v", point, err)
	}
	pending := 1
	if point == "settled" {
		pending = 0
	}
	if n := e.pendingEvents(); n != pending {
		t.Fatalf("after a crash at %s, %d events pending, want %d", point, n, pending)
	}
	before := map[string]int{"claimed": 0, "sent": 1, "marked": 1, "settled": 1}[point]
	if got := len(sink.keys()); got != before {
		t.Fatalf("before takeover: %d deliveries, want %d", got, before)
	}
	e.clk.Advance(DefaultLease + time.Second) // the dead replica's claim lapses
	live := e.alerter("live", func(o *Options) { o.Sinks = sinks })
	for range 3 {
		if err := live.NotifyEvents(e.ctx); err != nil {
			t.Fatal(err)
		}
	}
	got := sink.keys()
	if len(got) != sends {
		t.Fatalf("crash at %s: sink got %d deliveries %v, want %d", point, len(got), got, sends)
	}
	for _, k := range got {
		if k != got[0] {
			t.Fatalf("a repeat carried another key: %v", got)
		}
	}
	if n := e.pendingEvents(); n != 0 {
		t.Fatalf("crash at %s: %d events still pending", point, n)
	}
}

// openingVerdict gates the crash to the verdict that opens the incident (the
// first down verdict passes "received" and "applied" too): before its state
// change the tracker holds one down, after it the open incident.
func (e *env) openingVerdict(t *testing.T, point string) bool {
	tr, err := e.st.GetTracker(e.ctx, "ep1")
	if err != nil {
		t.Fatal(err)
	}
	if point == "received" {
		return tr.OpenIncidentID == "" && len(tr.Recent) == 1
	}
	return tr.OpenIncidentID != ""
}

// TestTwoAlertersRace runs two alerters over the same verdict stream at once
// (each receives every verdict, as after a redelivery to another replica or
// a replay) on one store: exactly one open and one resolve per incident.
func TestTwoAlertersRace(t *testing.T) { testTwoAlertersRace(t, newEnv(t)) }

func testTwoAlertersRace(t *testing.T, e *env) {
	eps := []string{"ep1", "ep2", "ep3", "ep4"}
	var stream []queue.Message
	for _, ep := range eps {
		e.endpoint(ep, nil, nil)
	}
	for i, s := range []msg.State{up, down, down, down, up, down, up, up, up} {
		for _, ep := range eps {
			v := verdict(ep, win(i), s)
			stream = append(stream, queue.Message{ID: v.DedupID(), DedupID: v.DedupID(), GroupID: ep, Body: v.Body()})
		}
	}
	run := func(a *Alerter) error {
		for _, m := range stream {
			for spins := 0; ; spins++ {
				err := a.Handle(context.Background(), m)
				if err == nil {
					break
				}
				if spins > 100000 {
					return fmt.Errorf("%s: %w", m.DedupID, err)
				}
				runtime.Gosched() // the claim holder is alive and finishing
			}
		}
		return nil
	}
	a1, a2 := e.alerter("replica-1"), e.alerter("replica-2")
	var wg sync.WaitGroup
	errs := make([]error, 2)
	wg.Go(func() { errs[0] = run(a1) })
	wg.Go(func() { errs[1] = run(a2) })
	wg.Wait()
	if errs[0] != nil || errs[1] != nil {
		t.Fatal(errs)
	}
	count := map[string]int{}
	for _, n := range e.rcv.notifications() {
		count[n.IncidentID+" "+string(n.Kind)]++
	}
	for _, ep := range eps {
		id := msg.IncidentID(ep, win(2))
		if count[id+" open"] != 1 || count[id+" resolve"] != 1 {
			t.Errorf("endpoint %s: %v, want one open and one resolve of %s", ep, count, id)
		}
	}
	if len(count) != 2*len(eps) {
		t.Errorf("notifications %v, want exactly one incident per endpoint", count)
	}
	// The replica that found the ledger done does not hide the delivery.
	for _, ep := range eps {
		ds, err := e.st.Deliveries(e.ctx, msg.IncidentID(ep, win(2)))
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range ds {
			if d.Outcome != model.DeliveryDelivered || d.Attempts != 1 {
				t.Errorf("endpoint %s: record %+v, want delivered after 1 attempt", ep, d)
			}
		}
		if len(ds) != 2 {
			t.Errorf("endpoint %s: %d records, want open and resolve", ep, len(ds))
		}
	}
}

// TestSinkDownPastMaxReceiveCount: a sink down longer than a verdict's
// redeliveries would last sends nothing to the DLQ (the verdict is consumed
// once folded), and nothing is lost: the notification waits in the outbox
// and the sweep delivers it once the sink is back.
func TestSinkDownPastMaxReceiveCount(t *testing.T) {
	e := newEnv(t)
	e.endpoint("ep1", nil, nil)
	a := e.alerter("a", func(o *Options) { o.RetryAttempts = 2 })
	e.rcv.failNext(slicesRepeat(500, 4*(queue.DefaultMaxReceiveCount+1))...)
	e.states("ep1", 0, down, down)
	e.pump(a.Handle)
	for range queue.DefaultMaxReceiveCount + 1 {
		e.redeliver()
		e.pump(a.Handle)
		_ = a.Sweep(e.ctx)
	}
	dlq, err := e.broker.DLQ(msg.QueueVerdicts).Receive(e.ctx, queue.ReceiveInput{Max: 10})
	if err != nil || len(dlq) != 0 {
		t.Fatalf("DLQ holds %d messages (%v), want none", len(dlq), err)
	}
	if len(e.rcv.notifications()) != 0 {
		t.Fatalf("notifications %v while the sink is down", e.rcv.kinds())
	}
	tr, _ := e.st.GetTracker(e.ctx, "ep1")
	d, _ := decodeData[trackerData](tr.Data, "")
	if len(d.Outbox) != 1 || d.Outbox[0].Attempts == 0 || d.Outbox[0].LastError == "" {
		t.Fatalf("outbox %+v, want the open pending with its attempts and failure reason", d.Outbox)
	}
	e.rcv.mu.Lock()
	e.rcv.fail = nil
	e.rcv.mu.Unlock()
	if err := a.Sweep(e.ctx); err != nil {
		t.Fatal(err)
	}
	if got := e.rcv.kinds(); len(got) != 1 || got[0] != "open" {
		t.Fatalf("alerts %v after the sink recovered, want one open", got)
	}
	// Replaying the DLQ message later is harmless.
	v := verdict("ep1", win(1), down)
	e.publish(v)
	e.pump(a.Handle)
	if got := e.rcv.kinds(); len(got) != 1 {
		t.Fatalf("alerts %v after a DLQ replay, want still one", got)
	}
}

func slicesRepeat(v, n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = v
	}
	return out
}

// TestSweepAndHandlerInOneProcess: the sweep and a queue handler draining
// one outbox at once share an Owner, which the ledger cannot tell apart;
// the per-endpoint drain lock must.
func TestSweepAndHandlerInOneProcess(t *testing.T) {
	for range 20 {
		e := newEnv(t)
		e.endpoint("ep1", nil, nil)
		a := e.alerter("same-owner")
		// Make the opening verdict's state change durable without draining it.
		a.hook = func(p string) error {
			if p == "applied" && e.openingVerdict(t, p) {
				return notify.ErrCrash
			}
			return nil
		}
		e.states("ep1", 0, down, down)
		e.pump(a.Handle)
		a.hook = func(string) error { return nil }
		e.redeliver()
		var wg sync.WaitGroup
		wg.Go(func() { _ = a.Sweep(e.ctx) })
		wg.Go(func() { e.pump(a.Handle) })
		wg.Wait()
		if got := e.rcv.kinds(); len(got) != 1 {
			t.Fatalf("alerts %v, want exactly one open", got)
		}
	}
}
