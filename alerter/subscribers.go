// Status page subscribers: each confirmed subscriber of a page is told,
// once, of every incident event (opened, each update, resolved) of the
// page's endpoints that happened after it confirmed, through the same
// notify pipeline as incidents and change events (without the record
// stage: subscribers are not sinks of the incident).
//
// NotifySubscribers, run by any replica on a timer, reads the pages
// (store.KindStatusPage), their members (model.StatusPage.Members over
// the page tenant's endpoints), the latest incidents of each member, and
// the page's confirmed subscribers, and decides per (subscriber, event)
// whether the notice is owed (model.Subscriber.Owes, within
// model.SubscriberHorizon). Each owed notice is a Delivery whose ledger key is
// model.SubscriberNoticeKey: claim → send → mark, as every notification.
// A page's event is itself claimed in the ledger (pageEventKey) while it
// is fanned out and marked done once every owed subscriber has it, so a
// later sweep skips it with one ledger read instead of one per
// subscriber; a subscriber confirmed later is never owed it (Owes), so
// the set of subscribers an event is owed to is fixed once the event
// happened. What a crash between two steps costs is the notify ledger's
// (notify/ledger.go): nothing, except the one duplicate window after a
// send and before its mark, where the same notice (same Key, same
// Message-ID) goes out again.
//
// Maintenance holds notices as it holds the owner's alerts (OwedNotices
// says how): a held notice is simply not owed yet, and the walk that
// held it remembers when the hold ends.
//
// A sweep walks only when it may find something (SweepDue): it first
// reads a mark of five store stamps, each bumped in the transaction of
// the write it follows — IncidentsStamp (an incident opened, updated
// over the API or by the alerter, resolved), the AnyTenant stamps of
// subscribers (one confirmed), of status pages (members changed) and of
// maintenance windows (one created, edited or deleted), and the
// endpoints stamp (an endpoint made public or edited) —
// and walks when the mark moved since its last walk, when that walk left
// work (a failed or backed-off notice, the batch limit, an error), when
// a maintenance window that held a notice has ended, and at least every
// SubscriberSafetyInterval. With nothing new a sweep costs those five
// reads, not one per page and member. The mark is read before
// the walk, so a write during a walk is walked again; the sweep state is
// in memory only, so a restarted replica walks first; each replica keeps
// its own and the ledger claims keep replicas from sending twice.
package alerter

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/mcpmon/mcpmon/alerter/notify"
	"github.com/mcpmon/mcpmon/pkg/alert"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/store"
)

// SubscriberNotifier renders and sends one notice to one subscriber
// (pkg/subscribe). It returns the alert.Sink error contract: an
// alert.ErrPermanent failure gives the notice up for that subscriber.
type SubscriberNotifier interface {
	NotifySubscriber(ctx context.Context, n model.SubscriberNotice) error
}

// SubscriberStore is what telling subscribers needs from the store; every
// store.Store provides it.
type SubscriberStore interface {
	ListObjects(ctx context.Context, kind string) (map[string][]byte, error)
	ListObjectsOf(ctx context.Context, kind, tenant string) (map[string][]byte, error)
	ListEndpointsOf(ctx context.Context, tenant string) ([]model.Endpoint, error)
	ListIncidents(ctx context.Context, f store.IncidentFilter) ([]model.Incident, error)
	IncidentsStamp(ctx context.Context) (uint64, error)
	ObjectsStamp(ctx context.Context, kind, tenant string) (uint64, error)
}

const (
	// subscriberIncidents is how many of each member endpoint's latest
	// incidents a sweep looks at.
	subscriberIncidents = 3
	// subscriberBatch bounds the notices one sweep sends, and
	// subscriberParallel how many are in flight at once; the rest wait
	// for the next sweep.
	subscriberBatch    = 500
	subscriberParallel = 8
	// subscriberPageShare bounds what one page may take of a walk's
	// batch, and each walk starts at the page after the one the last
	// walk ran out of batch on (walkOrder): pages with thousands of
	// notices owed (a tenant's own, with 10,000 subscribers each and an
	// update a minute) no longer take every walk's batch while other
	// tenants' subscribers wait past their 48 h horizon.
	subscriberPageShare = 100
	// subscriberWalkTime bounds the time a walk spends sending: past it
	// no further page or chunk of notices is started, and the next walk
	// starts after the page it stopped on. Receivers that answer slowly
	// (webhook subscribers a tenant points at a server of its own that
	// holds every request to the timeout) made one walk take hours, while
	// every other page's subscribers waited for it.
	subscriberWalkTime = 30 * time.Second
	// DefaultSubscriberInterval is how often RunSubscribers sweeps.
	DefaultSubscriberInterval = 5 * time.Second
	// SubscriberSafetyInterval is the longest a sweep goes without a full
	// walk while the mark stays still: what catches a change no stamp
	// follows (a store without an endpoints stamp, a clock-skewed
	// confirmation).
	SubscriberSafetyInterval = 5 * time.Minute
)

// subscriberMark is what a sweep reads to learn whether anything a walk
// decides over may have changed.
type subscriberMark struct {
	incidents, subscribers, pages, endpoints, maintenance uint64
}

// subscriberSweep is what the last full walk of this replica left.
type subscriberSweep struct {
	walked  bool // a walk has run since the process started
	mark    subscriberMark
	at      time.Time
	pending bool // it left notices unsent (failed, backed off, over the batch)
	// resume is the page the walk's batch ran out on (empty: it did
	// not): the next walk starts after it (walkOrder).
	resume string
	// wake is when the earliest maintenance hold on a notice ends (zero:
	// none held): the walk is due then though no stamp moves.
	wake time.Time
}

// SweepDue decides whether a sweep at now, reading mark, walks every page:
// on the first sweep, when the mark moved, when the last walk left work,
// when a maintenance window that held a notice has ended, or when the
// last walk is SubscriberSafetyInterval old.
func SweepDue(last subscriberSweep, mark subscriberMark, now time.Time) bool {
	return !last.walked || last.pending || last.mark != mark || now.Sub(last.at) >= SubscriberSafetyInterval ||
		!last.wake.IsZero() && !now.Before(last.wake)
}

// endpointsStamper is the store's endpoints stamp, when it has one.
type endpointsStamper interface {
	EndpointsStamp(ctx context.Context) (uint64, error)
}

// readMark reads the stamps of a subscriberMark: a few reads, whatever the
// number of pages.
func readMark(ctx context.Context, ss SubscriberStore) (subscriberMark, error) {
	var m subscriberMark
	var err error
	if m.incidents, err = ss.IncidentsStamp(ctx); err != nil {
		return m, fmt.Errorf("alerter: incidents stamp: %w", err)
	}
	if m.subscribers, err = ss.ObjectsStamp(ctx, store.KindSubscriber, store.AnyTenant); err != nil {
		return m, fmt.Errorf("alerter: subscribers stamp: %w", err)
	}
	if m.pages, err = ss.ObjectsStamp(ctx, store.KindStatusPage, store.AnyTenant); err != nil {
		return m, fmt.Errorf("alerter: status pages stamp: %w", err)
	}
	if m.maintenance, err = ss.ObjectsStamp(ctx, store.KindMaintenance, store.AnyTenant); err != nil {
		return m, fmt.Errorf("alerter: maintenance windows stamp: %w", err)
	}
	if es, ok := ss.(endpointsStamper); ok {
		if m.endpoints, err = es.EndpointsStamp(ctx); err != nil {
			return m, fmt.Errorf("alerter: endpoints stamp: %w", err)
		}
	}
	return m, nil
}

// pageEventKey is the ledger key of fanning out incident's event to page's
// subscribers.
func pageEventKey(page, incident, event string) string {
	return "subpage-" + page + "-" + incident + "-" + event
}

// pageEvent is one incident event of one page, with the notices it owes.
type pageEvent struct {
	key     string
	notices []model.SubscriberNotice
}

// OwedNotices decides, for one page, which notices its confirmed
// subscribers are owed at now: one per subscriber per event of the
// incidents given (by member endpoint) within model.SubscriberHorizon, grouped
// by event, oldest event first.
//
// windows are the page tenant's maintenance windows, and subscribers hear
// of maintenance as the incident's owner does (gate): while a window
// matching the endpoint is active at now, its incidents' "opened" and
// "resolved" are held, and wake says when the earliest hold ends (zero:
// nothing held), so the sweep comes back for them though no stamp moves;
// an incident that opened in maintenance and resolved before that
// maintenance ended (model.QuietInMaintenance) owes neither, ever; the
// owner's updates are owed in or out of a window.
func OwedNotices(page model.StatusPage, subs []model.Subscriber, members []model.Endpoint, incidents map[string][]model.Incident,
	windows []model.Maintenance, now time.Time) (owed []pageEvent, wake time.Time) {
	var out []pageEvent
	type at struct {
		t time.Time
		i int
	}
	var order []at
	for _, ep := range members {
		ref := endpointRef(ep)
		heldUntil, held := model.MaintenanceUntil(windows, ref, now)
		for _, inc := range incidents[ep.ID] {
			quiet := model.QuietInMaintenance(windows, ref, inc)
			for _, ev := range model.IncidentEvents(inc) {
				outage := ev.Kind != model.IncidentEventUpdate
				// The horizon counts from when the event could go out:
				// an outage event held by maintenance, from the end of
				// that maintenance (a window over the horizon would
				// otherwise swallow the notice it held).
				since := ev.At
				if end, in := model.MaintenanceUntil(windows, ref, ev.At); outage && in {
					since = end
				}
				if now.Sub(since) > model.SubscriberHorizon {
					continue
				}
				if outage && quiet {
					continue
				}
				pe := pageEvent{key: pageEventKey(page.ID, inc.ID, ev.Name)}
				for _, s := range subs {
					if s.Owes(ev) {
						pe.notices = append(pe.notices, model.SubscriberNotice{
							Key:  model.SubscriberNoticeKey(s.ID, inc.ID, ev.Name),
							Page: page, Subscriber: s, Endpoint: ep, Incident: inc, Event: ev,
						})
					}
				}
				if len(pe.notices) == 0 {
					continue
				}
				if outage && held {
					if wake.IsZero() || heldUntil.Before(wake) {
						wake = heldUntil
					}
					continue
				}
				order = append(order, at{ev.At, len(out)})
				out = append(out, pe)
			}
		}
	}
	slices.SortStableFunc(order, func(x, y at) int { return x.t.Compare(y.t) })
	sorted := make([]pageEvent, len(order))
	for i, o := range order {
		sorted[i] = out[o.i]
	}
	return sorted, wake
}

// NotifySubscribers sends the notices owed to status page subscribers,
// walking the pages only when SweepDue. It does nothing without
// Options.Subscribers.
func (a *Alerter) NotifySubscribers(ctx context.Context) error {
	ss, ok := a.st.(SubscriberStore)
	if a.opts.Subscribers == nil || !ok {
		return nil
	}
	a.subsMu.Lock()
	defer a.subsMu.Unlock()
	now := a.clk.Now()
	mark, err := readMark(ctx, ss)
	if err != nil {
		return err
	}
	if !SweepDue(a.subSweep, mark, now) {
		return nil
	}
	pending, wake, resume, err := a.walkSubscribers(ctx, ss, now, a.subSweep.resume)
	a.subSweep = subscriberSweep{walked: true, mark: mark, at: now, pending: pending || err != nil, wake: wake, resume: resume}
	return err
}

// walkOrder is the order a walk visits pages in: by ID, starting at the
// first page after resume (wrapping round), so that when walks run out of
// batch every page with notices owed gets its turn.
func walkOrder(pages []model.StatusPage, resume string) []model.StatusPage {
	out := slices.SortedFunc(slices.Values(pages), func(x, y model.StatusPage) int { return cmp.Compare(x.ID, y.ID) })
	i, _ := slices.BinarySearchFunc(out, resume, func(p model.StatusPage, id string) int { return cmp.Compare(p.ID, id) })
	for i < len(out) && out[i].ID == resume {
		i++
	}
	return append(out[i:], out[:i]...)
}

// walkSubscribers reads every page, in walkOrder after resume, and sends
// what is owed, at most subscriberPageShare notices of one page and
// subscriberBatch in all; pending says it left notices for a later walk,
// wake when the earliest maintenance hold on a notice ends (zero: none),
// stopped the page the batch ran out on (empty: it did not).
func (a *Alerter) walkSubscribers(ctx context.Context, ss SubscriberStore, now time.Time, resume string) (pending bool, wake time.Time, stopped string, err error) {
	docs, err := ss.ListObjects(ctx, store.KindStatusPage)
	if err != nil {
		return true, wake, resume, fmt.Errorf("alerter: status pages: %w", err)
	}
	pages := make([]model.StatusPage, 0, len(docs))
	for id, doc := range docs {
		p, err := model.DecodeStatusPage(doc)
		if err != nil {
			a.log.Warn("status page does not decode; its subscribers wait", "page", id, "err", err)
			continue
		}
		pages = append(pages, p)
	}
	pages = walkOrder(pages, resume)
	for k, st := range a.subRetries {
		if a.redeliver.Stale(st, now) {
			delete(a.subRetries, k)
		}
	}
	budget, deadline := subscriberBatch, now.Add(subscriberWalkTime)
	var errs []error
	for _, p := range pages {
		if budget <= 0 || !a.clk.Now().Before(deadline) {
			pending = true
			break
		}
		evs, until, err := a.owedOf(ctx, ss, p, now)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if !until.IsZero() && (wake.IsZero() || until.Before(wake)) {
			wake = until
		}
		share := min(budget, subscriberPageShare)
		for _, pe := range evs {
			if share <= 0 {
				pending = true
				break
			}
			n, settled, err := a.fanOut(ctx, pe, share, deadline)
			share, budget = share-n, budget-n
			pending = pending || !settled
			if errors.Is(err, notify.ErrCrash) {
				return true, wake, p.ID, err
			}
			if err != nil {
				errs = append(errs, err)
			}
		}
		if budget <= 0 || !a.clk.Now().Before(deadline) {
			stopped = p.ID
		}
	}
	return pending, wake, stopped, errors.Join(errs...)
}

// owedOf reads what OwedNotices decides over for page p.
func (a *Alerter) owedOf(ctx context.Context, ss SubscriberStore, p model.StatusPage, now time.Time) ([]pageEvent, time.Time, error) {
	subDocs, err := ss.ListObjectsOf(ctx, store.KindSubscriber, p.ID)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("alerter: subscribers of page %s: %w", p.ID, err)
	}
	var subs []model.Subscriber
	for _, doc := range subDocs {
		if s, err := model.DecodeSubscriber(doc); err == nil && s.State == model.SubscriberConfirmed {
			subs = append(subs, s)
		}
	}
	if len(subs) == 0 {
		return nil, time.Time{}, nil
	}
	slices.SortFunc(subs, func(x, y model.Subscriber) int { return cmp.Compare(x.ID, y.ID) })
	eps, err := ss.ListEndpointsOf(ctx, model.TenantOf(p.Tenant))
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("alerter: endpoints of page %s: %w", p.ID, err)
	}
	var members []model.Endpoint
	seen := map[string]bool{}
	for _, group := range p.Members(eps) {
		for _, ep := range group {
			if !seen[ep.ID] {
				seen[ep.ID] = true
				members = append(members, ep)
			}
		}
	}
	incidents := map[string][]model.Incident{}
	for _, ep := range members {
		incs, err := ss.ListIncidents(ctx, store.IncidentFilter{EndpointID: ep.ID, Limit: subscriberIncidents})
		if err != nil {
			return nil, time.Time{}, fmt.Errorf("alerter: incidents of endpoint %s: %w", ep.ID, err)
		}
		incidents[ep.ID] = incs
	}
	// Without the windows a notice could go out during maintenance: the
	// page's subscribers wait for the next walk instead.
	windows, err := a.windows.Of(ctx, model.TenantOf(p.Tenant))
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("alerter: maintenance windows of page %s: %w", p.ID, err)
	}
	evs, wake := OwedNotices(p, subs, members, incidents, windows, now)
	return evs, wake, nil
}

// fanOut sends pe's notices (at most budget of them, and no chunk of
// them started at or after deadline) under pe's own ledger claim, and
// marks pe done once every notice is settled (sent, found done, or given
// up). It returns how many notices it dispatched, and whether pe is done
// (false: a later walk has work on it).
func (a *Alerter) fanOut(ctx context.Context, pe pageEvent, budget int, deadline time.Time) (int, bool, error) {
	st, err := a.st.Claim(ctx, pe.key, a.opts.Owner, a.opts.Lease)
	if err != nil {
		return 0, false, fmt.Errorf("alerter: claim %s: %w", pe.key, err)
	}
	switch st {
	case store.ClaimDone:
		return 0, true, nil
	case store.ClaimAcquired:
	default:
		// Another replica is fanning it out: if it dies, its lease
		// runs out and a later walk here takes the event over.
		return 0, false, nil
	}
	now := a.clk.Now()
	settled := true
	var ds []*notify.Delivery
	for _, n := range pe.notices {
		if len(ds) >= budget {
			settled = false
			break
		}
		rs, failing := a.subRetries[n.Key]
		if failing && !a.redeliver.Due(rs, now) {
			settled = false
			continue
		}
		ds = append(ds, &notify.Delivery{Notification: alert.Notification{Key: n.Key},
			Sink: subscriberCall{to: a.opts.Subscribers, n: n}, Retry: rs, Origin: n.Event.At})
	}
	var errs []error
	sent := 0
	for chunk := range slices.Chunk(ds, subscriberParallel) {
		if sent > 0 && !a.clk.Now().Before(deadline) {
			settled = false
			break
		}
		sent += len(chunk)
		a.subs.Deliver(ctx, chunk...)
		for _, d := range chunk {
			if errors.Is(d.Err, notify.ErrCrash) {
				return sent, false, d.Err // a crashed process releases nothing
			}
			switch {
			case d.GaveUp || !d.DeliveredAt.IsZero() || d.Outcome == notify.OutcomeDuplicate:
				delete(a.subRetries, d.Notification.Key)
			case d.Err != nil && d.Attempts > 0:
				a.subRetries[d.Notification.Key] = d.Retry
			}
			if outcome := eventOutcome(d); outcome != "" {
				a.m.SubscriberNotices.WithLabelValues(outcome).Inc()
			}
			if d.Err != nil {
				settled = false
				errs = append(errs, redactedError{msg: redact(d.Err), err: d.Err})
			}
		}
	}
	if settled {
		err = a.complete(ctx, pe.key)
	} else {
		err = a.release(ctx, pe.key)
	}
	if err != nil {
		errs = append(errs, err)
		settled = false
	}
	return sent, settled, errors.Join(errs...)
}

func (a *Alerter) complete(ctx context.Context, key string) error {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), notify.WriteTimeout)
	defer cancel()
	if err := a.st.Complete(cctx, key, a.opts.Owner); err != nil {
		return fmt.Errorf("alerter: mark %s done: %w", key, err)
	}
	return nil
}

func (a *Alerter) release(ctx context.Context, key string) error {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), notify.WriteTimeout)
	defer cancel()
	if err := a.st.Release(cctx, key, a.opts.Owner); err != nil {
		return fmt.Errorf("alerter: release %s: %w", key, err)
	}
	return nil
}

// subscriberCall lets the retry stage, which calls Notify, send a notice.
// Its name is the same for every subscriber: errors and logs never name
// one.
type subscriberCall struct {
	to SubscriberNotifier
	n  model.SubscriberNotice
}

func (c subscriberCall) Name() string { return "subscribers" }

func (c subscriberCall) Notify(ctx context.Context, _ alert.Notification) error {
	return c.to.NotifySubscriber(ctx, c.n)
}

// RunSubscribers sends owed subscriber notices every interval (<= 0:
// DefaultSubscriberInterval) until ctx is done.
func (a *Alerter) RunSubscribers(ctx context.Context, interval time.Duration) error {
	if a.opts.Subscribers == nil {
		return nil
	}
	if interval <= 0 {
		interval = DefaultSubscriberInterval
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		switch err := a.NotifySubscribers(ctx); {
		case err == nil || ctx.Err() != nil:
		case errors.Is(err, store.ErrUnavailable):
			a.log.Debug("subscriber notices wait for the store", "err", err)
		default:
			a.log.Warn("subscriber notices", "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}
