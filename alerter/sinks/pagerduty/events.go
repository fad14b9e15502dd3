package pagerduty

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/mcpmon/mcpmon/pkg/alert"
)

// ChangeEvent is an Events API v2 change event (POST /v2/change/enqueue):
// a change that is not a problem, shown on the service's timeline, never
// paging anyone. The API has no dedup key for change events, so a
// notification sent again in the alerter's one duplicate window (see the
// alerter package) shows twice; custom_details.key names it.
type ChangeEvent struct {
	RoutingKey string        `json:"routing_key"`
	Payload    ChangePayload `json:"payload"`
	Links      []Link        `json:"links,omitempty"`
}

// ChangePayload is a change event's payload.
type ChangePayload struct {
	Summary       string         `json:"summary"` // at most MaxSummary
	Source        string         `json:"source,omitempty"`
	Timestamp     string         `json:"timestamp,omitempty"`
	CustomDetails map[string]any `json:"custom_details,omitempty"`
}

// ChangeURL is the change-events endpoint beside an alert-events URL:
// ".../v2/enqueue" becomes ".../v2/change/enqueue" (the EU host and relays
// keep their host); any other path is replaced by /v2/change/enqueue.
func ChangeURL(alertURL string) string {
	u, err := url.Parse(alertURL)
	if err != nil {
		return alertURL
	}
	if p, ok := strings.CutSuffix(u.Path, "/v2/enqueue"); ok {
		u.Path = p + "/v2/change/enqueue"
	} else {
		u.Path = "/v2/change/enqueue"
	}
	return u.String()
}

var _ alert.EventNotifier = (*Sink)(nil)

// notifyUpdate enqueues the owner's update n as a change event: on the
// service's timeline beside the incident's alert, paging nobody.
func (s *Sink) notifyUpdate(ctx context.Context, n alert.Notification) error {
	resp, err := s.send(ctx, ChangeURL(s.o.URL), s.NewUpdateChange(n))
	if err != nil {
		return err
	}
	s.logger.DebugContext(ctx, "pagerduty update change event accepted", "incident", n.IncidentID, "status", resp.Status)
	return nil
}

// NewUpdateChange builds the change event for the owner's update n; its
// custom_details name the incident and its dedup key, so a reader can
// find the alert it belongs to.
func (s *Sink) NewUpdateChange(n alert.Notification) ChangeEvent {
	name := n.EndpointName
	if name == "" {
		name = n.EndpointID
	}
	details := map[string]any{
		"kind":          string(alert.KindUpdate),
		"key":           n.Key,
		"incident_id":   n.IncidentID,
		"dedup_key":     DedupKey(n.IncidentID),
		"endpoint_id":   n.EndpointID,
		"endpoint_name": n.EndpointName,
		"endpoint_url":  n.EndpointURL,
	}
	summary := fmt.Sprintf("[mcpmon] %s: update", name)
	ts := n.OpenedAt
	if u := n.Update; u != nil {
		details["status"], details["message"], details["seq"] = u.Status, u.Message, u.Seq
		summary = fmt.Sprintf("[mcpmon] %s: update (%s): %s", name, u.Status, u.Message)
		ts = u.At
	}
	ev := ChangeEvent{RoutingKey: s.o.RoutingKey, Payload: ChangePayload{
		Summary:       alert.Truncate(summary, MaxSummary),
		Source:        source(n),
		Timestamp:     ts.UTC().Format(time.RFC3339),
		CustomDetails: details,
	}}
	if isHTTPURL(n.EndpointURL) {
		ev.Links = []Link{{Href: n.EndpointURL, Text: "MCP endpoint " + name}}
	}
	return ev
}

// NotifyEvent enqueues n as a change event.
func (s *Sink) NotifyEvent(ctx context.Context, n alert.EventNotification) error {
	resp, err := s.send(ctx, ChangeURL(s.o.URL), s.NewChangeEvent(n))
	if err != nil {
		return err
	}
	s.logger.DebugContext(ctx, "pagerduty change event accepted", "endpoint", n.EndpointID, "kind", n.Kind, "status", resp.Status)
	return nil
}

// NewChangeEvent builds the change event for n: the summary names the
// endpoint and the change, custom_details carry the kind, fingerprint,
// before/after and the catalog diff.
func (s *Sink) NewChangeEvent(n alert.EventNotification) ChangeEvent {
	name := n.EndpointName
	if name == "" {
		name = n.EndpointID
	}
	details := map[string]any{
		"kind":          n.Kind,
		"key":           n.Key,
		"event_id":      n.EventID,
		"fingerprint":   n.Fingerprint,
		"endpoint_id":   n.EndpointID,
		"endpoint_name": n.EndpointName,
		"endpoint_url":  n.EndpointURL,
		"severity":      n.Severity,
	}
	if n.Before != "" || n.After != "" {
		details["before"], details["after"] = n.Before, n.After
	}
	if len(n.Diff) > 0 {
		details["diff"] = n.Diff
	}
	if len(n.Details) > 0 {
		details["details"] = n.Details
	}
	if len(n.Labels) > 0 {
		details["labels"] = n.Labels
	}
	src := alert.Notification{EndpointID: n.EndpointID, EndpointName: n.EndpointName, EndpointURL: n.EndpointURL}
	ev := ChangeEvent{RoutingKey: s.o.RoutingKey, Payload: ChangePayload{
		Summary:       alert.Truncate(fmt.Sprintf("[mcpmon] %s: %s: %s", name, n.Kind, n.Message), MaxSummary),
		Source:        source(src),
		Timestamp:     n.ObservedAt.UTC().Format(time.RFC3339),
		CustomDetails: details,
	}}
	if isHTTPURL(n.EndpointURL) {
		ev.Links = []Link{{Href: n.EndpointURL, Text: "MCP endpoint " + name}}
	}
	return ev
}
