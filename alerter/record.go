package alerter

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/mcpmon/mcpmon/pkg/alert"
	"github.com/mcpmon/mcpmon/pkg/model"
)

// DeliveryRecorder is what the alerter needs from the store's delivery
// records (store.Deliveries): it writes them, the API reads them.
type DeliveryRecorder interface {
	RecordDelivery(ctx context.Context, incidentID string, d model.Delivery) error
}

// recordTimeout bounds one record write. Records are for operators, not for
// delivery: a slow store may cost a drain this much per notification, no
// more.
const recordTimeout = 2 * time.Second

// recorder writes delivery records, best effort: a record that cannot be
// written is logged at debug and forgotten, never retried and never an
// error of the delivery (the store's own outage log and the delivery's
// errors already tell the operators).
type recorder struct {
	st  DeliveryRecorder
	log *slog.Logger
}

func (r recorder) record(ctx context.Context, incidentID string, d model.Delivery) {
	// Detached: a shutdown cancelling ctx right after a send must not lose
	// the record of it.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
	defer cancel()
	if err := r.st.RecordDelivery(rctx, incidentID, d); err != nil {
		r.log.Debug("delivery record not written", "incident", incidentID, "kind", d.Kind, "sink", d.Sink, "err", err)
	}
}

// muted records that maintenance held p back from every sink.
func (r recorder) muted(ctx context.Context, p pending, sinks []alert.Sink) {
	for _, s := range sinks {
		r.record(ctx, p.IncidentID, model.Delivery{Kind: p.Kind, Sink: s.Name(), Outcome: model.DeliveryMuted})
	}
}

// recordStage runs the ledger stage and then records how the delivery
// ended, once the ledger has settled it (marked done, released, or found
// done), so a record never claims more than the ledger knows.
type recordStage struct {
	recorder
	next Stage
}

func (s recordStage) Exec(ctx context.Context, d *Delivery) error {
	err := s.next.Exec(ctx, d)
	if rec, ok := deliveryRecord(d, err); ok {
		s.record(ctx, d.Notification.IncidentID, rec)
	}
	return err
}

// deliveryRecord decides what one dispatch of d adds to its record: ok is
// false when nothing happened worth recording (the claim is held by another
// replica, which records its own; the store failed before any send) or the
// process "crashed" (a crashed process records nothing).
func deliveryRecord(d *Delivery, err error) (model.Delivery, bool) {
	rec := model.Delivery{
		Kind: ledgerKind(d.Notification), Sink: d.Sink.Name(), Attempts: d.Attempts,
		FirstAttemptAt: d.FirstAttemptAt, LastAttemptAt: d.LastAttemptAt, DeliveredAt: d.DeliveredAt,
	}
	switch {
	case errors.Is(err, errInjectedCrash):
		return rec, false
	case !d.DeliveredAt.IsZero():
		// Even if marking it done failed: the sink has it.
		rec.Outcome = model.DeliveryDelivered
	case d.Outcome == OutcomeDuplicate:
		rec.Outcome = model.DeliverySkipped
	case d.Attempts > 0:
		rec.Outcome = model.DeliveryFailed
	default:
		return rec, false
	}
	if d.LastErr != nil {
		rec.LastError = alert.Truncate(redact(d.LastErr), 512)
		if rec.Outcome == model.DeliveryFailed && errors.Is(d.LastErr, alert.ErrPermanent) {
			rec.Outcome = model.DeliveryGaveUp
			rec.LastError = alert.Truncate("given up, not retried: "+redact(d.LastErr), 512)
		}
	}
	return rec, true
}

// ledgerKind is the notification's kind as its ledger key and outbox entry
// name it: open, resolve or reminder-N.
func ledgerKind(n alert.Notification) string {
	if n.Kind == alert.KindReminder {
		return reminderKind(n.Sequence)
	}
	return string(n.Kind)
}
