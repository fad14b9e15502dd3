// Change-event notifications: each durable change event (store.Events,
// recorded by the aggregator) is sent once to every sink that opted into
// its kind (alert.Subscribes; a sink's notify list, incidents only by
// default), through the same ledger as incidents.
//
// The store lists an event as pending in the transaction that appends it,
// so an event never exists without its notification. NotifyEvents, run by
// every sweep, takes the pending events oldest first and, per subscribed
// sink, claims the ledger key alert.EventKey(endpoint, kind, fingerprint)
// + ":" + sink, sends with the retry stage, and marks the key done; once
// every subscribed sink has the event (sent, found done, or given up on
// for a permanent failure) it unlists the event. What a crash between two
// steps costs:
//   - before the claim, or after a claim whose send failed: nothing; the
//     event is still pending and the next sweep (on any replica) sends it.
//   - after the send, before the mark: the claim lapses with its lease and
//     the next sweep sends again — the alerter's one duplicate window (see
//     the package doc); the webhook's Idempotency-Key and the email's
//     Message-ID are the same on the repeat.
//   - after the mark, before unlisting: the next sweep finds the key done
//     (a duplicate, not a send) and unlists the event.
//
// Maintenance windows do not hold change events back: they silence outage
// alerts, and the change a deploy in a window makes is what the owner
// wants to hear about.
package alerter

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mcpmon/mcpmon/pkg/alert"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/store"
)

// EventStore is what notifying change events needs; the alerter's store
// provides it when it implements it (every store.Store does).
type EventStore interface {
	PendingEvents(ctx context.Context, limit int) ([]model.ChangeEvent, error)
	SettleEvent(ctx context.Context, ref store.EventRef) error
}

// eventBatch bounds the events one sweep notifies; the rest wait for the
// next.
const eventBatch = 100

// NotifyEvents sends the pending change events to their subscribed sinks
// and unlists each one every such sink has. It is part of Sweep.
func (a *Alerter) NotifyEvents(ctx context.Context) error {
	es, ok := a.st.(EventStore)
	if !ok {
		return nil
	}
	a.eventsMu.Lock()
	defer a.eventsMu.Unlock()
	evs, err := es.PendingEvents(ctx, eventBatch)
	if err != nil {
		return fmt.Errorf("alerter: pending change events: %w", err)
	}
	now := a.clk.Now()
	for k, st := range a.eventRetries {
		// Settled elsewhere (another replica, a deleted endpoint) or
		// past any give-up: the state can only be stale.
		if !now.Before(st.FirstFailedAt.Add(a.redeliver.giveUp + a.redeliver.max)) {
			delete(a.eventRetries, k)
		}
	}
	var errs []error
	// A sink that failed (or whose claim another replica holds) is held
	// back for the rest of this run, as in an incident drain: one broken
	// receiver costs one retry budget per run, not one per pending event.
	blocked := map[string]bool{}
	for _, e := range evs {
		ep, found, err := a.endpoint(ctx, e.EndpointID)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		settled := true
		if found { // a deleted endpoint's owner has no sinks left to tell
			sinks, err := a.eventSinks(ctx, ep, e.Kind)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			if settled, err = a.deliverEvent(ctx, ep, e, sinks, blocked); err != nil {
				errs = append(errs, err)
			}
		}
		if !settled {
			continue
		}
		if err := a.hook("event-marked"); err != nil {
			return err
		}
		if err := es.SettleEvent(ctx, store.EventRef{EndpointID: e.EndpointID, ID: e.ID}); err != nil {
			errs = append(errs, fmt.Errorf("alerter: settle event %s of endpoint %s: %w", e.ID, e.EndpointID, err))
		}
	}
	return errors.Join(errs...)
}

// eventSinks are the endpoint's sinks subscribed to kind, one per name.
func (a *Alerter) eventSinks(ctx context.Context, ep model.Endpoint, kind string) ([]alert.Sink, error) {
	sinks := a.opts.Sinks
	if a.opts.SinksFor != nil {
		var err error
		if sinks, err = a.opts.SinksFor(ctx, ep); err != nil {
			return nil, fmt.Errorf("alerter: sinks of endpoint %s: %w", ep.ID, err)
		}
	}
	out := slices.DeleteFunc(slices.Clone(sinks), func(s alert.Sink) bool { return !alert.Subscribes(s, kind) })
	return slices.CompactFunc(slices.SortedStableFunc(slices.Values(out), func(x, y alert.Sink) int {
		return strings.Compare(x.Name(), y.Name())
	}), func(x, y alert.Sink) bool { return x.Name() == y.Name() }), nil
}

// deliverEvent sends e to each sink; settled is true once every one has
// it (or was given up on).
func (a *Alerter) deliverEvent(ctx context.Context, ep model.Endpoint, e model.ChangeEvent, sinks []alert.Sink, blocked map[string]bool) (settled bool, err error) {
	settled = true
	var errs []error
	for _, s := range sinks {
		if blocked[s.Name()] {
			settled = false
			continue
		}
		n := eventNotification(ep, e, s.Name())
		if st, ok := a.eventRetries[n.Key]; ok && !a.redeliver.due(st, a.clk.Now()) {
			// Backing off after failing e: nor, to keep its order, the
			// events after it in this run.
			settled = false
			blocked[s.Name()] = true
			continue
		}
		outcome, err := a.sendEvent(ctx, s, n)
		if outcome != "" {
			a.m.EventNotifications.WithLabelValues(alert.MetricLabel(s), e.Kind, outcome).Inc()
		}
		switch {
		case errors.Is(err, errInjectedCrash):
			return false, err
		case err != nil:
			settled = false
			blocked[s.Name()] = true
			errs = append(errs, err)
			if errors.Is(err, ErrClaimHeld) {
				continue // another replica is sending it
			}
			a.log.Warn("change event not delivered; it stays pending for the next sweep", "sink", s.Name(), "endpoint", e.EndpointID, "kind", e.Kind, "err", redact(err))
		case outcome == OutcomeAbandoned:
			a.m.givenUp(alert.MetricLabel(s))
			a.log.Warn("change event given up for this sink (failed permanently, or failing past the give-up age); not retried", "sink", s.Name(), "endpoint", e.EndpointID, "kind", e.Kind)
		case outcome == OutcomeSent:
			a.log.Info("change event notified", "sink", s.Name(), "endpoint", e.EndpointID, "kind", e.Kind, "fingerprint", e.Fingerprint)
		}
	}
	return settled, errors.Join(errs...)
}

// sendEvent is the ledger stage for one event and sink: claim, send with
// retries, mark. A permanent failure is marked done too (given up: never
// retried) and reported as abandoned.
func (a *Alerter) sendEvent(ctx context.Context, s alert.Sink, n alert.EventNotification) (outcome string, err error) {
	st, err := a.st.Claim(ctx, n.Key, a.opts.Owner, a.opts.Lease)
	if err != nil {
		return "", fmt.Errorf("claim %s: %w", n.Key, err)
	}
	a.m.claims(st)
	switch st {
	case store.ClaimDone:
		return OutcomeDuplicate, nil
	case store.ClaimHeld:
		return "", fmt.Errorf("%w: %s", ErrClaimHeld, n.Key)
	}
	if err := a.hook("event-claimed"); err != nil {
		return "", err
	}
	d := &Delivery{Notification: alert.Notification{Key: n.Key, EndpointID: n.EndpointID}, Sink: eventCall{Sink: s, n: n}}
	sendErr := a.eventRetry().Exec(ctx, d)
	outcome = OutcomeSent
	gaveUp := false
	if sendErr != nil && !errors.Is(sendErr, alert.ErrPermanent) && d.Attempts > 0 {
		// The same rule as an incident's: the event's age is its
		// origin, so a restart (which forgets the state) never extends it.
		var st sinkRetry
		st, gaveUp = a.redeliver.afterFailure(a.eventRetries[n.Key], n.ObservedAt, a.clk.Now(), a.jitter())
		if gaveUp {
			delete(a.eventRetries, n.Key)
		} else {
			a.eventRetries[n.Key] = st
		}
	}
	if sendErr == nil {
		delete(a.eventRetries, n.Key)
	}
	if sendErr != nil {
		if !errors.Is(sendErr, alert.ErrPermanent) && !gaveUp {
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ledgerWriteTimeout)
			defer cancel()
			if rerr := a.st.Release(rctx, n.Key, a.opts.Owner); rerr != nil {
				sendErr = errors.Join(sendErr, fmt.Errorf("release %s: %w", n.Key, rerr))
			}
			return OutcomeFailed, redactedError{msg: redact(sendErr), err: sendErr}
		}
		outcome = OutcomeAbandoned
	} else if err := a.hook("event-sent"); err != nil {
		return "", err
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ledgerWriteTimeout)
	defer cancel()
	if err := a.st.Complete(cctx, n.Key, a.opts.Owner); err != nil {
		return outcome, fmt.Errorf("mark %s done: %w", n.Key, err)
	}
	return outcome, nil
}

func (a *Alerter) eventRetry() retryStage {
	return retryStage{
		attempts: a.opts.RetryAttempts, budget: a.opts.RetryBudget,
		initial: a.opts.BackoffInitial, limit: a.opts.BackoffMax, sendTimeout: a.opts.SendTimeout,
		now: a.clk.Now, sleep: func(ctx context.Context, d time.Duration) error { return a.sleep(ctx, d) },
	}
}

// eventCall lets the retry stage, which calls Notify, deliver an event.
type eventCall struct {
	alert.Sink
	n alert.EventNotification
}

func (c eventCall) Notify(ctx context.Context, _ alert.Notification) error {
	return alert.ForwardEvent(ctx, c.Sink, c.n)
}

// eventNotification builds what sink receives for e.
func eventNotification(ep model.Endpoint, e model.ChangeEvent, sink string) alert.EventNotification {
	return alert.EventNotification{
		Key:          alert.EventKey(e.EndpointID, e.Kind, e.Fingerprint) + ":" + sink,
		Kind:         e.Kind,
		EndpointID:   e.EndpointID,
		EndpointName: ep.Name,
		EndpointURL:  safeURL(ep.URL),
		Labels:       ep.Labels,
		EventID:      e.ID,
		Fingerprint:  e.Fingerprint,
		ObservedAt:   e.ObservedAt,
		Severity:     e.Severity,
		Message:      e.Message,
		Before:       e.Before,
		After:        e.After,
		Diff:         e.Diff,
		Details:      e.Details,
	}
}

// DefaultEventInterval is how often RunEvents looks for pending change
// events: the latency of a change notification. One index read per
// interval per replica when nothing is pending.
const DefaultEventInterval = 5 * time.Second

// RunEvents notifies pending change events every interval (<= 0:
// DefaultEventInterval) until ctx is done. Sweep notifies them too; this
// loop only shortens the wait.
func (a *Alerter) RunEvents(ctx context.Context, interval time.Duration) error {
	if interval <= 0 {
		interval = DefaultEventInterval
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		switch err := a.NotifyEvents(ctx); {
		case err == nil || ctx.Err() != nil:
		case errors.Is(err, store.ErrUnavailable):
			a.log.Debug("change events wait for the store", "err", err)
		case errors.Is(err, ErrDelivery) || errors.Is(err, ErrClaimHeld):
			// deliverEvent logged each failed sink; a held claim is
			// another replica at work.
		default:
			a.log.Warn("change events", "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}
