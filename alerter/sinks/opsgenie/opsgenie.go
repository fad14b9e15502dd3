// Package opsgenie is the Opsgenie Alert API alert sink. The alerter hands
// it an alert.Notification; when an incident opens it creates an alert
// (POST /v2/alerts) whose alias is the mcpmon incident ID, and when the
// incident resolves it closes that alert by alias
// (POST /v2/alerts/{alias}/close?identifierType=alias). Because Opsgenie
// deduplicates open alerts on alias, a redelivered create after a crash
// increments the alert's count instead of opening a second alert; reminders
// use the same mechanism.
//
// Requests carry "Authorization: GenieKey <key>"; the key never appears in
// errors or logs. The API base URL is overridable (EU instance, relays, tests).
package opsgenie

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/mcpmon/mcpmon/alerter/sinks/post"
	"github.com/mcpmon/mcpmon/pkg/alert"
	"github.com/mcpmon/mcpmon/pkg/clock"
)

// API base URLs.
const (
	DefaultURL = "https://api.opsgenie.com"
	EUURL      = "https://api.eu.opsgenie.com"
)

// Documented field limits of the create-alert request.
const (
	MaxMessage     = 130
	MaxAlias       = 512
	MaxDescription = 15000
	MaxEntity      = 512
	MaxSource      = 100
	MaxTags        = 20
	MaxTag         = 50
	MaxDetails     = 8000 // total characters of details keys and values
	MaxNote        = 25000
	DefaultTimeout = 10 * time.Second
	Source         = "mcpmon"
)

// Priorities accepted by the API.
var Priorities = []string{"P1", "P2", "P3", "P4", "P5"}

// CreateAlert is the body of POST /v2/alerts.
type CreateAlert struct {
	Message     string            `json:"message"`
	Alias       string            `json:"alias"`
	Description string            `json:"description,omitempty"`
	Tags        []string          `json:"tags,omitempty"`
	Details     map[string]string `json:"details,omitempty"`
	Entity      string            `json:"entity,omitempty"`
	Source      string            `json:"source,omitempty"`
	Priority    string            `json:"priority,omitempty"`
}

// CloseAlert is the body of POST /v2/alerts/{identifier}/close.
type CloseAlert struct {
	Source string `json:"source,omitempty"`
	Note   string `json:"note,omitempty"`
}

// AddNote is the body of POST /v2/alerts/{alias}/notes?identifierType=alias.
type AddNote struct {
	Source string `json:"source,omitempty"`
	Note   string `json:"note"`
}

// Response is the asynchronous 202 answer of the Alert API.
type Response struct {
	Result    string  `json:"result"`
	Took      float64 `json:"took"`
	RequestID string  `json:"requestId"`
}

// Options configure a Sink.
type Options struct {
	Name     string
	APIKey   string   // API integration key: a secret
	URL      string   // API base, default DefaultURL; EUURL for EU accounts
	Priority string   // default P2
	Tags     []string // added to every alert
	Client   *http.Client
	Timeout  time.Duration
	Clock    clock.Clock
	Logger   *slog.Logger
}

// ErrConfig reports an unusable sink configuration.
var ErrConfig = errors.New("invalid opsgenie sink configuration")

// Sink creates and closes Opsgenie alerts.
type Sink struct {
	o      Options
	base   string
	client *http.Client
	logger *slog.Logger
}

var _ alert.Sink = (*Sink)(nil)

// New returns an Opsgenie sink.
func New(o Options) (*Sink, error) {
	if o.Name == "" {
		return nil, fmt.Errorf("%w: name is required", ErrConfig)
	}
	if o.APIKey == "" {
		return nil, fmt.Errorf("%w: sink %q: apiKey (an Opsgenie API integration key) is required", ErrConfig, o.Name)
	}
	if o.URL == "" {
		o.URL = DefaultURL
	}
	if o.Priority == "" {
		o.Priority = "P2"
	}
	if !slices.Contains(Priorities, o.Priority) {
		return nil, fmt.Errorf("%w: sink %q: priority %q: want one of %s", ErrConfig, o.Name, o.Priority, strings.Join(Priorities, ", "))
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
		o:      o,
		base:   strings.TrimRight(o.URL, "/"),
		client: post.Client(o.Client, o.Timeout),
		logger: o.Logger.With("sink", o.Name, "sink_type", "opsgenie"),
	}, nil
}

// Name returns the sink name.
func (s *Sink) Name() string { return s.o.Name }

// Notify creates (open, reminder) or closes (resolve) the incident's alert.
func (s *Sink) Notify(ctx context.Context, n alert.Notification) error {
	alias := Alias(n.IncidentID)
	var (
		target string
		body   any
	)
	switch n.Kind {
	case alert.KindResolve:
		target = s.base + "/v2/alerts/" + url.PathEscape(alias) + "/close?identifierType=alias"
		body = s.NewClose(n)
	case alert.KindUpdate:
		// The owner's update becomes a note on the incident's alert.
		target = s.base + "/v2/alerts/" + url.PathEscape(alias) + "/notes?identifierType=alias"
		body = s.NewNote(n)
	default:
		target = s.base + "/v2/alerts"
		body = s.NewCreate(n)
	}
	b, err := json.Marshal(body)
	if err != nil {
		return fmt.Errorf("sink %q: %w: encode request: %w", s.o.Name, alert.ErrPermanent, err)
	}
	resp, err := post.Do(ctx, s.client, post.Request{
		Sink: s.o.Name, URL: target, Body: b, Now: s.o.Clock.Now,
		Header: http.Header{
			"Content-Type":  {"application/json"},
			"Authorization": {"GenieKey " + s.o.APIKey},
		},
		Secrets: []string{s.o.APIKey},
	})
	if err != nil {
		return err
	}
	var r Response
	_ = json.Unmarshal(resp.Body, &r)
	s.logger.DebugContext(ctx, "opsgenie request accepted", "incident", n.IncidentID, "kind", n.Kind,
		"status", resp.Status, "request_id", r.RequestID)
	return nil
}

// NewCreate builds the create-alert request for n within the documented limits.
func (s *Sink) NewCreate(n alert.Notification) CreateAlert {
	name := n.EndpointName
	if name == "" {
		name = n.EndpointID
	}
	msg := "MCP endpoint " + name + " is down"
	if n.Class != "" {
		msg += ": " + n.Class
	}
	var desc strings.Builder
	fmt.Fprintf(&desc, "mcpmon opened incident %s for MCP endpoint %s", n.IncidentID, name)
	if n.EndpointURL != "" {
		fmt.Fprintf(&desc, " (%s)", n.EndpointURL)
	}
	desc.WriteString(".\n")
	if n.Reason != "" {
		fmt.Fprintf(&desc, "Reason: %s\n", n.Reason)
	}
	fmt.Fprintf(&desc, "First failure: %s\nOpened: %s\n", n.FirstFailure.UTC().Format(time.RFC3339), n.OpenedAt.UTC().Format(time.RFC3339))
	if n.Kind == alert.KindReminder {
		fmt.Fprintf(&desc, "Reminder %d: the endpoint is still down.\n", n.Sequence)
	}

	details := map[string]string{
		"endpointId":   n.EndpointID,
		"endpointName": n.EndpointName,
		"endpointUrl":  n.EndpointURL,
		"incidentId":   n.IncidentID,
		"state":        n.State,
		"class":        n.Class,
		"reason":       n.Reason,
		"firstFailure": n.FirstFailure.UTC().Format(time.RFC3339),
		"openedAt":     n.OpenedAt.UTC().Format(time.RFC3339),
	}
	for k, v := range n.Labels {
		details["label."+k] = v
	}
	for k, v := range details {
		if v == "" {
			delete(details, k)
		}
	}
	return CreateAlert{
		Message:     alert.Truncate(msg, MaxMessage),
		Alias:       Alias(n.IncidentID),
		Description: alert.Truncate(desc.String(), MaxDescription),
		Tags:        s.tags(n),
		Details:     capDetails(details),
		Entity:      alert.Truncate(name, MaxEntity),
		Source:      Source,
		Priority:    s.o.Priority,
	}
}

// NewClose builds the close request for n.
func (s *Sink) NewClose(n alert.Notification) CloseAlert {
	note := "Resolved by mcpmon: the endpoint is up again."
	if n.ResolvedAt != nil {
		note = fmt.Sprintf("Resolved by mcpmon at %s after %s: the endpoint is up again.",
			n.ResolvedAt.UTC().Format(time.RFC3339), n.ResolvedAt.Sub(n.OpenedAt).Round(time.Second))
	}
	return CloseAlert{Source: Source, Note: alert.Truncate(note, MaxNote)}
}

// NewNote builds the add-note request for the owner's update n.
func (s *Sink) NewNote(n alert.Notification) AddNote {
	note := "Update from the owner."
	if u := n.Update; u != nil {
		note = fmt.Sprintf("Update (%s) at %s: %s", u.Status, u.At.UTC().Format(time.RFC3339), u.Message)
	}
	return AddNote{Source: Source, Note: alert.Truncate(note, MaxNote)}
}

func (s *Sink) tags(n alert.Notification) []string {
	tags := []string{"mcpmon", "endpoint:" + n.EndpointID}
	if n.Class != "" {
		tags = append(tags, "class:"+n.Class)
	}
	tags = append(tags, s.o.Tags...)
	out := make([]string, 0, len(tags))
	for _, t := range tags {
		t = alert.Truncate(strings.TrimSpace(t), MaxTag)
		if t != "" && !slices.Contains(out, t) && len(out) < MaxTags {
			out = append(out, t)
		}
	}
	return out
}

// capDetails drops entries (in key order, so the result is deterministic)
// once the documented total size would be exceeded.
func capDetails(m map[string]string) map[string]string {
	out := map[string]string{}
	total := 0
	for _, k := range slices.Sorted(maps.Keys(m)) {
		v := alert.Truncate(m[k], 1000)
		if total+utf8.RuneCountInString(k)+utf8.RuneCountInString(v) > MaxDetails {
			continue
		}
		total += utf8.RuneCountInString(k) + utf8.RuneCountInString(v)
		out[k] = v
	}
	return out
}

// Alias is the incident ID, or a stable hash of it beyond the documented
// 512 characters.
func Alias(incidentID string) string {
	if len(incidentID) <= MaxAlias {
		return incidentID
	}
	sum := sha256.Sum256([]byte(incidentID))
	return "mcpmon-" + hex.EncodeToString(sum[:])
}
