package alerter

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/alert"
)

// interleavingStore runs between once, the first time the outbox index is
// written, after the write and before the call returns: the point where
// another replica's sweep can run between apply's index write and its
// SaveTracker. It only orders real store calls; no behaviour is faked.
type interleavingStore struct {
	Store
	between func()
}

func (s *interleavingStore) PutObject(ctx context.Context, kind, id string, doc []byte) error {
	err := s.Store.PutObject(ctx, kind, id, doc)
	if kind == OutboxKind && s.between != nil {
		f := s.between
		s.between = nil
		f()
	}
	return err
}

// TestReviewOutboxIndexSurvivesConcurrentSweep: a sweep (here another
// replica's) that finds the outbox empty drops the index entry, re-reads the
// tracker, and sees it still empty because apply has written the index but
// not yet the tracker. The open that apply then saves is deferred by
// maintenance; with no index entry, no sweep ever visits it again, and if
// no further verdict comes (the endpoint was paused for the maintenance)
// the incident that opened during maintenance never alerts at its end.
func TestReviewOutboxIndexSurvivesConcurrentSweep(t *testing.T) {
	testOutboxIndexSurvivesConcurrentSweep(t, newEnv(t))
}

func TestReviewOutboxIndexSurvivesConcurrentSweepRedis(t *testing.T) {
	testOutboxIndexSurvivesConcurrentSweep(t, newRedisEnv(t))
}

func testOutboxIndexSurvivesConcurrentSweep(t *testing.T, e *env) {
	e.endpoint("ep1", nil, nil)
	other := e.alerter("b")
	is := &interleavingStore{Store: e.st}
	a := e.alerter("a", func(o *Options) { o.Store = is })
	is.between = func() {
		if err := other.Sweep(e.ctx); err != nil {
			t.Error(err)
		}
	}
	e.maintenance(alert.Maintenance{ID: "m1", EndpointIDs: []string{"ep1"}, Start: win(1), End: win(5)})
	e.step(a, "ep1", 0, down, down) // opens at window 1, inside maintenance
	if got := e.rcv.kinds(); len(got) != 0 {
		t.Fatalf("alerts %v during maintenance, want none", got)
	}
	// No more verdicts (endpoint paused); the window ends; sweeps run.
	e.clk.Set(win(5).Add(time.Second))
	for _, al := range []*Alerter{a, other} {
		if err := al.Sweep(e.ctx); err != nil {
			t.Fatal(err)
		}
	}
	if got := e.rcv.kinds(); !slices.Equal(got, []string{"open"}) {
		t.Fatalf("alerts %v after the maintenance window, want [open]: the deferred open lost its outbox index", got)
	}
}
