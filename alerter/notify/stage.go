// Package notify is the dispatch pipeline one notification takes to one
// sink, the same for incidents (alerter/outbox.go) and change events
// (alerter/events.go): New builds it as
//
//	fan-out → record → ledger (claim → send → mark) → retry → sink
//
// A Delivery enters through Pipeline.Deliver, one per sink, and leaves
// settled: Outcome and Err say what happened, Retry and GaveUp what a
// later dispatch should do. The ledger makes "send once" hold across
// replicas, restarts and store outages; the one case it cannot close (a
// crash after the sink accepted and before the mark) is described in
// docs/design/architecture.md.
package notify

import (
	"context"
	"errors"
	"time"

	"github.com/mcpmon/mcpmon/pkg/alert"
)

// Outcomes of one delivery, the values of the outcome label of
// mcpmon_alerts_total and mcpmon_event_notifications_total.
const (
	OutcomeSent       = "sent"
	OutcomeFailed     = "failed"
	OutcomeSuppressed = "suppressed"
	OutcomeDuplicate  = "duplicate"
	// OutcomeAbandoned: the notification was given up for the sink
	// (alert.ErrPermanent, including an address the SSRF guard refused;
	// or failing past the give-up age) and is not retried.
	OutcomeAbandoned = "abandoned"
)

// Sentinel errors.
var (
	// ErrClaimHeld: another alerter holds the ledger claim of a notification
	// (it is sending it now, or crashed and its lease has not run out). The
	// verdict message is left for redelivery.
	ErrClaimHeld = errors.New("ledger claim held by another alerter: leaving the message for redelivery")
	// ErrDelivery: a sink failed past its retry budget.
	ErrDelivery = errors.New("alert delivery failed")
	// ErrCrash is what a Hook returns to stop as a killed process would:
	// a crashed process releases and records nothing, so no stage cleans
	// up after it.
	ErrCrash = errors.New("injected crash")
)

// Hook is a fault-injection point for crash tests. The ledger calls it at
// "claimed" (before the send), "sent" (before the mark) and "marked"; an
// error wrapping ErrCrash stops the delivery where it is.
type Hook func(point string) error

// Delivery is one notification on its way to one sink, the unit a Stage
// works on.
type Delivery struct {
	Notification alert.Notification
	Sink         alert.Sink
	// Retry is the sink's redelivery state for this notification: what
	// earlier dispatches left (set by the caller) and, after a failure
	// that called the sink, the state the next dispatch must honour.
	Retry RetryState
	// Origin is when the failing began if Retry has none yet (a change
	// event's ObservedAt); zero: this dispatch's first attempt.
	Origin time.Time
	// Outcome is set by the stage that settles the delivery: sent;
	// duplicate when the ledger already had it done; abandoned when it
	// was given up.
	Outcome string
	// GaveUp: the notification is given up for this sink (failed
	// permanently, or failing past the give-up age) and its ledger key is
	// marked done, so no dispatch calls the sink for it again.
	GaveUp bool
	// Err is why the delivery failed (set by Deliver).
	Err error
	// What the retry stage did, for the delivery record: sink calls made,
	// when the first and last started, when the sink accepted (zero if it
	// did not) and the last sink error.
	Attempts                      int
	FirstAttemptAt, LastAttemptAt time.Time
	DeliveredAt                   time.Time
	LastErr                       error
}

// Stage is one step of the dispatch pipeline.
type Stage interface {
	Exec(ctx context.Context, d *Delivery) error
}

// StageFunc adapts a function to a Stage.
type StageFunc func(ctx context.Context, d *Delivery) error

// Exec calls f.
func (f StageFunc) Exec(ctx context.Context, d *Delivery) error { return f(ctx, d) }
