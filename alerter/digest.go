package alerter

import (
	"cmp"
	"context"
	"encoding/json"
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

// Digests: a sink with a digest rule (alert.DigestOf) takes the change
// events of the rule's severities as one message per period instead of
// one each.
//
// NotifyEvents hands such an event to the sink by writing a digest entry
// (store.KindDigestEntry, one object per sink, scope and event) for the
// period that holds the moment it is written; the written entry counts as
// the sink having the event, so the event is settled as usual once every
// sink has it. SendDigests, run by every sweep, lists the entries, and
// for each (sink, scope, period) whose period ended at least DigestGrace
// ago sends one digest through the notify pipeline under the ledger key
// alert.DigestKey(sink, scope, period start), then deletes the entries.
// An empty period has no entries and sends nothing; a period that ended
// while no alerter ran is sent by the first sweep after the start.
//
// The scope is the tenant for a global sink (one digest of the tenant's
// endpoints) and the endpoint for an endpoint's own sink (whose name only
// that endpoint's owner chose).
//
// What a crash costs:
//   - before an entry is written, nothing: the event is still pending.
//   - after it, before the event settles: the event is handed again; an
//     entry already there is kept as it is, so it is listed once.
//   - in the digest's claim → send → mark, what it costs any notification
//     (the one duplicate window: a second digest with the same key).
//   - after the mark, before the entries are deleted: the next sweep finds
//     the key done and moves the entries still there into the current
//     period, so they are listed once more in the next digest rather than
//     lost. An entry written into a period whose digest already went out
//     (a replica's clock more than DigestGrace behind another's) takes
//     the same way.

// DigestGrace is how long after its end a period's digest waits, so an
// event handed to the sink just before the end by a replica whose clock
// is a little behind is still in it.
const DigestGrace = time.Minute

// DigestStore is what digests need from the store; the alerter's store
// provides it when it implements it (every store.Store does).
type DigestStore interface {
	GetObject(ctx context.Context, kind, id string) ([]byte, error)
	PutObject(ctx context.Context, kind, id string, doc []byte) error
	ListObjects(ctx context.Context, kind string) (map[string][]byte, error)
	DeleteObject(ctx context.Context, kind, id string) error
}

// digestEntry is one event in a sink's digest: a stored format (new
// fields omitempty).
type digestEntry struct {
	Sink        string            `json:"sink"`
	Scope       string            `json:"scope"`
	EndpointID  string            `json:"endpointId"`
	Every       string            `json:"every"`
	PeriodStart time.Time         `json:"periodStart"`
	PeriodEnd   time.Time         `json:"periodEnd"`
	Event       alert.DigestEvent `json:"event"`
}

func digestEntryID(sink, scope string, e model.ChangeEvent) string {
	return sink + "|" + scope + "|" + alert.EventKey(e.EndpointID, e.Kind, e.Fingerprint)
}

// digestScope is what sink s's digest of ep's events covers.
func (a *Alerter) digestScope(ep model.Endpoint, s alert.Sink) string {
	if slices.ContainsFunc(a.opts.Sinks, func(g alert.Sink) bool { return g.Name() == s.Name() }) {
		return model.TenantOf(ep.Tenant)
	}
	return ep.ID
}

// digestEvent hands e to sink s's digest: it writes e's entry for the
// period that holds now, unless the entry is there already.
func (a *Alerter) digestEvent(ctx context.Context, ep model.Endpoint, e model.ChangeEvent, s alert.Sink, rule alert.DigestRule, sched alert.DigestSchedule) error {
	ds, ok := a.st.(DigestStore)
	if !ok {
		return fmt.Errorf("alerter: sink %s takes a digest, and the store keeps no objects: %w", s.Name(), alert.ErrPermanent)
	}
	scope := a.digestScope(ep, s)
	id := digestEntryID(s.Name(), scope, e)
	switch _, err := ds.GetObject(ctx, store.KindDigestEntry, id); {
	case err == nil:
		return nil
	case !errors.Is(err, model.ErrNotFound):
		return fmt.Errorf("alerter: digest entry %s: %w", id, err)
	}
	start, end := sched.Period(a.clk.Now())
	doc, err := json.Marshal(digestEntry{Sink: s.Name(), Scope: scope, EndpointID: ep.ID, Every: rule.Every, PeriodStart: start.UTC(), PeriodEnd: end.UTC(),
		Event: alert.DigestEvent{EventID: e.ID, EndpointID: e.EndpointID, EndpointName: ep.Name, Kind: e.Kind, Severity: e.Severity, ObservedAt: e.ObservedAt.UTC(), Message: e.Message}})
	if err != nil {
		return fmt.Errorf("alerter: encode digest entry %s: %w", id, err)
	}
	if err := ds.PutObject(ctx, store.KindDigestEntry, id, doc); err != nil {
		return fmt.Errorf("alerter: write digest entry %s: %w", id, err)
	}
	a.log.Debug("change event digested", "sink", s.Name(), "endpoint", e.EndpointID, "kind", e.Kind, "period_start", start)
	return nil
}

// digestGroup is one period's entries for one sink and scope.
type digestGroup struct {
	sink, scope string
	start, end  time.Time
	every       string
	ids         []string
	entries     []digestEntry
}

// dueDigests groups the stored entries and returns the groups whose
// period ended DigestGrace or more before now, oldest period first. It is
// the pure half of SendDigests; undecodable entries are returned apart.
func dueDigests(docs map[string][]byte, now time.Time) (due []*digestGroup, bad []string) {
	byKey := map[string]*digestGroup{}
	for id, doc := range docs {
		var e digestEntry
		if err := json.Unmarshal(doc, &e); err != nil || e.Sink == "" || e.PeriodEnd.IsZero() {
			bad = append(bad, id)
			continue
		}
		if now.Before(e.PeriodEnd.Add(DigestGrace)) {
			continue
		}
		k := alert.DigestKey(e.Sink, e.Scope, e.PeriodStart)
		g := byKey[k]
		if g == nil {
			g = &digestGroup{sink: e.Sink, scope: e.Scope, start: e.PeriodStart, end: e.PeriodEnd, every: e.Every}
			byKey[k] = g
			due = append(due, g)
		}
		g.ids, g.entries = append(g.ids, id), append(g.entries, e)
	}
	slices.SortFunc(due, func(x, y *digestGroup) int {
		return cmp.Or(x.start.Compare(y.start), strings.Compare(x.sink, y.sink), strings.Compare(x.scope, y.scope))
	})
	slices.Sort(bad)
	return due, bad
}

// notification is what the sink receives for g: the first
// alert.MaxDigestEvents events, oldest first, and the count of all.
func (g *digestGroup) notification() alert.DigestNotification {
	evs := make([]alert.DigestEvent, len(g.entries))
	for i, e := range g.entries {
		evs[i] = e.Event
	}
	slices.SortFunc(evs, func(x, y alert.DigestEvent) int {
		return cmp.Or(x.ObservedAt.Compare(y.ObservedAt), strings.Compare(x.EndpointID, y.EndpointID), strings.Compare(x.EventID, y.EventID))
	})
	return alert.DigestNotification{Key: alert.DigestKey(g.sink, g.scope, g.start), Scope: g.scope, Every: g.every,
		PeriodStart: g.start, PeriodEnd: g.end, Events: evs[:min(len(evs), alert.MaxDigestEvents)], Total: len(evs)}
}

// SendDigests sends every digest whose period is over (see the digest
// comment above). It is part of Sweep.
func (a *Alerter) SendDigests(ctx context.Context) error {
	ds, ok := a.st.(DigestStore)
	if !ok {
		return nil
	}
	a.eventsMu.Lock()
	defer a.eventsMu.Unlock()
	docs, err := ds.ListObjects(ctx, store.KindDigestEntry)
	if err != nil {
		return fmt.Errorf("alerter: list digest entries: %w", err)
	}
	now := a.clk.Now()
	due, bad := dueDigests(docs, now)
	for _, id := range bad {
		a.log.Warn("undecodable digest entry dropped", "id", id)
		_ = ds.DeleteObject(ctx, store.KindDigestEntry, id)
	}
	var errs []error
	for _, g := range due {
		if err := a.sendDigest(ctx, ds, g, now); err != nil {
			if errors.Is(err, notify.ErrCrash) {
				return err
			}
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// sendDigest delivers g's digest through the notify pipeline and settles
// its entries: deleted once the sink has it (or it is given up on), moved
// into the current period when the ledger says it went out before.
func (a *Alerter) sendDigest(ctx context.Context, ds DigestStore, g *digestGroup, now time.Time) error {
	s, err := a.sinkNamed(ctx, g.entries[0].EndpointID, g.sink)
	if err != nil {
		return err
	}
	if s == nil {
		a.log.Warn("digest dropped: its sink is no longer configured", "sink", g.sink, "scope", g.scope, "period_start", g.start, "events", len(g.entries))
		return a.deleteEntries(ctx, ds, g.ids)
	}
	n := g.notification()
	st, failing := a.eventRetries[n.Key]
	if failing && !a.redeliver.Due(st, now) {
		return nil
	}
	d := &notify.Delivery{Notification: alert.Notification{Key: n.Key}, Sink: digestCall{Sink: s, n: n}, Retry: st, Origin: g.end}
	a.events.Deliver(ctx, d)
	if errors.Is(d.Err, notify.ErrCrash) {
		return d.Err
	}
	if outcome := eventOutcome(d); outcome != "" {
		a.m.EventNotifications.WithLabelValues(alert.MetricLabel(s), "digest", outcome).Inc()
	}
	switch {
	case d.GaveUp || !d.DeliveredAt.IsZero() || d.Outcome == notify.OutcomeDuplicate:
		delete(a.eventRetries, n.Key)
	case d.Err != nil && d.Attempts > 0:
		a.eventRetries[n.Key] = d.Retry
	}
	switch {
	case d.Outcome == notify.OutcomeDuplicate:
		// Sent before: what is still here came after it, or stayed
		// behind a crash; it goes into the digest now open.
		return a.moveEntries(ctx, ds, s, g, now)
	case d.GaveUp:
		a.m.givenUp(alert.MetricLabel(s))
		a.log.Warn("digest given up for this sink (failed permanently, or failing past the give-up age)", "sink", g.sink, "scope", g.scope, "period_start", g.start)
		return a.deleteEntries(ctx, ds, g.ids)
	case !d.DeliveredAt.IsZero():
		// Sent (the mark may have failed: then d.Err says so, and the
		// ledger stage remembers the key).
		if d.Outcome == notify.OutcomeSent {
			a.log.Info("digest sent", "sink", g.sink, "scope", g.scope, "period_start", g.start, "events", n.Total)
		}
		return errors.Join(d.Err, a.deleteEntries(ctx, ds, g.ids))
	case d.Err != nil:
		if !errors.Is(d.Err, notify.ErrClaimHeld) {
			a.log.Warn("digest not delivered; it is retried by the next sweep", "sink", g.sink, "scope", g.scope, "period_start", g.start, "err", redact(d.Err))
		}
		return redactedError{msg: redact(d.Err), err: d.Err}
	}
	return nil
}

// sinkNamed is the sink called name among the sinks of endpoint id (nil
// when there is none any more).
func (a *Alerter) sinkNamed(ctx context.Context, id, name string) (alert.Sink, error) {
	ep, _, err := a.endpoint(ctx, id)
	if err != nil {
		return nil, err
	}
	sinks, err := a.sinksOf(ctx, ep)
	if err != nil {
		return nil, err
	}
	for _, s := range sinks {
		if s.Name() == name {
			return s, nil
		}
	}
	return nil, nil
}

func (a *Alerter) deleteEntries(ctx context.Context, ds DigestStore, ids []string) error {
	var errs []error
	for _, id := range ids {
		if err := ds.DeleteObject(ctx, store.KindDigestEntry, id); err != nil && !errors.Is(err, model.ErrNotFound) {
			errs = append(errs, fmt.Errorf("alerter: delete digest entry %s: %w", id, err))
		}
	}
	return errors.Join(errs...)
}

// moveEntries rewrites g's entries still in g's period into the period of
// sink s's digest that holds now. Each is read again first: an entry
// another replica deleted after sending g (the usual reason the ledger
// has g done) is gone and stays gone. A sink whose digest was removed
// from its configuration has no period to take them: they are deleted.
func (a *Alerter) moveEntries(ctx context.Context, ds DigestStore, s alert.Sink, g *digestGroup, now time.Time) error {
	_, sched, ok := alert.DigestOf(s)
	if !ok {
		return a.deleteEntries(ctx, ds, g.ids)
	}
	start, end := sched.Period(now)
	var errs []error
	for _, id := range g.ids {
		doc, err := ds.GetObject(ctx, store.KindDigestEntry, id)
		if errors.Is(err, model.ErrNotFound) {
			continue
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("alerter: digest entry %s: %w", id, err))
			continue
		}
		var e digestEntry
		if err := json.Unmarshal(doc, &e); err != nil || !e.PeriodStart.Equal(g.start) {
			continue
		}
		e.PeriodStart, e.PeriodEnd = start.UTC(), end.UTC()
		b, _ := json.Marshal(e)
		if err := ds.PutObject(ctx, store.KindDigestEntry, id, b); err != nil {
			errs = append(errs, fmt.Errorf("alerter: move digest entry %s: %w", id, err))
		}
	}
	return errors.Join(errs...)
}

// digestCall lets the retry stage, which calls Notify, deliver a digest.
type digestCall struct {
	alert.Sink
	n alert.DigestNotification
}

func (c digestCall) Notify(ctx context.Context, _ alert.Notification) error {
	return alert.ForwardDigest(ctx, c.Sink, c.n)
}
