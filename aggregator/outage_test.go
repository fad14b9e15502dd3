package aggregator

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/msg"
	"github.com/mcpmon/mcpmon/pkg/queue"
	"github.com/mcpmon/mcpmon/pkg/store"
)

// outageStore fails the calls the aggregator makes with ErrUnavailable
// while down is set, like the Redis store during an outage.
type outageStore struct {
	store.Store
	down atomic.Bool
}

func (o *outageStore) AddWindowResult(ctx context.Context, w time.Time, r msg.ProbeResult) (bool, error) {
	if o.down.Load() {
		return false, store.ErrUnavailable
	}
	return o.Store.AddWindowResult(ctx, w, r)
}

func (o *outageStore) OpenWindows(ctx context.Context, before time.Time) ([]store.WindowRef, error) {
	if o.down.Load() {
		return nil, store.ErrUnavailable
	}
	return o.Store.OpenWindows(ctx, before)
}

func (o *outageStore) OpenWindowsIn(ctx context.Context, before time.Time, shards []int) ([]store.WindowRef, error) {
	if o.down.Load() {
		return nil, store.ErrUnavailable
	}
	return o.Store.OpenWindowsIn(ctx, before, shards)
}

// TestStoreOutageHoldsDecisions: results that arrived during a store outage
// are held in flight and folded only after it ends. Until then, for Settle
// after the store returns, no window is decided, so the window is judged on
// the held down result instead of the up result from before the outage.
func TestStoreOutageHoldsDecisions(t *testing.T) {
	e := newNoDataEnv(t)
	const timeout = 2 * time.Second
	e.create("ep", "@every 30s", func(ep *model.Endpoint) { ep.Timeout = timeout })
	st := &outageStore{Store: e.st}
	agg, err := New(Options{Store: st, Publisher: e.pub, Window: time.Minute, Grace: 10 * time.Second, Settle: 15 * time.Second, Clock: e.clk})
	if err != nil {
		t.Fatal(err)
	}
	sl, _ := agg.slots.get(model.Endpoint{ID: "ep", Schedule: "@every 30s"})
	first := sl.Next(w0.Add(-time.Nanosecond))
	second := sl.Next(first)

	up := hungResult("ep", first, 0)
	up.Status, up.Class = msg.StatusUp, "ok"
	e.clk.Set(first)
	if err := agg.Handle(e.ctx, resultMessage(up)); err != nil {
		t.Fatal(err)
	}
	st.down.Store(true)
	down := hungResult("ep", second, timeout)
	e.clk.Set(second.Add(timeout))
	if err := agg.Handle(e.ctx, resultMessage(down)); err == nil {
		t.Fatal("Handle during the outage = nil, want the store error (message held)")
	}
	end := w0.Add(time.Minute + 10*time.Second + timeout)
	e.clk.Set(end)
	if err := agg.Tick(e.ctx); err == nil {
		t.Fatal("Tick during the outage = nil, want the store error")
	}

	st.down.Store(false) // back; the held result is not folded yet
	e.clk.Set(end.Add(time.Second))
	if err := agg.Tick(e.ctx); err != nil {
		t.Fatal(err)
	}
	if vs := e.published(); len(vs) != 0 {
		t.Fatalf("decided %+v right after the outage, before the held results were folded", vs)
	}
	if err := agg.Handle(e.ctx, resultMessage(down)); err != nil { // the consumer's retry
		t.Fatal(err)
	}
	e.clk.Set(end.Add(16 * time.Second))
	if err := agg.Tick(e.ctx); err != nil {
		t.Fatal(err)
	}
	vs := e.published()
	if len(vs) != 1 || vs[0].State != msg.StateDown {
		t.Fatalf("published %+v, want one down verdict judged on the held result", vs)
	}
}

func resultMessage(r msg.ProbeResult) queue.Message {
	return queue.Message{ID: r.ProbeRunID, GroupID: r.GroupID(), DedupID: r.DedupID(), Body: r.Body()}
}
