// Blindness notices: a prober whose canaries all fail (prober/canary.go)
// tells the operator once when the spell starts and once when it ends.
// Each notice goes to the operator's sinks (Options.Sinks: --webhook-url,
// --sinks-file; never an endpoint's own) through the same notify pipeline
// as change events, under the ledger key msg.BlindSpell.LedgerKey(kind,
// sink): the spell's region and start name it, so a retry, another
// alerter replica or a redelivery after a crash finds it done. It goes out
// as an incident notification of kind open (blind) or resolve (recovered)
// with the spell's ID as incident ID, so every sink renders it and sinks
// with native dedup pair the two.
package alerter

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mcpmon/mcpmon/alerter/notify"
	"github.com/mcpmon/mcpmon/pkg/alert"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/msg"
)

// IncidentKindBlind is the incidentKind of a blindness notice.
const IncidentKindBlind = "prober_blind"

// NotifyBlindness sends the notice of spell s to every operator sink that
// takes critical notifications. It returns an error while any such sink
// has not got it (failed within its retry budget, or claimed by another
// replica right now), so the caller tries again; a sink that gave it up
// (failed permanently, or past the give-up age) counts as done.
func (a *Alerter) NotifyBlindness(ctx context.Context, s msg.BlindSpell) error {
	var ds []*notify.Delivery
	for _, sink := range a.opts.Sinks {
		if !alert.Takes(sink, string(model.SeverityCritical)) {
			continue
		}
		n := blindNotification(s, sink.Name())
		ds = append(ds, &notify.Delivery{Notification: n, Sink: sink, Origin: cmpTime(s.Until, s.Since)})
	}
	a.events.Deliver(ctx, ds...)
	var errs []error
	for _, d := range ds {
		label := alert.MetricLabel(d.Sink)
		if outcome := eventOutcome(d); outcome != "" {
			a.m.Alerts.WithLabelValues(label, string(d.Notification.Kind), outcome).Inc()
		}
		switch {
		case d.GaveUp:
			a.m.givenUp(label)
			a.log.Warn("blindness notice given up for this sink", "sink", d.Sink.Name(), "spell", s.ID())
		case d.Err != nil:
			errs = append(errs, redactedError{msg: redact(d.Err), err: d.Err})
		case d.Outcome == notify.OutcomeSent:
			a.log.Info("blindness notice sent", "sink", d.Sink.Name(), "spell", s.ID(), "kind", d.Notification.Kind)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("alerter: blindness notice %s: %w", s.ID(), err)
	}
	return nil
}

// blindNotification is what sink receives for spell s.
func blindNotification(s msg.BlindSpell, sink string) alert.Notification {
	where := "mcpmon"
	region := "its network"
	if s.Region != "" {
		where += " in region " + s.Region
		region = "region " + s.Region
	}
	since := s.Since.UTC()
	n := alert.Notification{
		Kind: alert.KindOpen, EndpointName: where + " (prober)", IncidentID: s.ID(), State: string(model.IncidentOpen),
		Class: "prober_blind", FirstFailure: since, OpenedAt: since,
		Severity: string(model.SeverityCritical), IncidentKind: IncidentKindBlind,
		Reason: fmt.Sprintf("mcpmon is blind in %s since %s: no canary answered, so its probes there say nothing about the endpoints; their windows are no_data and no owner is paged for them",
			region, since.Format(time.RFC3339)),
	}
	if s.Region != "" {
		n.Regions = []string{s.Region}
	}
	if !s.Until.IsZero() {
		until := s.Until.UTC()
		n.Kind, n.State, n.ResolvedAt = alert.KindResolve, string(model.IncidentResolved), &until
		n.Reason = fmt.Sprintf("mcpmon sees again in %s: blind from %s to %s (%s)", region,
			since.Format(time.RFC3339), until.Format(time.RFC3339), until.Sub(since).Round(time.Second))
	}
	n.Key = s.LedgerKey(string(n.Kind), sink)
	return n
}

func cmpTime(a, b time.Time) time.Time {
	if !a.IsZero() {
		return a
	}
	return b
}
