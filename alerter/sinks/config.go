// Package sinks turns alert-sink configuration into alert.Sink values. Sinks
// are configured globally (a JSON file, --sinks-file, plus the
// --webhook-url/--webhook-secret flags) and per endpoint (the REST API hands
// the raw JSON to ParseEndpointSinks). Config is validated field by field
// with errors that name the sink and the field but never echo a secret, and
// Build constructs one sink per entry from the packages under alerter/sinks/.
//
// A sink's Name is part of its ledger keys, so it must stay the same across
// restarts: renaming a sink re-sends alerts for open incidents.
package sinks

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/mail"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/mcpmon/mcpmon/pkg/alert"
	"github.com/mcpmon/mcpmon/pkg/model"
)

// Sink types.
const (
	TypeWebhook   = "webhook"
	TypeSlack     = "slack"
	TypePagerDuty = "pagerduty"
	TypeOpsgenie  = "opsgenie"
	TypeEmail     = "email"
)

// Types lists the supported sink types.
var Types = []string{TypeWebhook, TypeSlack, TypePagerDuty, TypeOpsgenie, TypeEmail}

// FlagWebhookName is the name of the sink built from --webhook-url.
const FlagWebhookName = "webhook"

// Timeouts.
const (
	DefaultHTTPTimeout = 10 * time.Second
	DefaultSMTPTimeout = 30 * time.Second
	MinTimeout         = time.Second
	MaxTimeout         = 5 * time.Minute
)

// MaxEndpointSinks bounds the sinks one endpoint may declare over REST.
const MaxEndpointSinks = 10

// Redacted is the marker Config.Redacted writes (model.Redacted).
const Redacted = model.Redacted

// ErrInvalid wraps every configuration validation error.
var ErrInvalid = errors.New("invalid sink configuration")

var nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,62}$`)

// Config describes one sink. Fields not used by a type must be empty.
//
// JSON (field names as tagged; timeout is a Go duration string):
//
//	{"name": "ops-slack", "type": "slack", "url": "https://hooks.slack.com/services/…"}
//	{"name": "hook", "type": "webhook", "url": "https://example.com/mcpmon", "secret": "…", "timeout": "5s"}
//	{"name": "pd", "type": "pagerduty", "routingKey": "…", "url": "https://events.eu.pagerduty.com/v2/enqueue"}
//	{"name": "og", "type": "opsgenie", "apiKey": "…", "url": "https://api.eu.opsgenie.com", "priority": "P1"}
//	{"name": "mail", "type": "email", "smtpAddr": "smtp.example.com:587", "smtpUsername": "…",
//	 "smtpPassword": "…", "from": "mcpmon <alerts@example.com>", "to": ["oncall@example.com"]}
type Config struct {
	Name string `json:"name"`
	Type string `json:"type"`

	// URL is the receiver for webhook and slack (a secret: it may embed a
	// token) and the API override for pagerduty (events endpoint) and
	// opsgenie (API base): EU accounts, relays, tests.
	URL string `json:"url,omitempty"`
	// Secret signs webhook deliveries (HMAC-SHA256).
	Secret string `json:"secret,omitempty"`
	// RoutingKey is the PagerDuty Events API v2 integration key.
	RoutingKey string `json:"routingKey,omitempty"`
	// APIKey is the Opsgenie API integration key.
	APIKey string `json:"apiKey,omitempty"`

	Severity  string   `json:"severity,omitempty"`  // pagerduty: critical|error|warning|info
	ClientURL string   `json:"clientUrl,omitempty"` // pagerduty: link back to mcpmon
	Priority  string   `json:"priority,omitempty"`  // opsgenie: P1..P5
	Tags      []string `json:"tags,omitempty"`      // opsgenie

	SMTPAddr     string   `json:"smtpAddr,omitempty"` // host:port
	SMTPUsername string   `json:"smtpUsername,omitempty"`
	SMTPPassword string   `json:"smtpPassword,omitempty"`
	SMTPTLS      string   `json:"smtpTLS,omitempty"`    // starttls (default) | require-starttls | tls | none
	SMTPCAFile   string   `json:"smtpCAFile,omitempty"` // PEM roots for the server certificate
	From         string   `json:"from,omitempty"`
	To           []string `json:"to,omitempty"`

	// Notify lists what the sink is sent: "incidents" and change-event
	// kinds (alert.NotifyKinds); empty means incidents only (events.go).
	Notify []string `json:"notify,omitempty"`
	// Severities routes incidents by severity: "critical" (global
	// incidents) and/or "warning" (regional incidents: some regions down,
	// fewer than the quorum). Empty: both (severity.go).
	Severities []string `json:"severities,omitempty"`
	// Digest takes the change events of some severities (of the kinds in
	// Notify) as one message per day or week instead of one each
	// (digest.go).
	Digest *alert.DigestRule `json:"digest,omitempty"`
	// Group, when set, sends the incidents of one tenant that open
	// together for one cause as one grouped notification (group.go).
	// Off by default; not for pagerduty and opsgenie.
	Group *Group `json:"group,omitempty"`

	// Timeout bounds one delivery attempt; 0 is the type's default.
	Timeout time.Duration `json:"-"`
}

// configJSON is Config on the wire: Timeout as a duration string.
type configJSON struct {
	configFields
	Timeout string `json:"timeout,omitempty"`
}

type configFields Config // no methods: breaks the (Un)MarshalJSON recursion

// MarshalJSON writes Timeout as a duration string ("10s").
func (c Config) MarshalJSON() ([]byte, error) {
	j := configJSON{configFields: configFields(c)}
	if c.Timeout != 0 {
		j.Timeout = c.Timeout.String()
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // json.Marshal re-escapes for callers who want it
	if err := enc.Encode(j); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// UnmarshalJSON reads a Config strictly: unknown fields (typos such as
// "routing_key") are errors rather than silently ignored settings.
func (c *Config) UnmarshalJSON(b []byte) error {
	var j configJSON
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&j); err != nil {
		if errors.Is(err, ErrInvalid) {
			return err // a member's own strict reader (Group) said what is wrong
		}
		return fmt.Errorf("%w: %v", ErrInvalid, scrubJSONError(err))
	}
	*c = Config(j.configFields)
	c.Timeout = 0
	if j.Timeout != "" {
		d, err := time.ParseDuration(j.Timeout)
		if err != nil {
			return fmt.Errorf("%w: sink %q: timeout %q: want a duration such as 10s", ErrInvalid, c.Name, j.Timeout)
		}
		c.Timeout = d
	}
	return nil
}

// scrubJSONError keeps decoder errors from quoting values (a type error on
// "secret" would otherwise print it).
func scrubJSONError(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Sprintf("field %q: wrong JSON type (want %s)", te.Field, te.Type)
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("malformed JSON at byte %d", se.Offset)
	}
	msg := err.Error()
	if strings.HasPrefix(msg, "json: unknown field ") {
		return "unknown field " + strings.TrimPrefix(msg, "json: unknown field ")
	}
	return "malformed JSON"
}

// EffectiveTimeout is Timeout or the type's default.
func (c Config) EffectiveTimeout() time.Duration {
	if c.Timeout > 0 {
		return c.Timeout
	}
	if c.Type == TypeEmail {
		return DefaultSMTPTimeout
	}
	return DefaultHTTPTimeout
}

// Validate checks every field and returns all problems joined, each naming
// the sink and the field, none quoting a secret.
func (c Config) Validate() error {
	p := &problems{c: c}
	if !nameRE.MatchString(c.Name) {
		p.bad("name", "want 1-63 characters of a-z, 0-9, '.', '_' or '-', starting with a letter or digit (it is part of ledger keys)")
	}
	if !slices.Contains(Types, c.Type) {
		p.bad("type", "%q: want one of %s", c.Type, strings.Join(Types, ", "))
		return errors.Join(p.errs...)
	}
	if c.Timeout != 0 && (c.Timeout < MinTimeout || c.Timeout > MaxTimeout) {
		p.bad("timeout", "%s: want between %s and %s", c.Timeout, MinTimeout, MaxTimeout)
	}
	p.notify() // events.go
	p.severities()
	p.digest() // digest.go
	p.group()  // group.go
	switch c.Type {
	case TypeWebhook, TypeSlack:
		p.hook()
	case TypePagerDuty:
		p.pagerDuty()
	case TypeOpsgenie:
		p.opsgenie()
	case TypeEmail:
		p.email()
	}
	return errors.Join(p.errs...)
}

// problems collects what is wrong with one sink configuration.
type problems struct {
	c    Config
	errs []error
}

func (p *problems) bad(field, format string, args ...any) {
	p.errs = append(p.errs, fmt.Errorf("%w: sink %q: %s: %s", ErrInvalid, p.c.Name, field, fmt.Sprintf(format, args...)))
}

// unused reports settings the type ignores, which are usually a mistake (a
// routing key on a webhook sink), in a stable order.
func (p *problems) unused(fields map[string]bool) {
	for _, f := range slices.Sorted(maps.Keys(fields)) {
		if fields[f] {
			p.bad(f, "not used by type %s", p.c.Type)
		}
	}
}

// smtpUnused reports the email settings on a sink that speaks HTTP.
func (p *problems) smtpUnused() {
	c := p.c
	p.unused(map[string]bool{
		"smtpAddr": c.SMTPAddr != "", "smtpUsername": c.SMTPUsername != "", "smtpPassword": c.SMTPPassword != "",
		"smtpTLS": c.SMTPTLS != "", "smtpCAFile": c.SMTPCAFile != "", "from": c.From != "", "to": len(c.To) > 0,
	})
}

// optionalURL checks an overridden API URL, naming an example in the error.
func (p *problems) optionalURL(field, raw, example string) {
	if raw == "" {
		return
	}
	if msg := checkURL(raw); msg != "" {
		if example != "" {
			msg += " (e.g. " + example + ")"
		}
		p.bad(field, "%s", msg) // never the value: it may embed a token
	}
}

func (p *problems) hook() {
	c := p.c
	if c.URL == "" {
		p.bad("url", "required")
	} else {
		p.optionalURL("url", c.URL, "")
	}
	f := map[string]bool{"routingKey": c.RoutingKey != "", "apiKey": c.APIKey != "", "severity": c.Severity != "",
		"clientUrl": c.ClientURL != "", "priority": c.Priority != "", "tags": len(c.Tags) > 0}
	if c.Type == TypeSlack {
		f["secret"] = c.Secret != ""
	}
	p.unused(f)
	p.smtpUnused()
}

func (p *problems) pagerDuty() {
	c := p.c
	if c.RoutingKey == "" {
		p.bad("routingKey", "required (the Events API v2 integration key)")
	}
	p.optionalURL("url", c.URL, "https://events.eu.pagerduty.com/v2/enqueue")
	if c.Severity != "" && !slices.Contains([]string{"critical", "error", "warning", "info"}, c.Severity) {
		p.bad("severity", "%q: want critical, error, warning or info", c.Severity)
	}
	p.optionalURL("clientUrl", c.ClientURL, "")
	p.unused(map[string]bool{"secret": c.Secret != "", "apiKey": c.APIKey != "", "priority": c.Priority != "", "tags": len(c.Tags) > 0})
	p.smtpUnused()
}

func (p *problems) opsgenie() {
	c := p.c
	if c.APIKey == "" {
		p.bad("apiKey", "required (an Opsgenie API integration key)")
	}
	p.optionalURL("url", c.URL, "https://api.eu.opsgenie.com")
	if c.Priority != "" && !slices.Contains([]string{"P1", "P2", "P3", "P4", "P5"}, c.Priority) {
		p.bad("priority", "%q: want P1..P5", c.Priority)
	}
	if len(c.Tags) > 20 {
		p.bad("tags", "%d tags: Opsgenie accepts at most 20", len(c.Tags))
	}
	p.unused(map[string]bool{"secret": c.Secret != "", "routingKey": c.RoutingKey != "", "severity": c.Severity != "", "clientUrl": c.ClientURL != ""})
	p.smtpUnused()
}

func (p *problems) email() {
	c := p.c
	if c.SMTPAddr == "" {
		p.bad("smtpAddr", "required (host:port, e.g. smtp.example.com:587)")
	} else if h, port, err := net.SplitHostPort(c.SMTPAddr); err != nil || h == "" || port == "" {
		p.bad("smtpAddr", "%q: want host:port", c.SMTPAddr)
	}
	if c.SMTPPassword != "" && c.SMTPUsername == "" {
		p.bad("smtpPassword", "set without smtpUsername")
	}
	if c.SMTPTLS != "" && !slices.Contains([]string{"starttls", "require-starttls", "tls", "none"}, c.SMTPTLS) {
		p.bad("smtpTLS", "%q: want starttls, require-starttls, tls or none", c.SMTPTLS)
	}
	if c.From == "" {
		p.bad("from", "required (e.g. \"mcpmon <alerts@example.com>\")")
	} else if _, err := mail.ParseAddress(c.From); err != nil {
		p.bad("from", "%q is not an email address", c.From)
	}
	if len(c.To) == 0 {
		p.bad("to", "at least one recipient is required")
	}
	for _, r := range c.To {
		if _, err := mail.ParseAddress(r); err != nil {
			p.bad("to", "%q is not an email address", r)
		}
	}
	p.unused(map[string]bool{"url": c.URL != "", "secret": c.Secret != "", "routingKey": c.RoutingKey != "", "apiKey": c.APIKey != "",
		"severity": c.Severity != "", "clientUrl": c.ClientURL != "", "priority": c.Priority != "", "tags": len(c.Tags) > 0})
}

func checkURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "not a valid URL"
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return "want an http or https URL"
	}
	if u.Host == "" {
		return "URL has no host"
	}
	return ""
}

// Redacted returns a copy safe to log or return over the API: secrets
// become "<redacted>" (model.Secret), receiver URLs keep only scheme and
// host (model.SecretURL).
func (c Config) Redacted() Config {
	r := c
	r.Tags = slices.Clone(c.Tags)
	r.To = slices.Clone(c.To)
	r.Notify = slices.Clone(c.Notify)
	if c.Digest != nil {
		d := *c.Digest
		d.Severities = slices.Clone(d.Severities)
		r.Digest = &d
	}
	if c.Group != nil {
		g := *c.Group
		g.By = slices.Clone(g.By)
		r.Group = &g
	}
	for _, p := range []*string{&r.Secret, &r.RoutingKey, &r.APIKey, &r.SMTPPassword} {
		*p = model.Secret(*p).String()
	}
	// pagerduty/opsgenie URLs are API endpoints without tokens: only their
	// credentials are hidden, so an EU or relay override stays visible.
	if c.Type == TypePagerDuty || c.Type == TypeOpsgenie {
		r.URL = model.RedactURL(r.URL)
	} else {
		r.URL = model.SecretURL(r.URL).String()
	}
	r.ClientURL = model.RedactURL(r.ClientURL)
	return r
}

// RedactURL is raw as a model.SecretURL renders it: scheme and host, with
// a path and a query each shown as "<redacted>".
func RedactURL(raw string) string { return model.SecretURL(raw).String() }

// String is the redacted JSON form, so a Config printed by accident leaks
// nothing.
func (c Config) String() string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // keep "<redacted>" readable
	if err := enc.Encode(c.Redacted()); err != nil {
		return "sinks.Config{" + c.Name + "}"
	}
	return strings.TrimSuffix(buf.String(), "\n")
}

// GoString keeps %#v redacted too.
func (c Config) GoString() string { return "sinks.Config" + c.String() }

// LogValue makes slog print the redacted form.
func (c Config) LogValue() slog.Value { return slog.StringValue(c.String()) }

var _ slog.LogValuer = Config{}
