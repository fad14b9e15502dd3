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
//
// Fingerprints make a change seen again one event, not a server that makes
// a new change at every probe: its history and its notifications are
// bounded by the event budget (DecideEventAppend), which every backend
// applies in the transaction that appends.

package store

import (
	"context"
	"fmt"
	"maps"
	"strings"
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
// never changed once appended, but for the count on a flapping marker.
type Events interface {
	// AppendEvents stores each event, under a fresh ID, as
	// DecideEventAppend decides over what the endpoint holds: nothing if
	// the endpoint already has an event with the same Fingerprint within
	// the retention; the event itself within the endpoint's event budget;
	// past it, a flapping marker of its kind, or a count on the one
	// already held. It returns the events it stored (markers included,
	// counts on a marker not). In the same transaction each stored event
	// is listed in the pending-notification index, the endpoint's
	// flapping period is kept, and the endpoint's events past the
	// retention are removed. An event fails ValidEvent: nothing is
	// stored.
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

// The event budget: how many events an endpoint may add to its history in
// a rolling hour and a rolling day before its further changes are folded
// into one flapping marker per kind. A deploy changes a catalog a few times
// an hour (a rolling deploy behind a load balancer: each direction once,
// each up to four kinds), so 20 an hour is several deploys' worth; 100 a day
// bounds a server that paces its changes under the hourly budget to 700
// events over the 7-day retention. A flapping period ends once the endpoint
// has made no change for EventFlapQuiet.
const (
	EventsPerHour  = 20
	EventsPerDay   = 100
	EventFlapQuiet = time.Hour
)

// EventFlap is an endpoint's flapping period, which the store keeps beside
// its events (one small record per endpoint).
type EventFlap struct {
	// Since and Last are the observation times of the change that opened
	// the period and of the latest change folded.
	Since time.Time `json:"since"`
	Last  time.Time `json:"last"`
	// Markers names the period's marker of each kind (an event ID).
	Markers map[string]string `json:"markers"`
}

// Open reports whether f still takes a change observed at t: one came
// within EventFlapQuiet before it.
func (f *EventFlap) Open(t time.Time) bool {
	return f != nil && t.Before(f.Last.Add(EventFlapQuiet))
}

// EventHeld is what the store holds that decides one append, read in the
// transaction that applies the decision.
type EventHeld struct {
	// Known: the endpoint has an event with this fingerprint within the
	// retention.
	Known bool
	// LastHour and LastDay count the endpoint's events (markers included)
	// observed at or after the event's ObservedAt less an hour, a day;
	// a count may stop at EventsPerDay.
	LastHour, LastDay int
	// Flap is the endpoint's flapping period, nil if none was kept.
	Flap *EventFlap
	// Marker is Flap's marker of the event's kind, nil if Flap names none
	// or it aged out.
	Marker *model.ChangeEvent
	// NextID is the ID an event stored now gets.
	NextID string
}

// EventAction is what an append does with one event.
type EventAction int

const (
	// EventSkip: nothing is written.
	EventSkip EventAction = iota
	// EventStore: Event is stored under its ID, indexed by fingerprint
	// and listed as pending.
	EventStore
	// EventCount: Event, a marker already held, is written over itself.
	EventCount
)

// EventAppend is the decision for one event.
type EventAppend struct {
	Action EventAction
	Event  model.ChangeEvent
	// Flap is the endpoint's flapping period to keep, nil to keep none
	// (unless Action is EventSkip, which writes nothing).
	Flap *EventFlap
}

// DecideEventAppend decides what appending e (its ObservedAt and
// RecordedAt set) does, given what its endpoint holds and the retention's
// cutoff: nothing for a known change or one past the retention; within
// the budget, e stored; past it, or while a flapping period is open, e
// folded into the period's marker of its kind — a new marker, stored and
// notified like any event, for the first change of a kind in a period, a
// count on it after that. So a flapping endpoint adds at most one event
// per kind per period to the history and to each sink.
func DecideEventAppend(e model.ChangeEvent, h EventHeld, cutoff time.Time) EventAppend {
	if h.Known || e.ObservedAt.Before(cutoff) {
		return EventAppend{Action: EventSkip}
	}
	var flap *EventFlap
	if h.Flap.Open(e.ObservedAt) {
		flap = &EventFlap{Since: h.Flap.Since, Last: h.Flap.Last, Markers: maps.Clone(h.Flap.Markers)}
		if e.ObservedAt.After(flap.Last) {
			flap.Last = e.ObservedAt
		}
		if m := h.Marker; m != nil && m.Suppressed != nil && m.Kind == e.Kind && flap.Markers[e.Kind] == m.ID {
			sup := *m.Suppressed
			sup.Count++
			if e.ObservedAt.After(sup.Last) {
				sup.Last = e.ObservedAt
				m.After = e.After
			}
			out := *m
			out.Suppressed = &sup
			return EventAppend{Action: EventCount, Event: out, Flap: flap}
		}
	} else {
		if h.LastHour < EventsPerHour && h.LastDay < EventsPerDay {
			e.ID = h.NextID
			return EventAppend{Action: EventStore, Event: e}
		}
		flap = &EventFlap{Since: e.ObservedAt, Last: e.ObservedAt}
	}
	m := flappingMarker(e, h.NextID)
	if flap.Markers == nil {
		flap.Markers = map[string]string{}
	}
	flap.Markers[e.Kind] = m.ID
	return EventAppend{Action: EventStore, Event: m, Flap: flap}
}

// flappingMarker is the marker that stands for e and the changes of its
// kind after it in a flapping period. Its fingerprint names the kind and
// e's observation time, so each marker is its own notification; it keeps
// e's before and after (After follows the latest folded change), not its
// diff or details.
func flappingMarker(e model.ChangeEvent, id string) model.ChangeEvent {
	return model.ChangeEvent{
		ID: id, EndpointID: e.EndpointID, Kind: e.Kind,
		Fingerprint: model.EventFingerprint(e.EndpointID, e.Kind, model.EventSourceFlapping, e.ObservedAt.UTC().Format(time.RFC3339Nano)),
		ObservedAt:  e.ObservedAt, RecordedAt: e.RecordedAt, ProbeRunID: e.ProbeRunID, Region: e.Region,
		Source: model.EventSourceFlapping, Severity: e.Severity,
		Message: fmt.Sprintf("flapping: the endpoint changed more than %d times in an hour or %d in a day; "+
			"its %s changes are counted here (suppressed.count), not recorded or notified one by one, until it has made none for %s. First: %s",
			EventsPerHour, EventsPerDay, e.Kind, strings.TrimSuffix(EventFlapQuiet.String(), "0m0s"), e.Message),
		Before: e.Before, After: e.After,
		Suppressed: &model.EventSuppression{Count: 1, Since: e.ObservedAt, Last: e.ObservedAt},
	}
}
