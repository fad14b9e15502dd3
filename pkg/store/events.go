// The change-event history: what a probe saw change on an endpoint (its tool
// catalog, protocol or server version, a certificate or credential nearing
// expiry), kept per endpoint as an append-only log, and the rules every
// backend applies to it: which kinds exist, how an event's ID and
// fingerprint are formed, and which events a filter selects.
//
// An event is identified by its fingerprint, a digest of *what* changed
// (kind, before and after), never of when or by whom it was seen: a result
// redelivered, two replicas or regions seeing the same change, or a prober
// that crashed before remembering a catalog and reports the same drift again
// all append one event. The store keeps the fingerprint index in the
// transaction that appends, together with a pending-notification index the
// alerter drains, so an appended event is never without its notification
// and never notified twice for being appended twice.

package store

import (
	"context"
	"time"

	"github.com/mcpmon/mcpmon/pkg/model"
)

// MaxEventList bounds one ListEvents answer.
const MaxEventList = 1000

// EventFilter selects one endpoint's events: of Kind when set, older than
// the event Before names (an ID; empty: from the newest), at most Limit
// (<= 0 or above MaxEventList: MaxEventList), newest first.
type EventFilter struct {
	Kind   string
	Before string
	Limit  int
}

// EventLimit returns how many events a filter may return.
func EventLimit(f EventFilter) int {
	if f.Limit <= 0 || f.Limit > MaxEventList {
		return MaxEventList
	}
	return f.Limit
}

// Match reports whether f's kind selects e.
func (f EventFilter) Match(e model.ChangeEvent) bool { return f.Kind == "" || e.Kind == f.Kind }

// EventRef names one event: what the pending-notification index holds.
type EventRef struct {
	EndpointID string `json:"endpointId"`
	ID         string `json:"id"`
}

// Events is the change-event history. Events are kept for the backend's
// verdict history (DefaultVerdictHistory), measured on its clock, and are
// never changed once appended.
type Events interface {
	// AppendEvents stores each event, under a fresh ID, unless its
	// endpoint already has one with the same Fingerprint within the
	// retention; it returns those it stored. In the same transaction
	// each stored event is listed in the pending-notification index and
	// the endpoint's events past the retention are removed. An event
	// fails ValidEvent: nothing is stored.
	AppendEvents(ctx context.Context, evs ...model.ChangeEvent) (added []model.ChangeEvent, err error)
	// ListEvents returns the endpoint's events selected by f, newest
	// first (empty, not nil, if none).
	ListEvents(ctx context.Context, endpointID string, f EventFilter) ([]model.ChangeEvent, error)
	// PendingEvents returns up to limit events listed as pending, oldest
	// first (empty, not nil, if none). An entry whose event aged out is
	// unlisted, not returned.
	PendingEvents(ctx context.Context, limit int) ([]model.ChangeEvent, error)
	// SettleEvent unlists an event from the pending index: every sink
	// has it. Settling an event not listed is a no-op.
	SettleEvent(ctx context.Context, ref EventRef) error
}

// EventID forms an event's ID from its observation time and a
// per-endpoint sequence number: 32 hex digits whose order is (time,
// sequence) order, so IDs sort like the history.
func EventID(t time.Time, seq uint64) string { return AuditID(t, seq) }

// EventCutoff is the oldest ObservedAt kept at now.
func EventCutoff(now time.Time, history time.Duration) time.Time { return now.Add(-history) }
