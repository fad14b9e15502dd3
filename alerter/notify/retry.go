package notify

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/mcpmon/mcpmon/pkg/alert"
	"github.com/mcpmon/mcpmon/pkg/clock"
	"github.com/mcpmon/mcpmon/pkg/netguard"
)

// retryStage calls the sink with exponential backoff and full jitter until it
// succeeds, fails permanently, or the attempt count or time budget runs out.
// It honours alert.RetryAfterError and never retries alert.ErrPermanent.
//
// A sink call, once started, runs to its own sendTimeout even if ctx is
// cancelled: a shutdown that cut off a POST the receiver already has would
// make the sender see "context canceled", release the claim and send the
// alert again on redelivery. Cancellation only stops further attempts (and
// the backoff sleeps between them), so shutdown waits for at most one call.
type retryStage struct {
	attempts       int
	budget         time.Duration
	initial, limit time.Duration
	sendTimeout    time.Duration
	clk            clock.Clock
	sleep          func(ctx context.Context, d time.Duration) error
}

func (r retryStage) Exec(ctx context.Context, d *Delivery) error {
	start := r.clk.Now()
	backoff := r.initial
	var err error
	for attempt := 1; ; attempt++ {
		if cerr := ctx.Err(); cerr != nil {
			// Cancelled before this attempt started: do not start it.
			if err == nil {
				err = cerr
			}
			break
		}
		d.LastAttemptAt = r.clk.Now()
		if d.Attempts == 0 {
			d.FirstAttemptAt = d.LastAttemptAt
		}
		d.Attempts++
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.sendTimeout)
		err = d.Sink.Notify(sctx, d.Notification)
		cancel()
		if err == nil {
			d.DeliveredAt = r.clk.Now()
			return nil
		}
		if errors.Is(err, netguard.ErrBlocked) && !errors.Is(err, alert.ErrPermanent) {
			// No retry reaches an address the guard refuses, whichever
			// sink forgot to say so.
			err = fmt.Errorf("%w: %w", alert.ErrPermanent, err)
		}
		d.LastErr = err
		if errors.Is(err, alert.ErrPermanent) || attempt >= r.attempts || ctx.Err() != nil {
			break
		}
		wait := time.Duration(rand.Int64N(int64(backoff) + 1)) // full jitter
		if ra, ok := errors.AsType[*alert.RetryAfterError](err); ok && ra.After > 0 {
			wait = ra.After
		}
		if r.clk.Now().Sub(start)+wait > r.budget {
			break
		}
		if serr := r.sleep(ctx, wait); serr != nil {
			break
		}
		backoff = min(backoff*2, r.limit)
	}
	return fmt.Errorf("%w: sink %s, %s: %w", ErrDelivery, d.Sink.Name(), d.Notification.Key, err)
}

// SleepCtx waits d on the wall clock, or until ctx is done.
func SleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
