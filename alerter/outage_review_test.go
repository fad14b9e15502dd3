package alerter

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/alert"
	"github.com/mcpmon/mcpmon/pkg/clock"
	"github.com/mcpmon/mcpmon/pkg/queue"
	"github.com/mcpmon/mcpmon/pkg/store"
)

// outageStore makes the store unreachable until the clock reaches back, the
// way the Redis store reports it (store.ErrUnavailable). Stopping a real
// redis-server would do the same but cannot end the outage at a fake-clock
// instant.
type outageStore struct {
	Store
	clk  clock.Clock
	back time.Time
}

func (s *outageStore) down(op string) error {
	if s.clk.Now().Before(s.back) {
		return fmt.Errorf("redis store: %s: %w: connection refused", op, store.ErrUnavailable)
	}
	return nil
}

func (s *outageStore) GetEndpoint(ctx context.Context, id string) (store.Endpoint, error) {
	if err := s.down("get endpoint"); err != nil {
		return store.Endpoint{}, err
	}
	return s.Store.GetEndpoint(ctx, id)
}

func (s *outageStore) GetTracker(ctx context.Context, id string) (store.Tracker, error) {
	if err := s.down("get tracker"); err != nil {
		return store.Tracker{}, err
	}
	return s.Store.GetTracker(ctx, id)
}

// TestReviewStoreOutageDoesNotDeadLetterVerdicts: Redis is down for 20
// minutes while an endpoint goes down and comes back. Each verdict failed
// with ErrUnavailable and was left for redelivery, so with a 60s visibility
// timeout every verdict queued in the outage reached maxReceiveCount within
// about ten minutes and went to the DLQ — the README promises they are
// "redelivered and processed when Redis returns". Here the outage spans the
// whole incident, which was never alerted.
func TestReviewStoreOutageDoesNotDeadLetterVerdicts(t *testing.T) {
	e := newEnv(t)
	e.endpoint("ep1", nil, nil)
	a := e.alerter("a", func(o *Options) {
		o.Store = &outageStore{Store: e.st, clk: e.clk, back: t0.Add(20 * time.Minute)}
	})
	e.states("ep1", 0, up, down, down, down, up, up)
	for range 30 { // 61s each: past the outage
		e.pump(a.Handle)
		e.redeliver()
	}
	e.pump(a.Handle)
	if dl, err := e.broker.DLQ("verdicts").Receive(e.ctx, queue.ReceiveInput{Max: queue.MaxBatch}); err != nil || len(dl) != 0 {
		t.Errorf("%d verdicts dead-lettered (%v), want none", len(dl), err)
	}
	if got := e.rcv.kinds(); !slices.Equal(got, []string{"open", "resolve"}) {
		t.Fatalf("alerts %v, want [open resolve] once the store is back", got)
	}
}

// TestReviewDrainFailureDoesNotDeadLetterVerdicts: the endpoint's sinks
// cannot be resolved for a while (SinksFor fails: a per-endpoint sink
// config this build cannot parse, a secret not yet mounted). The verdicts
// are folded before the drain, so failing them only holds back the FIFO
// group and, after maxReceiveCount, sends the verdicts behind them to the
// DLQ unapplied; the outbox and the sweep already retry the drain.
func TestReviewDrainFailureDoesNotDeadLetterVerdicts(t *testing.T) {
	e := newEnv(t)
	e.endpoint("ep1", nil, nil)
	fixed := t0.Add(20 * time.Minute)
	a := e.alerter("a", func(o *Options) {
		o.SinksFor = func(_ context.Context, ep store.Endpoint) ([]alert.Sink, error) {
			if e.clk.Now().Before(fixed) {
				return nil, errors.New("sinks of endpoint " + ep.ID + ": unknown sink type")
			}
			return []alert.Sink{e.sink}, nil
		}
	})
	e.states("ep1", 0, up, down, down, down, up, up)
	for range 30 { // 61s each: past the fix
		e.pump(a.Handle)
		_ = a.Sweep(e.ctx)
		e.redeliver()
	}
	if dl, err := e.broker.DLQ("verdicts").Receive(e.ctx, queue.ReceiveInput{Max: queue.MaxBatch}); err != nil || len(dl) != 0 {
		t.Errorf("%d verdicts dead-lettered (%v), want none", len(dl), err)
	}
	if incs := e.incidents("ep1"); len(incs) != 1 || incs[0].State != store.IncidentResolved {
		t.Fatalf("incidents %+v, want one, resolved", incs)
	}
	if got := e.rcv.kinds(); !slices.Equal(got, []string{"open", "resolve"}) {
		t.Fatalf("alerts %v, want [open resolve] once the sinks resolve", got)
	}
}
