package webhook

import (
	"context"
	"time"

	"github.com/mcpmon/mcpmon/pkg/alert"
)

// DigestPayloadVersion is bumped on any incompatible change of DigestPayload.
const DigestPayloadVersion = 1

// DigestPayload is the JSON body of a digest, told apart by "type":
// "digest" (and X-Mcpmon-Event: digest). The events are the period's
// first alert.MaxDigestEvents, oldest first; total counts them all. It
// is a pure function of the notification, so a redelivery carries the
// same body and Idempotency-Key.
//
//	{"version":1,"type":"digest","key":"digest-hook-acme-2026-06-10T07:00:00Z",
//	 "scope":"acme","every":"daily","periodStart":"2026-06-10T07:00:00Z",
//	 "periodEnd":"2026-06-11T07:00:00Z","total":1,
//	 "events":[{"eventId":"…","endpointId":"ep1","endpointName":"docs","kind":"catalog_info",
//	   "severity":"info","observedAt":"2026-06-10T12:00:00Z","message":"tool catalog changed: added search"}]}
type DigestPayload struct {
	Version     int                 `json:"version"`
	Type        string              `json:"type"` // always "digest"
	Key         string              `json:"key"`
	Scope       string              `json:"scope"`
	Every       string              `json:"every"`
	PeriodStart time.Time           `json:"periodStart"`
	PeriodEnd   time.Time           `json:"periodEnd"`
	Total       int                 `json:"total"`
	Events      []alert.DigestEvent `json:"events"`
}

// NewDigestPayload builds the webhook body for n.
func NewDigestPayload(n alert.DigestNotification) DigestPayload {
	evs := make([]alert.DigestEvent, len(n.Events))
	for i, e := range n.Events {
		e.ObservedAt = e.ObservedAt.UTC()
		evs[i] = e
	}
	return DigestPayload{Version: DigestPayloadVersion, Type: "digest", Key: n.Key, Scope: n.Scope, Every: n.Every,
		PeriodStart: n.PeriodStart.UTC(), PeriodEnd: n.PeriodEnd.UTC(), Total: n.Total, Events: evs}
}

var _ alert.DigestNotifier = (*Sink)(nil)

// NotifyDigest POSTs the DigestPayload of n, signed like an incident's.
func (s *Sink) NotifyDigest(ctx context.Context, n alert.DigestNotification) error {
	resp, err := s.send(ctx, NewDigestPayload(n), n.Key, "digest")
	if err != nil {
		return err
	}
	s.logger.DebugContext(ctx, "webhook digest delivered", "scope", n.Scope, "period_start", n.PeriodStart, "events", n.Total, "status", resp.Status)
	return nil
}
