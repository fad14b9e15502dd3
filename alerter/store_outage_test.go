package alerter

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/alert"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/msg"
	"github.com/mcpmon/mcpmon/pkg/queue"
	"github.com/mcpmon/mcpmon/pkg/store"
)

// outageStore makes the store unreachable while down() says so, the way the
// Redis store reports it (store.ErrUnavailable). Stopping a real
// redis-server would do the same but cannot end the outage at an exact
// point.
type outageStore struct {
	Store
	down func() bool
}

func (s *outageStore) check(op string) error {
	if s.down() {
		return fmt.Errorf("redis store: %s: %w: connection refused", op, store.ErrUnavailable)
	}
	return nil
}

func (s *outageStore) GetEndpoint(ctx context.Context, id string) (model.Endpoint, error) {
	if err := s.check("get endpoint"); err != nil {
		return model.Endpoint{}, err
	}
	return s.Store.GetEndpoint(ctx, id)
}

func (s *outageStore) GetTracker(ctx context.Context, id string) (model.Tracker, error) {
	if err := s.check("get tracker"); err != nil {
		return model.Tracker{}, err
	}
	return s.Store.GetTracker(ctx, id)
}

// TestStoreOutageDoesNotDeadLetterVerdicts: the store is down while
// an endpoint goes down and comes back. Failing each verdict with
// ErrUnavailable and leaving it for redelivery walked every verdict queued
// in a long outage to the DLQ within maxReceiveCount visibility timeouts,
// and the incident was never alerted. Handle reports the outage as
// store.ErrUnavailable and the consumer, told it is transient, holds the
// message in flight and retries it in place: every verdict is applied on
// its first receive once the store is back.
func TestStoreOutageDoesNotDeadLetterVerdicts(t *testing.T) {
	e := newEnv(t)
	e.endpoint("ep1", nil, nil)
	var reads atomic.Int32
	a := e.alerter("a", func(o *Options) {
		// Down for the first 8 reads: several retries of the first verdict.
		o.Store = &outageStore{Store: e.st, down: func() bool { return reads.Add(1) <= 8 }}
	})
	states := []msg.State{up, down, down, down, up, up}
	e.states("ep1", 0, states...)

	ctx, cancel := context.WithTimeout(e.ctx, 20*time.Second)
	defer cancel()
	var handled []int
	h := func(ctx context.Context, m queue.Message) error {
		err := a.Handle(ctx, m)
		if err == nil {
			handled = append(handled, m.ReceiveCount)
			if len(handled) == len(states) {
				cancel()
			}
		}
		return err
	}
	err := queue.Consume(ctx, e.q, h, queue.ConsumerOptions{
		Concurrency: 1, Clock: e.clk, TransientBackoff: time.Millisecond, DeleteDelay: time.Millisecond,
		Transient: func(err error) bool { return errors.Is(err, store.ErrUnavailable) },
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(handled, []int{1, 1, 1, 1, 1, 1}) {
		t.Fatalf("receive counts of the handled verdicts = %v, want all six applied on their first receive", handled)
	}
	if reads.Load() <= 8 {
		t.Fatalf("the store was read %d times: the outage never happened", reads.Load())
	}
	if dl, err := e.broker.DLQ("verdicts").Receive(e.ctx, queue.ReceiveInput{Max: queue.MaxBatch}); err != nil || len(dl) != 0 {
		t.Errorf("%d verdicts dead-lettered (%v), want none", len(dl), err)
	}
	if got := e.rcv.kinds(); !slices.Equal(got, []string{"open", "resolve"}) {
		t.Fatalf("alerts %v, want [open resolve] once the store is back", got)
	}
}

// TestDrainFailureDoesNotDeadLetterVerdicts: the endpoint's sinks
// cannot be resolved for a while (SinksFor fails: a per-endpoint sink
// config this build cannot parse, a secret not yet mounted). The verdicts
// are folded before the drain, so failing them only holds back the FIFO
// group and, after maxReceiveCount, sends the verdicts behind them to the
// DLQ unapplied; the outbox and the sweep already retry the drain.
func TestDrainFailureDoesNotDeadLetterVerdicts(t *testing.T) {
	e := newEnv(t)
	e.endpoint("ep1", nil, nil)
	fixed := t0.Add(20 * time.Minute)
	a := e.alerter("a", func(o *Options) {
		o.SinksFor = func(_ context.Context, ep model.Endpoint) ([]alert.Sink, error) {
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
	if incs := e.incidents("ep1"); len(incs) != 1 || incs[0].State != model.IncidentResolved {
		t.Fatalf("incidents %+v, want one, resolved", incs)
	}
	if got := e.rcv.kinds(); !slices.Equal(got, []string{"open", "resolve"}) {
		t.Fatalf("alerts %v, want [open resolve] once the sinks resolve", got)
	}
}
