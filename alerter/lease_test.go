package alerter

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/alerter/notify"
	"github.com/mcpmon/mcpmon/pkg/alert"
)

// worstCaseSink spends the whole delivery allowance of its alerter: the
// first call answers 429 with a Retry-After of the full retry budget, the
// second takes the full send timeout and then succeeds. While that second
// call is still in progress, at its last instant, during runs once: another
// replica doing its work.
type worstCaseSink struct {
	alert.Sink
	a      func() *Alerter
	clk    interface{ Advance(time.Duration) }
	during func()

	mu    sync.Mutex
	calls int
}

func (s *worstCaseSink) Notify(ctx context.Context, n alert.Notification) error {
	s.mu.Lock()
	s.calls++
	call := s.calls
	s.mu.Unlock()
	a := s.a()
	switch call {
	case 1:
		return &alert.RetryAfterError{After: a.opts.RetryBudget, Err: errors.New("429 too many requests")}
	case 2:
		s.clk.Advance(a.opts.SendTimeout)
		if s.during != nil {
			s.during()
		}
	}
	return s.Sink.Notify(ctx, n)
}

// TestDeliveryEndsInsideTheLease: the retry budget and the send
// timeout are capped by the claim lease "so a live sender never loses its
// claim mid-delivery", but each was capped at half the lease, so together
// they may use all of it. With --claim-lease 20s a 429 asking to wait out
// the budget and a slow answer end the delivery exactly when the lease
// does: a second replica sweeping at that moment takes the claim over and
// sends too. Any store round trip or clock skew between replicas widens
// this from an instant into a window.
func TestDeliveryEndsInsideTheLease(t *testing.T) { testDeliveryEndsInsideTheLease(t, newEnv) }

func TestDeliveryEndsInsideTheLeaseRedis(t *testing.T) {
	testDeliveryEndsInsideTheLease(t, newRedisEnv)
}

func testDeliveryEndsInsideTheLease(t *testing.T, newEnv func(*testing.T) *env) {
	for _, lease := range []time.Duration{2 * time.Second, 20 * time.Second, time.Minute, DefaultLease} {
		t.Run(lease.String(), func(t *testing.T) {
			e := newEnv(t)
			e.endpoint("ep1", nil, nil)
			other := e.alerter("b", func(o *Options) { o.Lease = lease })
			var a *Alerter
			ws := &worstCaseSink{Sink: e.sink, a: func() *Alerter { return a }, clk: e.clk}
			ws.during = func() {
				if err := other.Sweep(e.ctx); err != nil && !errors.Is(err, notify.ErrClaimHeld) {
					t.Error(err)
				}
			}
			a = e.alerter("a", func(o *Options) { o.Lease = lease; o.Sinks = []alert.Sink{ws} })
			e.states("ep1", 0, down, down)
			e.pump(a.Handle)
			for range 5 {
				e.redeliver()
				if errs := e.pump(a.Handle); errs == nil {
					break
				}
			}
			if err := other.Sweep(e.ctx); err != nil {
				t.Fatal(err)
			}
			if got := e.rcv.kinds(); !slices.Equal(got, []string{"open"}) {
				t.Fatalf("lease %s (retry budget %s, send timeout %s): alerts %v, want one open",
					lease, a.opts.RetryBudget, a.opts.SendTimeout, got)
			}
		})
	}
}
