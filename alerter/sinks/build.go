package sinks

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"

	"github.com/mcpmon/mcpmon/alerter/sinks/email"
	"github.com/mcpmon/mcpmon/alerter/sinks/opsgenie"
	"github.com/mcpmon/mcpmon/alerter/sinks/pagerduty"
	"github.com/mcpmon/mcpmon/alerter/sinks/slack"
	"github.com/mcpmon/mcpmon/alerter/sinks/webhook"
	"github.com/mcpmon/mcpmon/pkg/alert"
)

// File is the --sinks-file format: {"sinks": [Config, ...]}. A bare JSON
// array of Config is accepted too.
type File struct {
	Sinks []Config `json:"sinks"`
}

// Parse reads a sinks file and validates every entry.
func Parse(data []byte) ([]Config, error) {
	trimmed := strings.TrimSpace(string(data))
	var cfgs []Config
	switch {
	case trimmed == "":
		return nil, fmt.Errorf("%w: empty sinks file: want {\"sinks\": [...]}", ErrInvalid)
	case trimmed[0] == '[':
		if err := json.Unmarshal(data, &cfgs); err != nil {
			return nil, decodeError(err)
		}
	default:
		var f File
		dec := json.NewDecoder(strings.NewReader(trimmed))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&f); err != nil {
			return nil, decodeError(err)
		}
		cfgs = f.Sinks
	}
	if err := validateAll(cfgs); err != nil {
		return nil, err
	}
	return cfgs, nil
}

func decodeError(err error) error {
	if errors.Is(err, ErrInvalid) {
		return err
	}
	return fmt.Errorf("%w: %s", ErrInvalid, scrubJSONError(err))
}

// LoadFile reads and validates the sinks file at path.
func LoadFile(path string) ([]Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read sinks file: %w", err)
	}
	cfgs, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("sinks file %s: %w", path, err)
	}
	return cfgs, nil
}

// FromFlags is the sink configured by --webhook-url and --webhook-secret
// (MCPMON_WEBHOOK_URL, MCPMON_WEBHOOK_SECRET): a webhook sink named
// FlagWebhookName, or nothing when url is empty.
func FromFlags(webhookURL, webhookSecret string) []Config {
	if webhookURL == "" {
		return nil
	}
	return []Config{{Name: FlagWebhookName, Type: TypeWebhook, URL: webhookURL, Secret: webhookSecret}}
}

// ParseEndpointSinks validates the per-endpoint sinks of a REST request: a
// JSON array of Config (null or absent means none). smtpCAFile is refused
// here: an API caller must not make the server read files. The REST API
// should store the result and return only Redacted copies.
func ParseEndpointSinks(raw json.RawMessage) ([]Config, error) {
	s := strings.TrimSpace(string(raw))
	if s == "" || s == "null" {
		return nil, nil
	}
	if s[0] != '[' {
		return nil, fmt.Errorf("%w: sinks: want a JSON array of sink objects", ErrInvalid)
	}
	var cfgs []Config
	if err := json.Unmarshal(raw, &cfgs); err != nil {
		return nil, decodeError(err)
	}
	if len(cfgs) > MaxEndpointSinks {
		return nil, fmt.Errorf("%w: sinks: %d entries, at most %d per endpoint", ErrInvalid, len(cfgs), MaxEndpointSinks)
	}
	var errs []error
	for _, c := range cfgs {
		if c.SMTPCAFile != "" {
			errs = append(errs, fmt.Errorf("%w: sink %q: smtpCAFile: not allowed in per-endpoint sinks (configure it in the sinks file)", ErrInvalid, c.Name))
		}
		if c.Group != nil {
			// A group spans endpoints; a per-endpoint sink sees one.
			errs = append(errs, fmt.Errorf("%w: sink %q: group: not allowed in per-endpoint sinks (configure it in the sinks file)", ErrInvalid, c.Name))
		}
	}
	if err := validateAll(cfgs); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return cfgs, nil
}

// validateAll validates each entry and that names are unique.
func validateAll(cfgs []Config) error {
	var errs []error
	seen := map[string]bool{}
	for i, c := range cfgs {
		if err := c.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("sinks[%d]: %w", i, err))
		}
		if c.Name != "" && seen[c.Name] {
			errs = append(errs, fmt.Errorf("%w: sinks[%d]: name %q is used twice (names key the alert ledger and must be unique)", ErrInvalid, i, c.Name))
		}
		seen[c.Name] = true
	}
	return errors.Join(errs...)
}

// Build validates cfgs and constructs their sinks. httpClient (nil for a new
// one) is shared by the HTTP sinks, each with its own timeout and no
// redirect following; logger may be nil.
func Build(cfgs []Config, httpClient *http.Client, logger *slog.Logger) ([]alert.Sink, error) {
	if err := validateAll(cfgs); err != nil {
		return nil, err
	}
	out := make([]alert.Sink, 0, len(cfgs))
	for _, c := range cfgs {
		s, err := build(c, httpClient, nil, logger)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// BuildOne validates c and constructs its sink (e.g. a per-endpoint sink).
func BuildOne(c Config, httpClient *http.Client, logger *slog.Logger) (alert.Sink, error) {
	return BuildOneWith(c, BuildOptions{HTTPClient: httpClient, Logger: logger})
}

// BuildOptions say how built sinks reach their receivers.
type BuildOptions struct {
	// HTTPClient is shared by the HTTP sinks (nil: a new one, see Build).
	HTTPClient *http.Client
	// DialContext, when set, opens every connection the sink makes: the
	// email sink's SMTP session, and the HTTP sinks' connections when
	// HTTPClient is nil (a client whose transport dials through it and
	// uses no proxy is made). Set it to keep sinks that API callers
	// configure away from internal addresses (an SSRF guard); a caller
	// that also sets HTTPClient must make that client dial through it.
	DialContext func(ctx context.Context, network, addr string) (net.Conn, error)
	Logger      *slog.Logger // may be nil
}

// BuildOneWith validates c and constructs its sink with o.
func BuildOneWith(c Config, o BuildOptions) (alert.Sink, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if o.DialContext != nil && o.HTTPClient == nil {
		o.HTTPClient = DialingClient(o.DialContext)
	}
	return build(c, o.HTTPClient, o.DialContext, o.Logger)
}

// DialingClient returns an HTTP client for sinks whose every connection is
// opened by dial, directly (no proxy from the environment: a proxy would
// connect on our behalf, past dial's checks).
func DialingClient(dial func(ctx context.Context, network, addr string) (net.Conn, error)) *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.Proxy = nil
	tr.DialContext = dial
	return &http.Client{Transport: tr}
}

func build(c Config, hc *http.Client, dial func(ctx context.Context, network, addr string) (net.Conn, error), logger *slog.Logger) (alert.Sink, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	timeout := c.EffectiveTimeout()
	var (
		s   alert.Sink
		err error
	)
	switch c.Type {
	case TypeWebhook:
		s, err = webhook.New(webhook.Options{Name: c.Name, URL: c.URL, Secret: c.Secret, Client: hc, Timeout: timeout, Logger: logger})
	case TypeSlack:
		s, err = slack.New(slack.Options{Name: c.Name, URL: c.URL, Client: hc, Timeout: timeout, Logger: logger})
	case TypePagerDuty:
		s, err = pagerduty.New(pagerduty.Options{Name: c.Name, RoutingKey: c.RoutingKey, URL: c.URL, Severity: c.Severity,
			ClientURL: c.ClientURL, Client: hc, Timeout: timeout, Logger: logger})
	case TypeOpsgenie:
		s, err = opsgenie.New(opsgenie.Options{Name: c.Name, APIKey: c.APIKey, URL: c.URL, Priority: c.Priority, Tags: c.Tags,
			Client: hc, Timeout: timeout, Logger: logger})
	case TypeEmail:
		var roots *x509.CertPool
		if c.SMTPCAFile != "" {
			pem, rerr := os.ReadFile(c.SMTPCAFile)
			if rerr != nil {
				return nil, fmt.Errorf("%w: sink %q: smtpCAFile: %w", ErrInvalid, c.Name, rerr)
			}
			roots = x509.NewCertPool()
			if !roots.AppendCertsFromPEM(pem) {
				return nil, fmt.Errorf("%w: sink %q: smtpCAFile %s: no PEM certificate found", ErrInvalid, c.Name, c.SMTPCAFile)
			}
		}
		s, err = email.New(email.Options{Name: c.Name, Addr: c.SMTPAddr, Username: c.SMTPUsername, Password: c.SMTPPassword,
			TLS: c.SMTPTLS, RootCAs: roots, From: c.From, To: c.To, Timeout: timeout, Logger: logger, DialContext: dial})
	default:
		return nil, fmt.Errorf("%w: sink %q: type %q unsupported", ErrInvalid, c.Name, c.Type)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: sink %q: %w", ErrInvalid, c.Name, err)
	}
	out := grouped(alert.Subscribed(routed(s, c.Severities), c.Notify), c.Group)
	if c.Digest != nil {
		// Validate checked the rule and the type, whose sinks all carry
		// digests.
		sched, err := c.Digest.Schedule()
		dn, ok := s.(alert.DigestNotifier)
		if err != nil || !ok {
			return nil, fmt.Errorf("%w: sink %q: digest: type %s cannot take one", ErrInvalid, c.Name, c.Type)
		}
		out = alert.Digested(out, dn, *c.Digest, sched)
	}
	return out, nil
}
