package notify

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/mcpmon/mcpmon/pkg/alert"
	"github.com/mcpmon/mcpmon/pkg/model"
)

// Recorder is what recording needs from the store's delivery records
// (store.Deliveries): the pipeline writes them, the API reads them.
type Recorder interface {
	RecordDelivery(ctx context.Context, incidentID string, d model.Delivery) error
}

// RecordTimeout bounds one record write. Records are for operators, not for
// delivery: a slow store may cost a drain this much per notification, no
// more.
const RecordTimeout = 2 * time.Second

// Records writes delivery records, best effort: a record that cannot be
// written is logged at debug and forgotten, never retried and never an
// error of the delivery (the store's own outage log and the delivery's
// errors already tell the operators).
type Records struct {
	Store Recorder
	Log   *slog.Logger
}

// Write records d on the incident.
func (r Records) Write(ctx context.Context, incidentID string, d model.Delivery) {
	// Detached: a shutdown cancelling ctx right after a send must not lose
	// the record of it.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), RecordTimeout)
	defer cancel()
	if err := r.Store.RecordDelivery(rctx, incidentID, d); err != nil {
		r.Log.Debug("delivery record not written", "incident", incidentID, "kind", d.Kind, "sink", d.Sink, "err", err)
	}
}

// recordStage runs the ledger stage and then records how the delivery
// ended, once the ledger has settled it (marked done, released, or found
// done), so a record never claims more than the ledger knows.
type recordStage struct {
	Records
	redact func(error) string
	next   Stage
}

func (s recordStage) Exec(ctx context.Context, d *Delivery) error {
	err := s.next.Exec(ctx, d)
	if rec, ok := Record(d, err, s.redact); ok {
		s.Write(ctx, d.Notification.IncidentID, rec)
	}
	return err
}

// Record decides what one dispatch of d adds to its record, with its last
// error rendered by redact: ok is false when nothing happened worth
// recording (the claim is held by another replica, which records its own;
// the store failed before any send) or the process "crashed" (a crashed
// process records nothing).
func Record(d *Delivery, err error, redact func(error) string) (model.Delivery, bool) {
	rec := model.Delivery{
		Kind: LedgerKind(d.Notification), Sink: d.Sink.Name(), Attempts: d.Attempts,
		FirstAttemptAt: d.FirstAttemptAt, LastAttemptAt: d.LastAttemptAt, DeliveredAt: d.DeliveredAt,
	}
	switch {
	case errors.Is(err, ErrCrash):
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

// LedgerKind is the notification's kind as its ledger key, outbox entry
// and delivery record name it: open, resolve, reminder-N or update-N.
func LedgerKind(n alert.Notification) string {
	switch n.Kind {
	case alert.KindReminder:
		return ReminderKind(n.Sequence)
	case alert.KindUpdate:
		return UpdateKind(n.Sequence)
	}
	return string(n.Kind)
}

// ReminderKind is the ledger kind of the seq-th reminder.
func ReminderKind(seq int) string { return fmt.Sprintf("%s-%d", alert.KindReminder, seq) }

// UpdateKind is the ledger kind of the notification of an incident's
// seq-th update (from 1).
func UpdateKind(seq int) string { return fmt.Sprintf("%s-%d", alert.KindUpdate, seq) }
