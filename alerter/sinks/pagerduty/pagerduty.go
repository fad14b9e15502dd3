// Package pagerduty is the PagerDuty Events API v2 alert sink. The alerter
// hands it an alert.Notification; it enqueues one alert event: `trigger` when
// an incident opens (and for reminders, which PagerDuty folds into the open
// alert), `resolve` when it closes. The dedup_key is the mcpmon incident ID,
// so a redelivery after a crash lands on the same PagerDuty alert instead of
// paging twice, and the resolve finds the alert it closes.
//
// Responses follow the documented retry table: 202 accepted; 400 permanent;
// 429 and 5xx (and network errors) retryable. The routing key is a secret
// and never appears in errors or logs.
package pagerduty

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/mcpmon/mcpmon/alerter/sinks/post"
	"github.com/mcpmon/mcpmon/pkg/alert"
	"github.com/mcpmon/mcpmon/pkg/clock"
)

// Events API v2 endpoints.
const (
	DefaultURL = "https://events.pagerduty.com/v2/enqueue"
	EUURL      = "https://events.eu.pagerduty.com/v2/enqueue"
)

// Documented limits and values.
const (
	MaxSummary  = 1024
	MaxDedupKey = 255
	// DefaultRetryAfter: PagerDuty sends no Retry-After with its 429 and
	// asks for "a backoff of a few minutes".
	DefaultRetryAfter = 2 * time.Minute
	DefaultTimeout    = 10 * time.Second
	ClientName        = "mcpmon"
)

// Severities accepted by payload.severity.
var Severities = []string{"critical", "error", "warning", "info"}

// Event is an Events API v2 alert event.
type Event struct {
	RoutingKey  string   `json:"routing_key"`
	EventAction string   `json:"event_action"` // trigger | acknowledge | resolve
	DedupKey    string   `json:"dedup_key"`
	Payload     *Payload `json:"payload,omitempty"` // trigger only
	Client      string   `json:"client,omitempty"`
	ClientURL   string   `json:"client_url,omitempty"`
	Links       []Link   `json:"links,omitempty"`
}

// Payload is the PD-CEF part of a trigger event.
type Payload struct {
	Summary       string         `json:"summary"`
	Source        string         `json:"source"`
	Severity      string         `json:"severity"`
	Timestamp     string         `json:"timestamp,omitempty"`
	Component     string         `json:"component,omitempty"`
	Group         string         `json:"group,omitempty"`
	Class         string         `json:"class,omitempty"`
	CustomDetails map[string]any `json:"custom_details,omitempty"`
}

// Link is an entry of the links context property.
type Link struct {
	Href string `json:"href"`
	Text string `json:"text,omitempty"`
}

// Response is the Events API answer.
type Response struct {
	Status   string   `json:"status"`
	Message  string   `json:"message"`
	DedupKey string   `json:"dedup_key"`
	Errors   []string `json:"errors,omitempty"`
}

// Options configure a Sink.
type Options struct {
	Name       string
	RoutingKey string // integration key: a secret
	URL        string // default DefaultURL; EUURL for EU accounts, or a relay
	Severity   string // default "critical"
	// ClientURL is where responders can see mcpmon (client_url); optional.
	ClientURL string
	Client    *http.Client
	Timeout   time.Duration // default DefaultTimeout
	Clock     clock.Clock
	Logger    *slog.Logger
}

// ErrConfig reports an unusable sink configuration.
var ErrConfig = errors.New("invalid pagerduty sink configuration")

// Sink enqueues PagerDuty alert events.
type Sink struct {
	o      Options
	client *http.Client
	logger *slog.Logger
}

var _ alert.Sink = (*Sink)(nil)

// New returns a PagerDuty sink.
func New(o Options) (*Sink, error) {
	if o.Name == "" {
		return nil, fmt.Errorf("%w: name is required", ErrConfig)
	}
	if o.RoutingKey == "" {
		return nil, fmt.Errorf("%w: sink %q: routingKey (the Events API v2 integration key) is required", ErrConfig, o.Name)
	}
	if o.URL == "" {
		o.URL = DefaultURL
	}
	if o.Severity == "" {
		o.Severity = "critical"
	}
	if !validSeverity(o.Severity) {
		return nil, fmt.Errorf("%w: sink %q: severity %q: want one of %s", ErrConfig, o.Name, o.Severity, strings.Join(Severities, ", "))
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Sink{o: o, client: post.Client(o.Client, o.Timeout), logger: o.Logger.With("sink", o.Name, "sink_type", "pagerduty")}, nil
}

func validSeverity(s string) bool {
	for _, v := range Severities {
		if s == v {
			return true
		}
	}
	return false
}

// Name returns the sink name.
func (s *Sink) Name() string { return s.o.Name }

// send posts payload to url (the Events API's enqueue or change endpoint):
// the one delivery path of incidents and change events. A 429 without
// Retry-After waits DefaultRetryAfter.
func (s *Sink) send(ctx context.Context, url string, payload any) (*post.Response, error) {
	body, err := json.Marshal(payload)
	if err != nil {
		return nil, fmt.Errorf("sink %q: %w: encode event: %w", s.o.Name, alert.ErrPermanent, err)
	}
	resp, err := post.Do(ctx, s.client, post.Request{
		Sink: s.o.Name, URL: url, Body: body, Now: s.o.Clock.Now,
		Header:  http.Header{"Content-Type": {"application/json"}},
		Secrets: []string{s.o.RoutingKey},
	})
	var ra *alert.RetryAfterError
	if errors.As(err, &ra) && resp != nil && resp.Header.Get("Retry-After") == "" {
		ra.After = DefaultRetryAfter
	}
	return resp, err
}

// Notify enqueues the event for n; an owner's update (which the Events
// API cannot attach to an alert) goes as a change event (notifyUpdate).
func (s *Sink) Notify(ctx context.Context, n alert.Notification) error {
	if n.Kind == alert.KindUpdate {
		return s.notifyUpdate(ctx, n)
	}
	resp, err := s.send(ctx, s.o.URL, s.NewEvent(n))
	if err != nil {
		return err
	}
	var r Response
	_ = json.Unmarshal(resp.Body, &r) // the status code decides; the body is informational
	s.logger.DebugContext(ctx, "pagerduty event accepted", "incident", n.IncidentID, "kind", n.Kind,
		"status", resp.Status, "pd_status", r.Status, "dedup_key", r.DedupKey)
	return nil
}

// NewEvent builds the Events API v2 event for n.
func (s *Sink) NewEvent(n alert.Notification) Event {
	ev := Event{RoutingKey: s.o.RoutingKey, DedupKey: DedupKey(n.IncidentID)}
	if n.Kind == alert.KindResolve {
		ev.EventAction = "resolve"
		return ev
	}
	ev.EventAction = "trigger"
	name := n.EndpointName
	if name == "" {
		name = n.EndpointID
	}
	summary := fmt.Sprintf("[mcpmon] MCP endpoint %s is down", name)
	if n.Kind == alert.KindReminder {
		summary = fmt.Sprintf("[mcpmon] MCP endpoint %s is still down", name)
	}
	if why := strings.TrimSpace(n.Class + ": " + n.Reason); n.Class != "" || n.Reason != "" {
		summary += " (" + strings.Trim(why, ": ") + ")"
	}
	details := map[string]any{
		"endpoint_id":   n.EndpointID,
		"endpoint_name": n.EndpointName,
		"endpoint_url":  n.EndpointURL,
		"incident_id":   n.IncidentID,
		"state":         n.State,
		"class":         n.Class,
		"reason":        n.Reason,
		"first_failure": n.FirstFailure.UTC().Format(time.RFC3339),
		"opened_at":     n.OpenedAt.UTC().Format(time.RFC3339),
	}
	if len(n.Labels) > 0 {
		details["labels"] = n.Labels
	}
	if n.Sequence > 0 {
		details["reminder"] = n.Sequence
	}
	ev.Payload = &Payload{
		Summary:       alert.Truncate(summary, MaxSummary),
		Source:        source(n),
		Severity:      s.o.Severity,
		Timestamp:     n.OpenedAt.UTC().Format(time.RFC3339),
		Component:     name,
		Group:         n.Labels["group"],
		Class:         n.Class,
		CustomDetails: details,
	}
	ev.Client = ClientName
	ev.ClientURL = s.o.ClientURL
	if isHTTPURL(n.EndpointURL) {
		ev.Links = []Link{{Href: n.EndpointURL, Text: "MCP endpoint " + name}}
	}
	return ev
}

// DedupKey is the incident ID, or a stable hash of it when it exceeds the
// documented 255 characters.
func DedupKey(incidentID string) string {
	if len(incidentID) <= MaxDedupKey {
		return incidentID
	}
	sum := sha256.Sum256([]byte(incidentID))
	return "mcpmon-" + hex.EncodeToString(sum[:])
}

// source is the "unique location of the affected system, preferably a
// hostname": the endpoint's host, else its name or ID.
func source(n alert.Notification) string {
	if u, err := url.Parse(n.EndpointURL); err == nil && u.Host != "" {
		return u.Host
	}
	if n.EndpointName != "" {
		return n.EndpointName
	}
	return n.EndpointID
}

func isHTTPURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}
