// Package webhook is the generic JSON webhook alert sink. The alerter hands
// it an alert.Notification; it POSTs one Payload (a stable, versioned JSON
// document) to the configured URL with an Idempotency-Key header equal to the
// notification key and, when a secret is set, an HMAC-SHA256 signature over
// "<timestamp>.<body>" that receivers check with Verify to reject forged or
// replayed deliveries.
//
// The body is a pure function of the notification (no send time, no random
// IDs), so a redelivery after a crash carries the same body and the same
// Idempotency-Key; only the timestamp and signature headers change.
package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/mcpmon/mcpmon/alerter/sinks/post"
	"github.com/mcpmon/mcpmon/pkg/alert"
	"github.com/mcpmon/mcpmon/pkg/clock"
)

// Headers set on every delivery.
const (
	HeaderTimestamp   = "X-Mcpmon-Timestamp" // Unix seconds of the attempt
	HeaderSignature   = "X-Mcpmon-Signature" // v1=<hex HMAC-SHA256(secret, timestamp + "." + body)>
	HeaderEvent       = "X-Mcpmon-Event"     // open | resolve | reminder | update | digest
	HeaderIdempotency = "Idempotency-Key"    // the notification (ledger) key
)

// PayloadVersion is bumped on any incompatible change of Payload.
const PayloadVersion = 1

// DefaultTimeout bounds one delivery attempt.
const DefaultTimeout = 10 * time.Second

// Payload is the JSON body of a webhook alert.
type Payload struct {
	Version      int        `json:"version"`
	Key          string     `json:"key"`
	Kind         alert.Kind `json:"kind"`  // open | resolve | reminder | update
	State        string     `json:"state"` // open | acknowledged | resolved
	IncidentID   string     `json:"incidentId"`
	Endpoint     Endpoint   `json:"endpoint"`
	Class        string     `json:"class,omitempty"`
	Reason       string     `json:"reason,omitempty"`
	FirstFailure time.Time  `json:"firstFailure"`
	OpenedAt     time.Time  `json:"openedAt"`
	ResolvedAt   *time.Time `json:"resolvedAt,omitempty"`
	Sequence     int        `json:"sequence,omitempty"` // reminders and updates: 1, 2, ...
	// Update is the owner's update (kind update): an optional field of
	// version 1.
	Update *Update `json:"update,omitempty"`
	// Severity is critical (a global incident) or warning (a regional
	// one); IncidentKind global or regional; Regions the failing regions
	// of a regional incident. Added in version 1 as optional fields.
	Severity     string   `json:"severity,omitempty"`
	IncidentKind string   `json:"incidentKind,omitempty"`
	Regions      []string `json:"regions,omitempty"`
}

// Update is the incident owner's update in a Payload of kind update.
type Update struct {
	Seq     int       `json:"seq"`
	At      time.Time `json:"at"`
	Status  string    `json:"status"` // investigating | identified | monitoring | resolved
	Message string    `json:"message"`
}

// Endpoint identifies the monitored MCP endpoint in a Payload.
type Endpoint struct {
	ID     string            `json:"id"`
	Name   string            `json:"name"`
	URL    string            `json:"url"`
	Labels map[string]string `json:"labels,omitempty"`
}

// NewPayload builds the webhook body for n.
func NewPayload(n alert.Notification) Payload {
	return Payload{
		Version:    PayloadVersion,
		Key:        n.Key,
		Kind:       n.Kind,
		State:      n.State,
		IncidentID: n.IncidentID,
		Endpoint: Endpoint{
			ID:     n.EndpointID,
			Name:   n.EndpointName,
			URL:    n.EndpointURL,
			Labels: n.Labels,
		},
		Class:        n.Class,
		Reason:       n.Reason,
		FirstFailure: n.FirstFailure.UTC(),
		OpenedAt:     n.OpenedAt.UTC(),
		ResolvedAt:   utcPtr(n.ResolvedAt),
		Sequence:     n.Sequence,
		Update:       newUpdate(n.Update),
		Severity:     n.Severity,
		IncidentKind: n.IncidentKind,
		Regions:      n.Regions,
	}
}

func newUpdate(u *alert.Update) *Update {
	if u == nil {
		return nil
	}
	return &Update{Seq: u.Seq, At: u.At.UTC(), Status: u.Status, Message: u.Message}
}

func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

// Options configure a Sink.
type Options struct {
	Name   string // stable sink name (ledger keys, logs, metrics)
	URL    string // secret: may embed a token; never logged
	Secret string // optional HMAC-SHA256 key
	// Client is used for deliveries; its Timeout is capped at Timeout and
	// redirects are not followed. Nil gets a new client.
	Client  *http.Client
	Timeout time.Duration // default DefaultTimeout
	Clock   clock.Clock   // default clock.Real
	Logger  *slog.Logger  // default discards
}

// ErrConfig reports an unusable sink configuration.
var ErrConfig = errors.New("invalid webhook sink configuration")

// Sink delivers notifications to a generic JSON webhook.
type Sink struct {
	name   string
	url    string
	secret string
	client *http.Client
	clock  clock.Clock
	logger *slog.Logger
}

var _ alert.Sink = (*Sink)(nil)

// New returns a webhook sink. It does not contact the receiver.
func New(o Options) (*Sink, error) {
	if o.Name == "" {
		return nil, fmt.Errorf("%w: name is required", ErrConfig)
	}
	if o.URL == "" {
		return nil, fmt.Errorf("%w: sink %q: url is required", ErrConfig, o.Name)
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
	return &Sink{
		name:   o.Name,
		url:    o.URL,
		secret: o.Secret,
		client: post.Client(o.Client, o.Timeout),
		clock:  o.Clock,
		logger: o.Logger.With("sink", o.Name, "sink_type", "webhook"),
	}, nil
}

// Name returns the sink name.
func (s *Sink) Name() string { return s.name }

// Notify POSTs the Payload of n.
func (s *Sink) Notify(ctx context.Context, n alert.Notification) error {
	resp, err := s.send(ctx, NewPayload(n), n.Key, string(n.Kind))
	if err != nil {
		return err
	}
	s.logger.DebugContext(ctx, "webhook alert delivered", "incident", n.IncidentID, "kind", n.Kind, "status", resp.Status)
	return nil
}

// send POSTs payload as signed JSON with the idempotency key and kind
// headers: the one delivery path of incidents and change events.
func (s *Sink) send(ctx context.Context, payload any, key, kind string) (*post.Response, error) {
	body, err := json.Marshal(payload)
	if err != nil {
		return nil, fmt.Errorf("sink %q: %w: encode payload: %w", s.name, alert.ErrPermanent, err)
	}
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set(HeaderIdempotency, key)
	h.Set(HeaderEvent, kind)
	ts := s.clock.Now().Unix()
	h.Set(HeaderTimestamp, fmt.Sprint(ts))
	if s.secret != "" {
		h.Set(HeaderSignature, Sign(s.secret, ts, body))
	}
	return post.Do(ctx, s.client, post.Request{
		Sink: s.name, URL: s.url, Header: h, Body: body,
		Secrets: []string{s.secret}, Now: s.clock.Now,
	})
}
