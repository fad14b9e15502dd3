package alerter

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/model"
)

// interleavingStore runs between once, just before the first SaveTracker
// that leaves an outbox non-empty: the point where another replica's sweep
// runs between a verdict's state change being decided and being written.
// It only orders real store calls; no behaviour is faked.
type interleavingStore struct {
	Store
	between func()
}

func (s *interleavingStore) SaveTracker(ctx context.Context, t model.Tracker, incs ...model.Incident) error {
	if t.Pending > 0 && s.between != nil {
		f := s.between
		s.between = nil
		f()
	}
	return s.Store.SaveTracker(ctx, t, incs...)
}

// TestDeferredOpenSurvivesConcurrentSweep: an open deferred by maintenance
// is delivered at the window's end by the sweep alone (no further verdict:
// the endpoint was paused), even when another replica's sweep ran, and
// found the outbox empty, while the verdict that opened the incident was
// being saved. The pending-outbox index is written by SaveTracker with the
// outbox, so no sweep can unlist an outbox it has not seen.
func TestDeferredOpenSurvivesConcurrentSweep(t *testing.T) {
	testDeferredOpenSurvivesConcurrentSweep(t, newEnv(t))
}

func TestDeferredOpenSurvivesConcurrentSweepRedis(t *testing.T) {
	testDeferredOpenSurvivesConcurrentSweep(t, newRedisEnv(t))
}

func testDeferredOpenSurvivesConcurrentSweep(t *testing.T, e *env) {
	e.endpoint("ep1", nil, nil)
	other := e.alerter("b")
	is := &interleavingStore{Store: e.st}
	a := e.alerter("a", func(o *Options) { o.Store = is })
	is.between = func() {
		if err := other.Sweep(e.ctx); err != nil {
			t.Error(err)
		}
	}
	e.maintenance(model.Maintenance{ID: "m1", EndpointIDs: []string{"ep1"}, Start: win(1), End: win(5)})
	e.step(a, "ep1", 0, down, down) // opens at window 1, inside maintenance
	if got := e.rcv.kinds(); len(got) != 0 {
		t.Fatalf("alerts %v during maintenance, want none", got)
	}
	if ids, err := e.st.PendingOutboxes(e.ctx); err != nil || !slices.Equal(ids, []string{"ep1"}) {
		t.Fatalf("pending outboxes %v %v, want [ep1] while the open is deferred", ids, err)
	}
	e.clk.Set(win(5).Add(time.Second))
	for _, al := range []*Alerter{a, other} {
		if err := al.Sweep(e.ctx); err != nil {
			t.Fatal(err)
		}
	}
	if got := e.rcv.kinds(); !slices.Equal(got, []string{"open"}) {
		t.Fatalf("alerts %v after the maintenance window, want [open]", got)
	}
	if ids, err := e.st.PendingOutboxes(e.ctx); err != nil || len(ids) != 0 {
		t.Fatalf("pending outboxes %v %v after delivery, want none", ids, err)
	}
}

// TestOutboxListedByThePreviousReleaseIsSwept: a store written before the
// store kept the pending-outbox index lists an outbox only in the alerter's
// old index object. The sweep moves it into the store's index, so the
// deferred open is still delivered after the upgrade, and the old object
// is gone.
func TestOutboxListedByThePreviousReleaseIsSwept(t *testing.T) {
	e := newEnv(t)
	e.endpoint("ep1", nil, nil)
	e.maintenance(model.Maintenance{ID: "m1", EndpointIDs: []string{"ep1"}, Start: win(1), End: win(5)})
	e.step(e.alerter("old"), "ep1", 0, down, down) // opens inside maintenance: deferred
	// What the previous release left: no pending count, an index object.
	tr, err := e.st.GetTracker(e.ctx, "ep1")
	if err != nil {
		t.Fatal(err)
	}
	tr.Pending = 0
	if err := e.st.SaveTracker(e.ctx, tr); err != nil {
		t.Fatal(err)
	}
	if err := e.st.PutObject(e.ctx, legacyOutboxKind, "ep1", []byte("{}")); err != nil {
		t.Fatal(err)
	}
	if ids, _ := e.st.PendingOutboxes(e.ctx); len(ids) != 0 {
		t.Fatalf("pending outboxes %v, want none listed (the old release's store)", ids)
	}

	e.clk.Set(win(5).Add(time.Second))
	if err := e.alerter("new").Sweep(e.ctx); err != nil {
		t.Fatal(err)
	}
	if got := e.rcv.kinds(); !slices.Equal(got, []string{"open"}) {
		t.Fatalf("alerts %v after the upgrade and the window's end, want [open]", got)
	}
	if docs, _ := e.st.ListObjects(e.ctx, legacyOutboxKind); len(docs) != 0 {
		t.Fatalf("old outbox index still has %v", docs)
	}
}
