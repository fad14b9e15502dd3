package alerter

import (
	"context"
	"fmt"
	"time"

	"github.com/mcpmon/mcpmon/alerter/notify"
	"github.com/mcpmon/mcpmon/pkg/alert"
	"github.com/mcpmon/mcpmon/pkg/model"
)

// The maintenance stage: the first a pending notification meets in a
// drain, before the notify pipeline. gate decides, from the endpoint's
// active maintenance windows and the incident's state, whether the
// notification is sent, deferred to the window's end or dropped; mute
// writes that decision to the outbox and the delivery records. Change
// events skip it (events.go says why).

type action int

const (
	actSend action = iota
	actDefer
	actDrop
)

// gate decides what maintenance and the incident's state do to one
// pending notification: send, defer (to the window's end) or drop.
// quiet: the incident opened and resolved inside maintenance
// (model.QuietInMaintenance, the subscribers' rule too), so its open is
// dropped; an open deferred for an incident that began before the window
// goes out at the window's end, resolved or not. openLeft: the incident's
// open is still pending for some sinks; a resolve then goes to the sinks
// that have the open (the drain holds it back from the others) instead of
// being dropped as never notified.
func gate(p pending, inc model.Incident, idata incidentData, active, quiet, openLeft bool) (action, string) {
	switch p.Kind {
	case string(alert.KindOpen):
		if active {
			return actDefer, "maintenance"
		}
		if quiet {
			return actDrop, "opened and resolved during maintenance"
		}
		return actSend, ""
	case string(alert.KindResolve):
		if !idata.OpenNotified && !openLeft {
			return actDrop, "open was never notified"
		}
		if active {
			return actDefer, "maintenance"
		}
		return actSend, ""
	}
	if p.alertKind() == alert.KindUpdate {
		if p.Seq < 1 || p.Seq > len(inc.Updates) {
			return actDrop, "no such update"
		}
		// The owner posted it, in or out of a window, and asked for it
		// to be sent: maintenance silences outage alerts, not the owner.
		return actSend, ""
	}
	// A reminder.
	if active {
		return actDrop, "maintenance"
	}
	if inc.State != model.IncidentOpen {
		return actDrop, "incident " + string(inc.State)
	}
	return actSend, ""
}

// maintenanceOf reports whether a maintenance window silences ep at now,
// when maintenance of ep ends (model.MaintenanceUntil: windows that
// overlap or meet are one span), and whether inc is quiet
// (model.QuietInMaintenance). It reads ep's tenant's windows only,
// decoded once per change (a.windows): a decision costs a stamp read, not
// a decode of every window.
func (a *Alerter) maintenanceOf(ctx context.Context, ep model.Endpoint, inc model.Incident, now time.Time) (active bool, end time.Time, quiet bool, err error) {
	ms, err := a.windows.Of(ctx, ep.Tenant)
	if err != nil {
		return false, time.Time{}, false, fmt.Errorf("alerter: list maintenance windows: %w", err)
	}
	// A window silences its own tenant's endpoints only (Matches checks
	// the tenant first): a tenant's selector never reaches another's.
	ref := endpointRef(ep)
	end, active = model.MaintenanceUntil(ms, ref, now)
	return active, end, model.QuietInMaintenance(ms, ref, inc), nil
}

// endpointRef is what a maintenance window matches ep on.
func endpointRef(ep model.Endpoint) model.EndpointRef {
	return model.EndpointRef{ID: ep.ID, Tenant: ep.Tenant, Labels: ep.Labels}
}

// mute is the maintenance stage's effect, ahead of the notify pipeline: it
// decides p with gate and writes the decision to the outbox. A deferral is
// recorded as muted the first time and kept with the window's end; a drop
// removes p. actSend passes p on to the sinks.
func (a *Alerter) mute(ctx context.Context, run *drainRun, p pending, inc model.Incident, idata incidentData, now time.Time) (action, error) {
	active, end, quiet, err := a.maintenanceOf(ctx, run.ep, inc, now)
	if err != nil {
		return actDefer, err
	}
	act, why := gate(p, inc, idata, active, quiet, run.openLeft[p.IncidentID])
	switch act {
	case actDefer:
		if p.Deferred && p.DeferredUntil.Equal(end) {
			return act, nil
		}
		if !p.Deferred {
			a.suppressed(run.sinks, p)
			a.muted(ctx, p, run.sinks)
		}
		q := p
		q.Deferred, q.DeferredUntil = true, end
		if err := a.rewrite(ctx, run.endpointID, p, &q, nil); err != nil {
			return act, err
		}
		a.log.Info("notification deferred by maintenance", "incident", p.IncidentID, "kind", p.Kind, "until", end)
	case actDrop:
		a.suppressed(run.sinks, p)
		a.log.Info("notification dropped", "incident", p.IncidentID, "kind", p.Kind, "reason", why)
		if active || p.Deferred {
			a.muted(ctx, p, run.sinks)
		}
		return act, a.rewrite(ctx, run.endpointID, p, nil, func(_ *model.Incident, id *incidentData) {
			switch p.alertKind() {
			case alert.KindOpen:
				id.OpenSuppressed = true
			case alert.KindResolve, alert.KindReminder:
				id.NotifiedAt = now
			}
		})
	}
	return act, nil
}

func (a *Alerter) suppressed(sinks []alert.Sink, p pending) {
	for _, s := range sinks {
		a.m.alert(alert.MetricLabel(s), p.alertKind(), notify.OutcomeSuppressed)
	}
}

// muted records that maintenance held p back from every sink.
func (a *Alerter) muted(ctx context.Context, p pending, sinks []alert.Sink) {
	for _, s := range sinks {
		a.rec.Write(ctx, p.IncidentID, model.Delivery{Kind: p.Kind, Sink: s.Name(), Outcome: model.DeliveryMuted})
	}
}
