// Change-event notifications: what the alerter hands a sink for one durable
// change event (a catalog drift, a version change, a certificate or
// credential about to expire, regions disagreeing on the tool catalog),
// the optional interface a sink implements to
// carry them, and the per-sink opt-in by kind.

package alert

import (
	"context"
	"encoding/json"
	"slices"
	"time"

	"github.com/mcpmon/mcpmon/pkg/model"
)

// NotifyIncidents is the notify kind of incident notifications (open,
// resolve, reminders): every sink's default.
const NotifyIncidents = "incidents"

// NotifyKinds are the values a sink's notify list may hold.
func NotifyKinds() []string { return append([]string{NotifyIncidents}, model.EventKinds()...) }

// EventNotification is one change event for one sink.
type EventNotification struct {
	// Key is the once-only ledger key: EventKey and the sink name.
	Key          string            `json:"key"`
	Kind         string            `json:"kind"`
	EndpointID   string            `json:"endpointId"`
	EndpointName string            `json:"endpointName"`
	EndpointURL  string            `json:"endpointUrl"` // without userinfo or query secrets
	Labels       map[string]string `json:"labels,omitempty"`
	EventID      string            `json:"eventId"`
	Fingerprint  string            `json:"fingerprint"`
	ObservedAt   time.Time         `json:"observedAt"`
	Severity     string            `json:"severity,omitempty"`
	Message      string            `json:"message"`
	// Before and After: catalog fingerprints, versions, an expiry.
	Before string `json:"before,omitempty"`
	After  string `json:"after,omitempty"`
	// Diff is the catalog diff (catalog kinds): added, removed, changed.
	Diff    json.RawMessage `json:"diff,omitempty"`
	Details json.RawMessage `json:"details,omitempty"`
	// Suppressed is set when the event is a flapping marker: the endpoint
	// went past its event budget, and its further changes of this kind
	// are counted on the marker, not notified (one notification per
	// kind per flapping period). The count is the one at sending.
	Suppressed *model.EventSuppression `json:"suppressed,omitempty"`
}

// EventKey is the ledger key of an event's notification before the sink
// name: event-<endpointId>-<kind>-<fingerprint>.
func EventKey(endpointID, kind, fingerprint string) string {
	return "event-" + endpointID + "-" + kind + "-" + fingerprint
}

// EventNotifier is implemented by sinks that can carry change events.
type EventNotifier interface {
	// NotifyEvent delivers n; errors as for Sink.Notify.
	NotifyEvent(ctx context.Context, n EventNotification) error
}

// Subscriber is implemented by sinks configured with a notify list.
type Subscriber interface {
	// Subscribes reports whether the sink wants notifications of kind
	// (NotifyIncidents or an event kind).
	Subscribes(kind string) bool
}

// Subscribes reports whether s wants kind: its notify list when it has
// one, incidents only otherwise — so a sink configured before events
// existed gets nothing new.
func Subscribes(s Sink, kind string) bool {
	if sub, ok := s.(Subscriber); ok {
		return sub.Subscribes(kind)
	}
	return kind == NotifyIncidents
}

// Subscribed wraps s with a notify list. An empty list is the default
// (incidents only). The wrapper forwards NotifyEvent when s implements it
// and keeps s's metric label.
func Subscribed(s Sink, kinds []string) Sink {
	if len(kinds) == 0 {
		return s
	}
	return subscribed{Sink: s, kinds: slices.Clone(kinds)}
}

type subscribed struct {
	Sink
	kinds []string
}

func (s subscribed) Subscribes(kind string) bool { return slices.Contains(s.kinds, kind) }
func (s subscribed) MetricLabel() string         { return MetricLabel(s.Sink) }

// TakesSeverity passes the wrapped sink's severity routing through.
func (s subscribed) TakesSeverity(sev string) bool { return Takes(s.Sink, sev) }

// NotifyGroup passes grouped notifications through to the wrapped sink.
func (s subscribed) NotifyGroup(ctx context.Context, n GroupNotification) error {
	return ForwardGroup(ctx, s.Sink, n)
}

func (s subscribed) NotifyEvent(ctx context.Context, n EventNotification) error {
	if en, ok := s.Sink.(EventNotifier); ok {
		return en.NotifyEvent(ctx, n)
	}
	return errNoEvents(s.Name())
}

// ForwardEvent delivers n through s when it carries events, for wrappers
// that embed a Sink (whose other methods embedding hides).
func ForwardEvent(ctx context.Context, s Sink, n EventNotification) error {
	if en, ok := s.(EventNotifier); ok {
		return en.NotifyEvent(ctx, n)
	}
	return errNoEvents(s.Name())
}

type noEventsError string

func (e noEventsError) Error() string {
	return "sink " + string(e) + " does not carry change events: " + ErrPermanent.Error()
}
func (e noEventsError) Unwrap() error { return ErrPermanent }

func errNoEvents(name string) error { return noEventsError(name) }
