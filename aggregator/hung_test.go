package aggregator

import (
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/msg"
)

// hungResult is endpoint id's result for slot, reported at slot + timeout
// as the prober does for a target that never answers.
func hungResult(id string, slot time.Time, timeout time.Duration) msg.ProbeResult {
	return msg.ProbeResult{
		Schema: msg.SchemaVersion, EndpointID: id, ProbeRunID: msg.ProbeRunID(id, slot),
		Slot: slot, StartedAt: slot, FinishedAt: slot.Add(timeout),
		Status: msg.StatusDown, Class: "timeout",
	}
}

// TestHungServerIsDown: the probe of a window's last slot against a hung
// target reports only at slot + timeout, after the window's end plus grace.
// The window waits for it instead of being decided without it, so the
// verdict is down, not up on the window's earlier results or no_data.
func TestHungServerIsDown(t *testing.T) {
	e := newNoDataEnv(t)
	const timeout = 2 * time.Second
	e.create("hung", "@every 2s", func(ep *model.Endpoint) { ep.Timeout = timeout })
	ep, err := e.st.GetEndpoint(e.ctx, "hung")
	if err != nil {
		t.Fatal(err)
	}
	sl, _ := e.agg.slots.get(ep)

	// The window's earlier probes answered; the target hangs from its
	// last slot on.
	first := sl.Next(w0.Add(-time.Nanosecond))
	up := hungResult("hung", first, 0)
	up.Status, up.Class = msg.StatusUp, "ok"
	e.sendResult(up)
	e.consume()
	end := w0.Add(time.Minute)
	last := end.Add(-timeout)
	for s := sl.Next(last.Add(-time.Nanosecond)); s.Before(end); s = sl.Next(s) {
		last = s
	}

	// Grace is over but the last slot's probe may still be running.
	e.tickAt(end.Add(10 * time.Second))
	if vs := e.published(); len(vs) != 0 {
		t.Fatalf("decided %+v while the last slot's probe could still be running", vs)
	}
	e.clk.Set(last.Add(timeout))
	e.sendResult(hungResult("hung", last, timeout))
	e.consume()
	e.tickAt(end.Add(10*time.Second + timeout))
	vs := e.published()
	if len(vs) != 1 || vs[0].State != msg.StateDown || vs[0].Class != "timeout" {
		t.Fatalf("published %+v, want one down verdict decided by the timeout", vs)
	}
}

// TestWindowWithoutLateSlotDecidedAtGrace: when no slot falls in the
// window's last probe-timeout, nothing can still be running at its end, so
// the window is decided at end + grace as before.
func TestWindowWithoutLateSlotDecidedAtGrace(t *testing.T) {
	e := newNoDataEnv(t)
	e.create("hourly", "5 * * * *", func(ep *model.Endpoint) { ep.Timeout = 10 * time.Second })
	r := hungResult("hourly", w0.Add(5*time.Minute), 0)
	r.Status, r.Class = msg.StatusUp, "ok"
	e.clk.Set(w0.Add(5 * time.Minute))
	e.sendResult(r)
	e.consume()
	e.tickAt(w0.Add(6*time.Minute + 10*time.Second))
	if vs := e.published(); len(vs) != 1 || vs[0].State != msg.StateUp {
		t.Fatalf("published %+v, want the window decided up at end + grace", vs)
	}
}

// TestOpenWindowReadsItsEndpointOnceUntilDue: an open window waiting for
// its decision time is not a reason to read its endpoint on every tick
// (at 10,000 endpoints that was five endpoint reads per probe). Before
// end + grace nothing is read; after it, the first read gives the
// decision time and later ticks wait for it without reading; the window
// is still decided at that time, down by the hung probe's timeout.
func TestOpenWindowReadsItsEndpointOnceUntilDue(t *testing.T) {
	e, cs := newCountingEnv(t)
	const timeout = 20 * time.Second
	e.create("hung", "@every 2s", func(ep *model.Endpoint) { ep.Timeout = timeout })
	up := hungResult("hung", w0, 0)
	up.Status, up.Class = msg.StatusUp, "ok"
	e.sendResult(up)
	e.consume()
	end := w0.Add(time.Minute)
	due := end.Add(10*time.Second + timeout) // grace 10 s, then the last slot's timeout

	before := cs.gets.Load()
	for at := w0.Add(time.Second); at.Before(end.Add(10 * time.Second)); at = at.Add(time.Second) {
		e.tickAt(at)
	}
	if n := cs.gets.Load() - before; n != 0 {
		t.Fatalf("%d endpoint reads before the window's end + grace; want none", n)
	}
	for at := end.Add(10 * time.Second); at.Before(due); at = at.Add(time.Second) {
		e.tickAt(at)
	}
	if n := cs.gets.Load() - before; n != 1 {
		t.Fatalf("%d endpoint reads between end + grace and the decision time; want 1", n)
	}
	if vs := e.published(); len(vs) != 0 {
		t.Fatalf("decided %+v before the last slot's probe could have timed out", vs)
	}
	e.clk.Set(due.Add(-time.Second))
	e.sendResult(hungResult("hung", end.Add(-2*time.Second), timeout))
	e.consume()
	e.tickAt(due)
	if vs := e.published(); len(vs) != 1 || vs[0].State != msg.StateDown {
		t.Fatalf("published %+v at the decision time, want one down verdict", vs)
	}
}
