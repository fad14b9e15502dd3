// Change-event notifications: each durable change event (store.Events,
// recorded by the aggregator) is sent once to every sink that opted into
// its kind (alert.Subscribes; a sink's notify list, incidents only by
// default), through the same notify pipeline as incidents, without its
// record stage.
//
// The store lists an event as pending in the transaction that appends it,
// so an event never exists without its notification. NotifyEvents, run by
// every sweep, takes the pending events oldest first and, per subscribed
// sink, claims the ledger key alert.EventKey(endpoint, kind, fingerprint)
// + ":" + sink, sends with the retry stage, and marks the key done; once
// every subscribed sink has the event (sent, found done, or given up on:
// failed permanently or past the give-up age, its key marked done too) it
// unlists the event. What a crash between two steps costs:
//   - before the claim, or after a claim whose send failed: nothing; the
//     event is still pending and the next sweep (on any replica) sends it.
//   - after the send, before the mark: the claim lapses with its lease and
//     the next sweep sends again — the alerter's one duplicate window (see
//     the package doc); the webhook's Idempotency-Key and the email's
//     Message-ID are the same on the repeat.
//   - after the mark, before unlisting: the next sweep finds the key done
//     (a duplicate, not a send) and unlists the event.
//
// A sink whose digest takes the event's severity gets it in its digest
// instead (digest.go).
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

	"github.com/mcpmon/mcpmon/alerter/notify"
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
		if a.redeliver.Stale(st, now) {
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
				if errors.Is(err, notify.ErrCrash) {
					return err
				}
				errs = append(errs, err)
			}
		}
		if !settled {
			continue
		}
		if err := es.SettleEvent(ctx, store.EventRef{EndpointID: e.EndpointID, ID: e.ID}); err != nil {
			errs = append(errs, fmt.Errorf("alerter: settle event %s of endpoint %s: %w", e.ID, e.EndpointID, err))
			continue
		}
		if err := a.hook("settled"); err != nil {
			return err
		}
	}
	return errors.Join(errs...)
}

// sinksOf are the endpoint's sinks: SinksFor's when set, the global
// ones otherwise.
func (a *Alerter) sinksOf(ctx context.Context, ep model.Endpoint) ([]alert.Sink, error) {
	if a.opts.SinksFor == nil {
		return a.opts.Sinks, nil
	}
	sinks, err := a.opts.SinksFor(ctx, ep)
	if err != nil {
		return nil, fmt.Errorf("alerter: sinks of endpoint %s: %w", ep.ID, err)
	}
	return sinks, nil
}

// eventSinks are the endpoint's sinks subscribed to kind, one per name.
func (a *Alerter) eventSinks(ctx context.Context, ep model.Endpoint, kind string) ([]alert.Sink, error) {
	sinks, err := a.sinksOf(ctx, ep)
	if err != nil {
		return nil, err
	}
	out := slices.DeleteFunc(slices.Clone(sinks), func(s alert.Sink) bool { return !alert.Subscribes(s, kind) })
	return slices.CompactFunc(slices.SortedStableFunc(slices.Values(out), func(x, y alert.Sink) int {
		return strings.Compare(x.Name(), y.Name())
	}), func(x, y alert.Sink) bool { return x.Name() == y.Name() }), nil
}

// deliverEvent sends e to each sink through the notify pipeline; settled
// is true once every one has it (or has given it up).
func (a *Alerter) deliverEvent(ctx context.Context, ep model.Endpoint, e model.ChangeEvent, sinks []alert.Sink, blocked map[string]bool) (settled bool, err error) {
	settled = true
	now := a.clk.Now()
	var (
		ds   []*notify.Delivery
		out  []alert.Sink // ds[i] is for out[i]
		errs []error
	)
	for _, s := range sinks {
		if blocked[s.Name()] {
			settled = false
			continue
		}
		if rule, sched, ok := alert.DigestOf(s); ok && rule.Takes(e.Severity) {
			// The sink has e once e is in its digest (digest.go).
			if err := a.digestEvent(ctx, ep, e, s, rule, sched); err != nil {
				settled = false
				blocked[s.Name()] = true
				errs = append(errs, err)
			}
			continue
		}
		n := eventNotification(ep, e, s.Name())
		st, failing := a.eventRetries[n.Key]
		if failing && !a.redeliver.Due(st, now) {
			// Backing off after failing e: nor, to keep its order, the
			// events after it in this run.
			settled = false
			blocked[s.Name()] = true
			continue
		}
		ds = append(ds, &notify.Delivery{Notification: alert.Notification{Key: n.Key, EndpointID: n.EndpointID},
			Sink: eventCall{Sink: s, n: n}, Retry: st, Origin: n.ObservedAt})
		out = append(out, s)
	}
	a.events.Deliver(ctx, ds...)
	for i, d := range ds {
		s, key := out[i], d.Notification.Key
		if errors.Is(d.Err, notify.ErrCrash) {
			return false, d.Err
		}
		if outcome := eventOutcome(d); outcome != "" {
			a.m.EventNotifications.WithLabelValues(alert.MetricLabel(s), e.Kind, outcome).Inc()
		}
		// The redelivery state is kept while the sink keeps failing e
		// and forgotten once it has e or has given it up.
		switch {
		case d.GaveUp || !d.DeliveredAt.IsZero() || d.Outcome == notify.OutcomeDuplicate:
			delete(a.eventRetries, key)
		case d.Err != nil && d.Attempts > 0:
			a.eventRetries[key] = d.Retry
		}
		switch {
		case d.Err != nil:
			settled = false
			blocked[s.Name()] = true
			errs = append(errs, redactedError{msg: redact(d.Err), err: d.Err})
			if errors.Is(d.Err, notify.ErrClaimHeld) {
				continue // another replica is sending it
			}
			a.log.Warn("change event not delivered; it stays pending for the next sweep", "sink", s.Name(), "endpoint", e.EndpointID, "kind", e.Kind, "err", redact(d.Err))
		case d.GaveUp:
			a.m.givenUp(alert.MetricLabel(s))
			a.log.Warn("change event given up for this sink (failed permanently, or failing past the give-up age); not retried", "sink", s.Name(), "endpoint", e.EndpointID, "kind", e.Kind)
		case d.Outcome == notify.OutcomeSent:
			a.log.Info("change event notified", "sink", s.Name(), "endpoint", e.EndpointID, "kind", e.Kind, "fingerprint", e.Fingerprint)
		}
	}
	return settled, errors.Join(errs...)
}

// eventOutcome is d's value of event_notifications_total's outcome label,
// "" when the pipeline never reached the sink (the claim failed or is held
// elsewhere).
func eventOutcome(d *notify.Delivery) string {
	switch {
	case d.Outcome != "":
		return d.Outcome
	case !d.DeliveredAt.IsZero():
		return notify.OutcomeSent // delivered; the mark is what failed
	case errors.Is(d.Err, notify.ErrDelivery):
		return notify.OutcomeFailed
	}
	return ""
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
		Suppressed:   e.Suppressed,
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
		case errors.Is(err, notify.ErrDelivery) || errors.Is(err, notify.ErrClaimHeld):
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
