package webhook

import (
	"context"
	"encoding/json"
	"time"

	"github.com/mcpmon/mcpmon/pkg/alert"
	"github.com/mcpmon/mcpmon/pkg/model"
)

// EventPayloadVersion is bumped on any incompatible change of EventPayload.
const EventPayloadVersion = 1

// EventPayload is the JSON body of a change-event delivery, told apart
// from an incident's Payload by "type": "event" (and X-Mcpmon-Event: the
// event kind). Like Payload it is a pure function of the notification, so
// a redelivery carries the same body and Idempotency-Key.
//
//	{"version":1,"type":"event","key":"event-ep1-catalog_breaking-3f…:hook",
//	 "kind":"catalog_breaking","eventId":"…","fingerprint":"3f…",
//	 "endpoint":{"id":"ep1","name":"docs","url":"https://mcp.example.com/mcp"},
//	 "observedAt":"2026-03-01T12:00:10Z","severity":"breaking",
//	 "message":"tool catalog changed (breaking): removed search",
//	 "before":"sha256:…","after":"sha256:…",
//	 "diff":{"severity":"breaking","removed":["search"],"oldFingerprint":"sha256:…","newFingerprint":"sha256:…"}}
type EventPayload struct {
	Version     int             `json:"version"`
	Type        string          `json:"type"` // always "event"
	Key         string          `json:"key"`
	Kind        string          `json:"kind"`
	EventID     string          `json:"eventId"`
	Fingerprint string          `json:"fingerprint"`
	Endpoint    Endpoint        `json:"endpoint"`
	ObservedAt  time.Time       `json:"observedAt"`
	Severity    string          `json:"severity,omitempty"`
	Message     string          `json:"message"`
	Before      string          `json:"before,omitempty"`
	After       string          `json:"after,omitempty"`
	Diff        json.RawMessage `json:"diff,omitempty"`
	Details     json.RawMessage `json:"details,omitempty"`
	// Suppressed: on a flapping marker, how many changes of the kind it
	// stood for when sent, since when ({"count":…,"since":…,"last":…}).
	Suppressed *model.EventSuppression `json:"suppressed,omitempty"`
}

// NewEventPayload builds the webhook body for n.
func NewEventPayload(n alert.EventNotification) EventPayload {
	return EventPayload{
		Version: EventPayloadVersion, Type: "event", Key: n.Key, Kind: n.Kind, EventID: n.EventID, Fingerprint: n.Fingerprint,
		Endpoint:   Endpoint{ID: n.EndpointID, Name: n.EndpointName, URL: n.EndpointURL, Labels: n.Labels},
		ObservedAt: n.ObservedAt.UTC(), Severity: n.Severity, Message: n.Message,
		Before: n.Before, After: n.After, Diff: n.Diff, Details: n.Details, Suppressed: n.Suppressed,
	}
}

var _ alert.EventNotifier = (*Sink)(nil)

// NotifyEvent POSTs the EventPayload of n, signed like an incident's.
func (s *Sink) NotifyEvent(ctx context.Context, n alert.EventNotification) error {
	resp, err := s.send(ctx, NewEventPayload(n), n.Key, n.Kind)
	if err != nil {
		return err
	}
	s.logger.DebugContext(ctx, "webhook change event delivered", "endpoint", n.EndpointID, "kind", n.Kind, "status", resp.Status)
	return nil
}
