package alerter

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/mcpmon/mcpmon/pkg/alert"
	"github.com/mcpmon/mcpmon/pkg/netguard"
	"github.com/mcpmon/mcpmon/pkg/store"
)

// Outcomes of one delivery, the values of alerts_total's outcome label.
const (
	OutcomeSent       = "sent"
	OutcomeFailed     = "failed"
	OutcomeSuppressed = "suppressed"
	OutcomeDuplicate  = "duplicate"
	// OutcomeAbandoned: the sink failed permanently (alert.ErrPermanent,
	// including an address the SSRF guard refused); recorded on the
	// incident and not retried.
	OutcomeAbandoned = "abandoned"
)

// Sentinel errors.
var (
	// ErrClaimHeld: another alerter holds the ledger claim of a notification
	// (it is sending it now, or crashed and its lease has not run out). The
	// verdict message is left for redelivery.
	ErrClaimHeld = errors.New("ledger claim held by another alerter: leaving the message for redelivery")
	// ErrDelivery: a sink failed past its retry budget.
	ErrDelivery = errors.New("alert delivery failed")
	// errInjectedCrash is returned by test fault hooks: a crashed process
	// releases nothing, so stages must not clean up after it.
	errInjectedCrash = errors.New("injected crash")
)

// Delivery is one notification on its way to one sink, the unit a Stage
// works on.
type Delivery struct {
	Notification alert.Notification
	Sink         alert.Sink
	// Outcome is set by the stage that settles the delivery (the ledger
	// stage: sent, or duplicate when the ledger already had it done).
	Outcome string
	// Err is why the delivery failed (set by FanoutStage).
	Err error
	// What the retry stage did, for the delivery record: sink calls made,
	// when the first and last started, when the sink accepted (zero if it
	// did not) and the last sink error.
	Attempts                      int
	FirstAttemptAt, LastAttemptAt time.Time
	DeliveredAt                   time.Time
	LastErr                       error
}

// Stage is one step of the dispatch pipeline.
type Stage interface {
	Exec(ctx context.Context, d *Delivery) error
}

// FanoutStage runs one pipeline per sink in parallel, so a slow or failing
// sink neither delays nor blocks the others (each has its own ledger key).
type FanoutStage struct {
	Sinks    []alert.Sink
	Pipeline Stage
}

// execAll delivers n to every sink, keyed per sink, and returns each
// delivery with its Outcome or Err.
func (f FanoutStage) execAll(ctx context.Context, n alert.Notification, key func(sink string) string) []*Delivery {
	ds := make([]*Delivery, len(f.Sinks))
	var wg sync.WaitGroup
	for i, s := range f.Sinks {
		nn := n
		nn.Key = key(s.Name())
		ds[i] = &Delivery{Notification: nn, Sink: s}
		wg.Go(func() { ds[i].Err = f.Pipeline.Exec(ctx, ds[i]) })
	}
	wg.Wait()
	return ds
}

// Ledger is what the dispatch pipeline needs from the store's ledger.
type Ledger interface {
	Claim(ctx context.Context, key, owner string, lease time.Duration) (store.ClaimState, error)
	Complete(ctx context.Context, key, owner string) error
	Release(ctx context.Context, key, owner string) error
}

// ledgerStage wraps the send: claim the notification's key before it, mark
// it done after it. done → duplicate (skipped); held → ErrClaimHeld; a
// failed send releases the claim so a redelivery can retry at once.
//
// The one window it cannot close is a crash after the sink accepted the
// notification and before Complete: the claim then lapses with its lease
// and the notification is sent again, with the same Key (and IncidentID),
// which sinks with native dedup (PagerDuty dedup_key, Opsgenie alias) and
// receivers that honour the webhook's key collapse.
// ledgerWriteTimeout bounds the ledger writes that run on a context detached
// from the delivery's (Release after a failure, Complete after a send).
const ledgerWriteTimeout = 5 * time.Second

type ledgerStage struct {
	ledger Ledger
	owner  string
	lease  time.Duration
	next   Stage
	m      *Metrics
	now    func() time.Time // the clock DeliveredAt was taken on
	hook   func(point string) error
	// unmarked remembers notifications this process delivered but could not
	// mark done (the store was unreachable right after the send). When the
	// same key is claimed again it is marked instead of sent, so a store
	// outage at the worst moment does not turn into a duplicate alert; only
	// a process crash in that window still can.
	unmarked *keySet
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

func (l ledgerStage) Exec(ctx context.Context, d *Delivery) error {
	key := d.Notification.Key
	st, err := l.ledger.Claim(ctx, key, l.owner, l.lease)
	if err != nil {
		return fmt.Errorf("claim %s: %w", key, err)
	}
	l.m.claims(st)
	switch st {
	case store.ClaimDone:
		d.Outcome = OutcomeDuplicate
		return nil
	case store.ClaimHeld:
		return fmt.Errorf("%w: %s", ErrClaimHeld, key)
	}
	if l.unmarked != nil && l.unmarked.has(key) {
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
		if !errors.Is(err, errInjectedCrash) {
			// Released on a fresh context: the delivery ctx may be the
			// reason we failed, and a kept claim delays the retry by a lease.
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ledgerWriteTimeout)
			if rerr := l.ledger.Release(rctx, key, l.owner); rerr != nil {
				err = errors.Join(err, fmt.Errorf("release %s: %w", key, rerr))
			}
			cancel()
		}
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
		if l.unmarked != nil {
			l.unmarked.add(key)
		}
		return fmt.Errorf("mark %s done after sending: %w", key, err)
	}
	if !d.DeliveredAt.IsZero() {
		l.m.UnmarkedSeconds.Observe(l.now().Sub(d.DeliveredAt).Seconds())
	}
	d.Outcome = OutcomeSent
	return l.hook("marked")
}

func (l ledgerStage) complete(ctx context.Context, key string) error {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ledgerWriteTimeout)
	defer cancel()
	return l.ledger.Complete(cctx, key, l.owner)
}

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
	now            func() time.Time
	sleep          func(ctx context.Context, d time.Duration) error
}

func (r retryStage) Exec(ctx context.Context, d *Delivery) error {
	start := r.now()
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
		d.LastAttemptAt = r.now()
		if d.Attempts == 0 {
			d.FirstAttemptAt = d.LastAttemptAt
		}
		d.Attempts++
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.sendTimeout)
		err = d.Sink.Notify(sctx, d.Notification)
		cancel()
		if err == nil {
			d.DeliveredAt = r.now()
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
		if r.now().Sub(start)+wait > r.budget {
			break
		}
		if serr := r.sleep(ctx, wait); serr != nil {
			break
		}
		backoff = min(backoff*2, r.limit)
	}
	return fmt.Errorf("%w: sink %s, %s: %w", ErrDelivery, d.Sink.Name(), d.Notification.Key, err)
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
