package notify

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/mcpmon/mcpmon/pkg/alert"
	"github.com/mcpmon/mcpmon/pkg/clock"
	"github.com/mcpmon/mcpmon/pkg/store"
)

// Ledger is what the ledger stage needs from the store's idempotency
// ledger (store.Ledger).
type Ledger interface {
	Claim(ctx context.Context, key, owner string, lease time.Duration) (store.ClaimState, error)
	Complete(ctx context.Context, key, owner string) error
	Release(ctx context.Context, key, owner string) error
}

// WriteTimeout bounds the ledger writes that run on a context detached
// from the delivery's (Release after a failure, Complete after a send).
const WriteTimeout = 5 * time.Second

// ledgerStage wraps the send: claim the notification's key before it, mark
// it done after it. done → duplicate (skipped); held → ErrClaimHeld; a
// failed send releases the claim so a redelivery can retry at once, unless
// the notification is given up for the sink (failed permanently, or
// failing past the give-up age): then the key is marked done, so no
// replica, restart or later run calls the sink for it again.
//
// What a crash between two steps costs: before the claim, or after a claim
// whose send failed, nothing (the claim lapses with its lease, and the
// notification is still pending). After the send and before the mark, the
// one duplicate window: the claim lapses and the notification is sent
// again with the same Key, which sinks with native dedup (PagerDuty
// dedup_key, Opsgenie alias) and receivers that honour the webhook's key
// collapse. After the mark, nothing: the next claim finds the key done.
type ledgerStage struct {
	ledger    Ledger
	owner     string
	lease     time.Duration
	next      Stage
	m         Metrics
	clk       clock.Clock // the clock DeliveredAt was taken on
	hook      Hook
	redeliver Redelivery
	jitter    func() float64
	// unmarked remembers notifications this process delivered but could not
	// mark done (the store was unreachable right after the send). When the
	// same key is claimed again it is marked instead of sent, so a store
	// outage at the worst moment does not turn into a duplicate alert; only
	// a process crash in that window still can.
	unmarked *keySet
}

func (l ledgerStage) Exec(ctx context.Context, d *Delivery) error {
	key := d.Notification.Key
	st, err := l.ledger.Claim(ctx, key, l.owner, l.lease)
	if err != nil {
		return fmt.Errorf("claim %s: %w", key, err)
	}
	l.m.claim(st)
	switch st {
	case store.ClaimDone:
		d.Outcome = OutcomeDuplicate
		return nil
	case store.ClaimHeld:
		return fmt.Errorf("%w: %s", ErrClaimHeld, key)
	}
	if l.unmarked.has(key) {
		// Delivered earlier by this process; only the mark was missing.
		if err := l.complete(ctx, key); err != nil {
			return fmt.Errorf("mark %s done (delivered earlier): %w", key, err)
		}
		l.unmarked.drop(key)
		d.Outcome = OutcomeDuplicate
		return nil
	}
	if err := l.hook("claimed"); err != nil {
		return err
	}
	if err := l.next.Exec(ctx, d); err != nil {
		if errors.Is(err, ErrCrash) {
			return err
		}
		if l.giveUp(d, err) {
			d.GaveUp, d.Outcome = true, OutcomeAbandoned
			if merr := l.complete(ctx, key); merr != nil {
				return fmt.Errorf("mark %s done (given up): %w", key, merr)
			}
			return nil
		}
		// Released on a fresh context: the delivery ctx may be the
		// reason we failed, and a kept claim delays the retry by a lease.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), WriteTimeout)
		if rerr := l.ledger.Release(rctx, key, l.owner); rerr != nil {
			err = errors.Join(err, fmt.Errorf("release %s: %w", key, rerr))
		}
		cancel()
		return err
	}
	if err := l.hook("sent"); err != nil {
		return err
	}
	// Marked on a fresh context too: the sink has the notification, and a
	// shutdown cancelling ctx right now must not leave it unmarked (a
	// redelivery would send it again).
	if err := l.complete(ctx, key); err != nil {
		// The notification went out but the ledger does not know. This
		// process remembers it; another replica, or this one after a
		// crash, may send it again (the documented duplicate window).
		l.unmarked.add(key)
		return fmt.Errorf("mark %s done after sending: %w", key, err)
	}
	if !d.DeliveredAt.IsZero() {
		l.m.UnmarkedSeconds.Observe(l.clk.Now().Sub(d.DeliveredAt).Seconds())
	}
	d.Outcome = OutcomeSent
	return l.hook("marked")
}

// giveUp decides whether the failed dispatch d ends the notification for
// its sink: a permanent failure does at once; a failure that called the
// sink is folded into d.Retry, and does once the give-up age is reached.
func (l ledgerStage) giveUp(d *Delivery, err error) bool {
	if errors.Is(err, alert.ErrPermanent) {
		return true
	}
	if d.Attempts == 0 {
		return false // the sink was never called: nothing to count
	}
	origin := d.Origin
	if origin.IsZero() {
		origin = d.FirstAttemptAt
	}
	var gaveUp bool
	d.Retry, gaveUp = l.redeliver.AfterFailure(d.Retry, origin, l.clk.Now(), l.jitter())
	return gaveUp
}

func (l ledgerStage) complete(ctx context.Context, key string) error {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), WriteTimeout)
	defer cancel()
	return l.ledger.Complete(cctx, key, l.owner)
}

// keySet is a concurrency-safe set of ledger keys.
type keySet struct {
	mu sync.Mutex
	m  map[string]struct{}
}

func newKeySet() *keySet { return &keySet{m: map[string]struct{}{}} }

func (s *keySet) add(k string) {
	s.mu.Lock()
	s.m[k] = struct{}{}
	s.mu.Unlock()
}

func (s *keySet) has(k string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.m[k]
	return ok
}

func (s *keySet) drop(k string) {
	s.mu.Lock()
	delete(s.m, k)
	s.mu.Unlock()
}
