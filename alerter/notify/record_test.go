package notify

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/alert"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/store"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// namedSink is a sink that is never called: the record decision reads only
// its name.
type namedSink string

func (s namedSink) Name() string                                   { return string(s) }
func (namedSink) Notify(context.Context, alert.Notification) error { return errors.New("not called") }

func TestDeliveryRecordDecision(t *testing.T) {
	t1, t2 := t0.Add(time.Second), t0.Add(3*time.Second)
	sink := namedSink("hook")
	reminder := alert.Notification{Kind: alert.KindReminder, Sequence: 3, IncidentID: "i"}
	for _, c := range []struct {
		name string
		d    Delivery
		err  error
		want model.Delivery
		ok   bool
	}{
		{"sent", Delivery{Sink: sink, Notification: reminder, Outcome: OutcomeSent, Attempts: 2, FirstAttemptAt: t1, LastAttemptAt: t2, DeliveredAt: t2, LastErr: errors.New("HTTP 502")}, nil,
			model.Delivery{Kind: "reminder-3", Sink: "hook", Outcome: model.DeliveryDelivered, Attempts: 2, FirstAttemptAt: t1, LastAttemptAt: t2, DeliveredAt: t2, LastError: "HTTP 502"}, true},
		{"sent, mark failed", Delivery{Sink: sink, Notification: reminder, Attempts: 1, FirstAttemptAt: t1, LastAttemptAt: t1, DeliveredAt: t1}, errors.New("mark done: store down"),
			model.Delivery{Kind: "reminder-3", Sink: "hook", Outcome: model.DeliveryDelivered, Attempts: 1, FirstAttemptAt: t1, LastAttemptAt: t1, DeliveredAt: t1}, true},
		{"ledger done", Delivery{Sink: sink, Notification: reminder, Outcome: OutcomeDuplicate}, nil,
			model.Delivery{Kind: "reminder-3", Sink: "hook", Outcome: model.DeliverySkipped}, true},
		{"failed", Delivery{Sink: sink, Notification: reminder, Attempts: 4, FirstAttemptAt: t1, LastAttemptAt: t2, LastErr: errors.New("HTTP 503")}, ErrDelivery,
			model.Delivery{Kind: "reminder-3", Sink: "hook", Outcome: model.DeliveryFailed, Attempts: 4, FirstAttemptAt: t1, LastAttemptAt: t2, LastError: "HTTP 503"}, true},
		{"claim held elsewhere", Delivery{Sink: sink, Notification: reminder}, ErrClaimHeld, model.Delivery{}, false},
		{"store down before the claim", Delivery{Sink: sink, Notification: reminder}, store.ErrUnavailable, model.Delivery{}, false},
		{"crash after the send", Delivery{Sink: sink, Notification: reminder, Attempts: 1, DeliveredAt: t1}, ErrCrash, model.Delivery{}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, ok := Record(&c.d, c.err, func(err error) string { return err.Error() })
			if ok != c.ok || (ok && got != c.want) {
				t.Fatalf("Record = %+v, %v; want %+v, %v", got, ok, c.want, c.ok)
			}
		})
	}
}
