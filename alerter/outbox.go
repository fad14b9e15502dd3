package alerter

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"
	"time"

	"github.com/mcpmon/mcpmon/alerter/grouping"
	"github.com/mcpmon/mcpmon/alerter/notify"
	"github.com/mcpmon/mcpmon/pkg/alert"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/msg"
	"github.com/mcpmon/mcpmon/pkg/store"
)

// The outbox: each tracker's pending notifications (trackerData.Outbox),
// written with the state change that owes them and drained here — by the
// verdict that caused them, by its redelivery, or by the periodic sweep of
// the outboxes the store lists as pending. A notification leaves the
// outbox in the same compare-and-set that records what it did to its
// incident (open notified, reminder sent, dropped), so a crash between a
// delivery and its removal costs a second drain, which the ledger turns
// into a skip.

// drain delivers the endpoint's pending notifications in order. Order is
// kept per sink: a sink that has not taken a notification (failing, or its
// claim held by another replica) gets none of the later ones in this drain,
// so an open never trails its resolve, while the other sinks carry on — one
// broken sink must not silence the rest. A maintenance deferral stops the
// drain for every sink, but for the owner's updates behind it.
func (a *Alerter) drain(ctx context.Context, endpointID string) error {
	h := fnv.New32a()
	h.Write([]byte(endpointID))
	mu := &a.drainLocks[h.Sum32()%uint32(len(a.drainLocks))]
	mu.Lock()
	defer mu.Unlock()
	t, err := a.st.GetTracker(ctx, endpointID)
	if err != nil {
		return fmt.Errorf("alerter: tracker of endpoint %s: %w", endpointID, err)
	}
	if len(t.Notices) > 0 {
		if t, err = a.adoptNotices(ctx, endpointID); err != nil { // updates.go
			return err
		}
	}
	d, err := decodeData[trackerData](t.Data, "tracker "+endpointID)
	if err != nil || len(d.Outbox) == 0 {
		return err
	}
	run, err := a.newDrainRun(ctx, endpointID)
	if err != nil {
		return err
	}
	stopped := false
	for _, p := range d.Outbox {
		if stopped && p.alertKind() != alert.KindUpdate {
			continue // an owner's update is not held back (gate)
		}
		next, err := a.drainOne(ctx, run, p)
		if err != nil {
			return err
		}
		stopped = stopped || !next
	}
	return errors.Join(run.errs...)
}

// drainRun is one drain of one endpoint's outbox.
type drainRun struct {
	endpointID string
	ep         model.Endpoint
	// sinks are the endpoint's sinks, one per name: the name is the ledger
	// key's last part, and two sinks sharing it would share one claim (same
	// owner: both sent).
	sinks []alert.Sink
	// blocked are the sinks that did not take an earlier notification.
	blocked map[string]bool
	// openLeft are the incidents whose open stays pending for some sink.
	openLeft map[string]bool
	// errs are the deliveries that failed; their notifications stay.
	errs []error
}

func (a *Alerter) newDrainRun(ctx context.Context, endpointID string) (*drainRun, error) {
	ep, _, err := a.endpoint(ctx, endpointID)
	if err != nil {
		return nil, err
	}
	sinks, err := a.sinksOf(ctx, ep) // events.go
	if err != nil {
		return nil, err
	}
	// A sink whose notify list leaves incidents out gets change events only.
	sinks = slices.DeleteFunc(slices.Clone(sinks), func(s alert.Sink) bool { return !alert.Subscribes(s, alert.NotifyIncidents) })
	sinks = slices.CompactFunc(slices.SortedStableFunc(slices.Values(sinks), func(x, y alert.Sink) int {
		return strings.Compare(x.Name(), y.Name())
	}), func(x, y alert.Sink) bool { return x.Name() == y.Name() })
	return &drainRun{endpointID: endpointID, ep: ep, sinks: sinks, blocked: map[string]bool{}, openLeft: map[string]bool{}}, nil
}

// drainOne takes pending notification p as far as it goes in this drain:
// dropped, deferred, delivered to every sink, or left for the next drain.
// next is false when the drain stops at p (deferred by maintenance: the
// endpoint's later notifications fall in the same window). An error ends
// the drain.
func (a *Alerter) drainOne(ctx context.Context, run *drainRun, p pending) (next bool, err error) {
	inc, err := a.st.GetIncident(ctx, p.IncidentID)
	if errors.Is(err, model.ErrNotFound) {
		a.log.Warn("pending notification for a missing incident dropped", "incident", p.IncidentID, "kind", p.Kind)
		return true, a.rewrite(ctx, run.endpointID, p, nil, nil)
	}
	if err != nil {
		return false, fmt.Errorf("alerter: incident %s: %w", p.IncidentID, err)
	}
	idata, err := decodeData[incidentData](inc.Data, "incident "+inc.ID)
	if err != nil {
		return false, err
	}
	now := a.clk.Now().UTC()
	act, err := a.mute(ctx, run, p, inc, idata, now)
	if err != nil || act != actSend {
		return act != actDefer, err
	}
	return true, a.deliver(ctx, run, p, inc, now)
}

// deliver sends p through the notify pipeline to every sink not held back
// and not given up on, then settles it in the outbox: removed once every
// sink has it or has given it up; kept with the attempt recorded if a sink
// failed, that sink held back for the rest of the drain. A sink given up
// on (failed permanently, or failing past the give-up age) is not a
// hold-back: it is added to p.GaveUp (so no later drain or sweep calls it
// for p again) and takes the endpoint's next notifications in order.
func (a *Alerter) deliver(ctx context.Context, run *drainRun, p pending, inc model.Incident, now time.Time) error {
	var targets []alert.Sink
	held := 0
	severity := model.IncidentSeverity(inc.Kind)
	for _, s := range run.sinks {
		switch {
		case !alert.Takes(s, severity):
			// Routed elsewhere by severity: not this sink's to hold back.
		case slices.Contains(p.GaveUp, s.Name()):
		case run.blocked[s.Name()]:
			held++
		case !a.redeliver.Due(p.Retry[s.Name()], now):
			// Backing off after failing p: it takes neither p nor, to
			// keep its order, anything after p in this drain.
			run.blocked[s.Name()] = true
			held++
		default:
			g, ok := alert.GroupingOf(s)
			if !ok {
				targets = append(targets, s)
				break
			}
			switch want, err := a.groupFor(ctx, run, p, inc, s, g, now); {
			case errors.Is(err, notify.ErrClaimHeld):
				run.blocked[s.Name()] = true
				held++
			case err != nil:
				run.blocked[s.Name()] = true
				held++
				run.errs = append(run.errs, err)
			case want == grouping.Alone:
				targets = append(targets, s)
			case want == grouping.Grouped:
				// The group's notification carried p (group.go).
			default:
				// Waiting for its group: p and what follows it.
				run.blocked[s.Name()] = true
				held++
			}
		}
	}
	isOpen := p.Kind == string(alert.KindOpen)
	if held > 0 && isOpen {
		run.openLeft[p.IncidentID] = true
	}
	if len(targets) == 0 && held > 0 {
		return nil
	}
	q := p
	var failed []error
	if len(targets) > 0 {
		n := notification(run.ep, inc, p)
		ds := make([]*notify.Delivery, len(targets))
		for i, s := range targets {
			nn := n
			nn.Key = msg.LedgerKey(run.endpointID, inc.ID, p.Kind, s.Name())
			ds[i] = &notify.Delivery{Notification: nn, Sink: s, Retry: p.Retry[s.Name()]}
		}
		a.incidents.Deliver(ctx, ds...)
		var gaveUp []string
		var err error
		failed, gaveUp, err = a.outcomes(ctx, run, p, n, ds)
		if err != nil {
			return err
		}
		q.GaveUp = append(slices.Clone(p.GaveUp), gaveUp...)
		q.Retry = retryStates(p.Retry, ds)
	}
	if len(failed) > 0 {
		if isOpen {
			run.openLeft[p.IncidentID] = true
		}
		q.Attempts++
		q.LastError = alert.Truncate(redact(errors.Join(failed...)), 512)
		if rerr := a.rewrite(ctx, run.endpointID, p, &q, nil); rerr != nil {
			a.log.Debug("record delivery attempt", "err", rerr)
		}
		run.errs = append(run.errs, fmt.Errorf("alerter: %s notification of incident %s: %w", p.Kind, inc.ID, errors.Join(failed...)))
		return nil
	}
	if held > 0 {
		// Delivered to the sinks not held back; the rest get it once
		// they have taken what precedes it (or their backoff ends).
		// Sinks given up on are remembered, so they are not called
		// again for p.
		if len(q.GaveUp) > len(p.GaveUp) {
			if rerr := a.rewrite(ctx, run.endpointID, p, &q, nil); rerr != nil {
				a.log.Debug("record sinks given up", "err", rerr)
			}
		}
		return nil
	}
	err := a.rewrite(ctx, run.endpointID, p, nil, func(_ *model.Incident, id *incidentData) {
		switch p.alertKind() {
		case alert.KindOpen:
			id.OpenNotified, id.NotifiedAt = true, now
		case alert.KindReminder:
			id.NotifiedAt = now
		}
	})
	if err != nil {
		return err
	}
	return a.hook("settled")
}

// outcomes counts each sink's delivery of n and holds back the sinks that
// did not take it. It returns their errors, redacted; the sinks given up
// on (not held back); and an injected crash as err (a crashed process
// settles nothing).
func (a *Alerter) outcomes(ctx context.Context, run *drainRun, p pending, n alert.Notification, ds []*notify.Delivery) (failed []error, gaveUp []string, err error) {
	for _, dl := range ds {
		label := alert.MetricLabel(dl.Sink)
		switch {
		case errors.Is(dl.Err, notify.ErrCrash):
			return nil, nil, dl.Err
		case dl.GaveUp:
			// Given up whether or not the ledger mark that says so was
			// written (dl.Err): p.GaveUp keeps the sink from p for good.
			gaveUp = append(gaveUp, dl.Sink.Name())
			a.m.givenUp(label)
			if errors.Is(dl.LastErr, alert.ErrPermanent) {
				// Retrying cannot help (the receiver refused the alert, or
				// its address is one the SSRF guard refuses): the record
				// stage has written the reason to the incident; say it
				// once here too.
				a.m.alert(label, n.Kind, notify.OutcomeAbandoned)
				a.log.Warn("notification failed permanently; given up for this sink, not retried (see the incident's notifications)", "sink", dl.Sink.Name(), "incident", n.IncidentID, "kind", p.Kind, "err", redact(dl.LastErr))
				continue
			}
			a.m.alert(label, n.Kind, notify.OutcomeFailed)
			st, now := dl.Retry, a.clk.Now()
			a.rec.Write(ctx, p.IncidentID, model.Delivery{Kind: p.Kind, Sink: dl.Sink.Name(), Outcome: model.DeliveryGaveUp,
				LastError: alert.Truncate(fmt.Sprintf("given up after failing for %s (%d dispatches)", now.Sub(st.FirstFailedAt).Round(time.Second), st.Failures), 512)})
			a.log.Warn("notification given up for this sink: it kept failing past the give-up age", "sink", dl.Sink.Name(), "incident", n.IncidentID, "kind", p.Kind,
				"failing_since", st.FirstFailedAt, "dispatches", st.Failures, "err", redact(dl.LastErr))
		case dl.Err == nil:
			a.m.alert(label, n.Kind, dl.Outcome)
			if dl.Outcome == notify.OutcomeSent && !p.VerdictEmittedAt.IsZero() {
				a.m.VerdictToAlert.Observe(a.clk.Now().Sub(p.VerdictEmittedAt).Seconds())
			}
		case errors.Is(dl.Err, notify.ErrClaimHeld):
			run.blocked[dl.Sink.Name()] = true
			failed = append(failed, dl.Err)
		default:
			if errors.Is(dl.Err, notify.ErrDelivery) {
				a.m.alert(label, n.Kind, notify.OutcomeFailed)
			}
			a.log.Warn("notification not delivered; it stays in the outbox for the next drain", "sink", dl.Sink.Name(), "incident", n.IncidentID, "kind", p.Kind, "err", redact(dl.Err))
			run.blocked[dl.Sink.Name()] = true
			failed = append(failed, redactedError{msg: redact(dl.Err), err: dl.Err})
		}
	}
	return failed, gaveUp, nil
}

// retryStates is p's redelivery state after this dispatch: the state the
// ledger folded each failure into, kept for the sinks still failing and
// dropped for those given up on.
func retryStates(prev map[string]notify.RetryState, ds []*notify.Delivery) map[string]notify.RetryState {
	out := make(map[string]notify.RetryState, len(prev)+len(ds))
	for k, v := range prev {
		out[k] = v
	}
	for _, dl := range ds {
		switch name := dl.Sink.Name(); {
		case dl.GaveUp:
			delete(out, name)
		case dl.Err != nil && dl.Attempts > 0:
			out[name] = dl.Retry
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// rewrite replaces (q != nil) or removes (q == nil) pending notification p in
// the endpoint's outbox and applies mut to its incident's data, in one
// compare-and-set. A p already gone (settled by another replica) is a no-op.
func (a *Alerter) rewrite(ctx context.Context, endpointID string, p pending, q *pending, mut func(*model.Incident, *incidentData)) error {
	for range maxCASAttempts {
		t, err := a.st.GetTracker(ctx, endpointID)
		if err != nil {
			return fmt.Errorf("alerter: tracker of endpoint %s: %w", endpointID, err)
		}
		d, err := decodeData[trackerData](t.Data, "tracker "+endpointID)
		if err != nil {
			return err
		}
		i := slices.IndexFunc(d.Outbox, p.same)
		if i < 0 {
			return nil
		}
		if q != nil {
			d.Outbox[i] = *q
		} else {
			d.Outbox = slices.Delete(d.Outbox, i, i+1)
		}
		setTrackerData(&t, d)
		var incs []model.Incident
		if mut != nil {
			inc, err := a.st.GetIncident(ctx, p.IncidentID)
			switch {
			case err == nil:
				idata, err := decodeData[incidentData](inc.Data, "incident "+inc.ID)
				if err != nil {
					return err
				}
				mut(&inc, &idata)
				inc.Data = encodeData(idata)
				incs = append(incs, inc)
			case !errors.Is(err, model.ErrNotFound):
				return fmt.Errorf("alerter: incident %s: %w", p.IncidentID, err)
			}
		}
		err = a.st.SaveTracker(ctx, t, incs...)
		if errors.Is(err, store.ErrConflict) {
			continue
		}
		if err != nil {
			return fmt.Errorf("alerter: save outbox of endpoint %s: %w", endpointID, err)
		}
		return nil
	}
	return fmt.Errorf("alerter: outbox of endpoint %s kept changing: %w", endpointID, store.ErrConflict)
}

// notification builds what the sinks receive.
func notification(ep model.Endpoint, inc model.Incident, p pending) alert.Notification {
	state := string(inc.State)
	switch p.alertKind() {
	case alert.KindOpen:
		state = string(model.IncidentOpen)
	case alert.KindResolve:
		state = string(model.IncidentResolved)
	}
	return alert.Notification{
		Kind:         p.alertKind(),
		EndpointID:   inc.EndpointID,
		EndpointName: ep.Name,
		EndpointURL:  safeURL(ep.URL),
		Labels:       ep.Labels,
		IncidentID:   inc.ID,
		State:        state,
		Class:        inc.Class,
		Reason:       inc.Reason,
		FirstFailure: inc.FirstFailure,
		OpenedAt:     inc.OpenedAt,
		ResolvedAt:   inc.ResolvedAt,
		Sequence:     p.Seq,
		Update:       updateOf(inc, p), // updates.go
		Severity:     model.IncidentSeverity(inc.Kind),
		IncidentKind: cmpOr(string(inc.Kind), string(model.IncidentGlobal)),
		Regions:      inc.Regions,
	}
}

// Run sweeps every SweepInterval until ctx is done.
//
// A grouping sink's group is due at its start plus the sink's wait, or
// when its last member recovers, which may fall between sweeps: Run then
// decides the groups at that time too (group.go notes it and wakes Run),
// so a grouped notification is not late by up to a sweep interval. That
// is flushGroups alone, not a whole sweep: the members' outboxes are
// drained by their endpoints' next verdicts, or by the next sweep.
func (a *Alerter) Run(ctx context.Context) error {
	t := time.NewTicker(a.opts.SweepInterval)
	defer t.Stop()
	early := time.NewTimer(time.Hour)
	early.Stop()
	defer early.Stop()
	var next time.Time // the earliest group due time not yet flushed
	work := a.Sweep
	for {
		if work != nil {
			next = time.Time{}
			switch err := work(ctx); {
			case err == nil || ctx.Err() != nil:
			case errors.Is(err, store.ErrUnavailable):
				// The store logs its outage once; the next sweep retries.
				a.log.Debug("sweep waits for the store", "err", err)
			default:
				a.log.Warn("sweep", "err", err)
			}
		}
		if due := a.takeGroupDue(); !due.IsZero() && (next.IsZero() || due.Before(next)) {
			next = due
		}
		early.Stop()
		if !next.IsZero() {
			early.Reset(max(next.Sub(a.clk.Now()), 0) + 10*time.Millisecond)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			work = a.Sweep
		case <-early.C:
			work = a.flushGroups
		case <-a.groups.wake:
			work = nil
		}
	}
}

// Sweep decides the grouping sinks' groups (group.go), then drains every
// outbox the store lists as pending (deferred
// notifications whose maintenance ended, notifications a crash left behind,
// sinks that came back), notifies the pending change events, sends the
// digests whose period is over and refreshes the open-incidents gauge.
// Every read is an index or the digest entries not yet sent: a sweep costs
// what is pending and open, however many incidents were resolved before.
// It is Run's body, exported for tests and one-shot runners.
func (a *Alerter) Sweep(ctx context.Context) error {
	// Groups first: the outboxes drained next then find their members'
	// groups decided (group.go).
	var errs []error
	if err := a.flushGroups(ctx); err != nil {
		if errors.Is(err, notify.ErrCrash) {
			return err
		}
		errs = append(errs, err)
	}
	ids, err := a.st.PendingOutboxes(ctx)
	if err != nil {
		return errors.Join(append(errs, fmt.Errorf("alerter: list pending outboxes: %w", err))...)
	}
	for _, id := range ids {
		if err := a.drain(ctx, id); err != nil {
			if errors.Is(err, notify.ErrClaimHeld) {
				a.log.Debug("sweep: claim held elsewhere", "endpoint", id)
				continue
			}
			errs = append(errs, err)
		}
	}
	if err := a.NotifyEvents(ctx); err != nil { // events.go
		errs = append(errs, err)
	}
	if err := a.SendDigests(ctx); err != nil { // digest.go
		errs = append(errs, err)
	}
	open, err := a.st.CountOpenIncidents(ctx)
	if err != nil {
		errs = append(errs, fmt.Errorf("alerter: count open incidents: %w", err))
	} else {
		a.m.IncidentsOpen.Set(float64(open))
	}
	return errors.Join(errs...)
}
