package webhook

import (
	"context"
	"time"
)

// SubscriberPayloadVersion is bumped on any incompatible change of
// SubscriberPayload.
const SubscriberPayloadVersion = 1

// SubscriberPayload is the JSON body POSTed to a status page's webhook
// subscriber, told apart from the other bodies by "type": "subscription"
// (and X-Mcpmon-Event: the event kind). It holds only what the page shows
// publicly: no endpoint URL, tenant or internal ID; the incident is named
// by the public key its page and feed use.
//
//	{"version":1,"type":"subscription","key":"sub-…-opened","page":"acme",
//	 "event":"update-1","kind":"update","incident":"3fa1…","at":"2026-03-01T12:05:00Z",
//	 "endpoint":{"name":"docs","slug":"docs"},"openedAt":"2026-03-01T12:00:00Z",
//	 "update":{"seq":1,"at":"2026-03-01T12:05:00Z","status":"identified","message":"rolled back"}}
type SubscriberPayload struct {
	Version    int                `json:"version"`
	Type       string             `json:"type"` // always "subscription"
	Key        string             `json:"key"`
	Page       string             `json:"page"`  // the page's slug
	Event      string             `json:"event"` // opened | update-<n> | resolved
	Kind       string             `json:"kind"`  // opened | update | resolved
	Incident   string             `json:"incident"`
	At         time.Time          `json:"at"`
	Endpoint   SubscriberEndpoint `json:"endpoint"`
	OpenedAt   time.Time          `json:"openedAt"`
	ResolvedAt *time.Time         `json:"resolvedAt,omitempty"`
	Update     *Update            `json:"update,omitempty"`
}

// SubscriberEndpoint is an endpoint as its public page names it.
type SubscriberEndpoint struct {
	Name string `json:"name"`
	Slug string `json:"slug,omitempty"`
}

// NotifySubscriber POSTs p, signed like every delivery of the sink, with
// p.Key as the Idempotency-Key.
func (s *Sink) NotifySubscriber(ctx context.Context, p SubscriberPayload) error {
	p.Version, p.Type = SubscriberPayloadVersion, "subscription"
	resp, err := s.send(ctx, p, p.Key, p.Kind)
	if err != nil {
		return err
	}
	s.logger.DebugContext(ctx, "webhook subscriber notice delivered", "event", p.Event, "status", resp.Status)
	return nil
}
