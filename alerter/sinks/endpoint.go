package sinks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"sync"

	"github.com/mcpmon/mcpmon/pkg/alert"
	"github.com/mcpmon/mcpmon/pkg/netguard"
)

// Per-endpoint sinks: configured by API callers in an endpoint's `sinks`,
// added to the operator's global sinks for that endpoint's notifications.
// Their receivers are the callers' choice, so unless private targets are
// allowed they connect only through the SSRF guard (checked at registration
// by ValidateEndpointSinks, and after DNS on every connection); the global
// sinks are the operator's own configuration and are not guarded.

// EndpointResolver picks an endpoint's sinks: the global ones plus its own,
// built once per configuration and cached one entry per endpoint, so memory
// follows the number of endpoints, not of edits, and a verdict does not
// rebuild HTTP clients.
type EndpointResolver struct {
	global      []alert.Sink
	globalNames map[string]bool
	own         BuildOptions
	log         *slog.Logger

	mu    sync.Mutex
	cache map[string]resolved // by endpoint ID
}

type resolved struct {
	raw   string
	sinks []alert.Sink
}

// NewEndpointResolver returns a resolver over the global sinks. With
// allowPrivate the endpoints' sinks may reach private addresses (tests,
// private deployments).
func NewEndpointResolver(global []alert.Sink, allowPrivate bool, logger *slog.Logger) *EndpointResolver {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	r := &EndpointResolver{global: global, globalNames: map[string]bool{}, log: logger, cache: map[string]resolved{},
		own: BuildOptions{Logger: logger}}
	for _, s := range global {
		r.globalNames[s.Name()] = true
	}
	if !allowPrivate {
		r.own.DialContext = guardedDial()
		r.own.HTTPClient = DialingClient(r.own.DialContext)
	}
	return r
}

// For returns the sinks of endpoint id whose own sinks are raw (the
// endpoint's stored `sinks`; empty or null: the global sinks only).
func (r *EndpointResolver) For(id string, raw json.RawMessage) ([]alert.Sink, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return r.global, nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if c, ok := r.cache[id]; ok && c.raw == string(raw) {
		return c.sinks, nil
	}
	cfgs, err := ParseEndpointSinks(raw)
	if err != nil {
		return nil, fmt.Errorf("sinks of endpoint %s: %w", id, err)
	}
	out := append([]alert.Sink(nil), r.global...)
	for _, c := range cfgs {
		if r.globalNames[c.Name] {
			r.log.Warn("endpoint sink shadows a global sink of the same name; using the global one", "endpoint", id, "sink", c.Name)
			continue
		}
		s, err := BuildOneWith(c, r.own)
		if err != nil {
			return nil, fmt.Errorf("sink %q of endpoint %s: %w", c.Name, id, err)
		}
		// Counted by type, not by the caller-chosen name: bounded series.
		out = append(out, endpointSink{Sink: s, label: "endpoint:" + c.Type})
	}
	r.cache[id] = resolved{raw: string(raw), sinks: out}
	return out, nil
}

// endpointSink is a per-endpoint sink: its name (part of its ledger keys)
// is the caller's, its metric label the sink type.
type endpointSink struct {
	alert.Sink
	label string
}

func (s endpointSink) MetricLabel() string { return s.label }

// Subscribes and NotifyEvent reach the sink underneath, which embedding an
// interface hides.
func (s endpointSink) Subscribes(kind string) bool { return alert.Subscribes(s.Sink, kind) }
func (s endpointSink) NotifyEvent(ctx context.Context, n alert.EventNotification) error {
	return alert.ForwardEvent(ctx, s.Sink, n)
}

// TakesSeverity passes the wrapped sink's severity routing through.
func (s endpointSink) TakesSeverity(sev string) bool { return alert.Takes(s.Sink, sev) }

// DigestRule and NotifyDigest reach the digest wrapper underneath.
func (s endpointSink) DigestRule() (alert.DigestRule, alert.DigestSchedule) {
	r, sched, _ := alert.DigestOf(s.Sink)
	return r, sched
}
func (s endpointSink) NotifyDigest(ctx context.Context, n alert.DigestNotification) error {
	return alert.ForwardDigest(ctx, s.Sink, n)
}

// guardedDial is the dial-time SSRF guard for per-endpoint sinks. A refused
// address is a permanent failure: retrying cannot reach it, so the delivery
// gives up at once instead of spending its budget.
func guardedDial() func(ctx context.Context, network, addr string) (net.Conn, error) {
	dial := netguard.Guard{}.DialContext
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if errors.Is(err, netguard.ErrBlocked) {
			return nil, fmt.Errorf("%w: %w", alert.ErrPermanent, err)
		}
		return c, err
	}
}

// ValidateEndpointSinks vets per-endpoint sinks in REST requests: the
// configuration checks, then — unless allowPrivate — the guard's
// registration-time address check on every receiver the sink connects to
// (url, smtpAddr): a literal loopback, private, link-local (cloud metadata)
// or otherwise blocked IP, or a localhost name, is refused. Names that
// resolve to such addresses are refused when sending.
func ValidateEndpointSinks(raw json.RawMessage, allowPrivate bool) error {
	cfgs, err := ParseEndpointSinks(raw)
	if err != nil || allowPrivate {
		return err
	}
	var errs []error
	for i, c := range cfgs {
		if err := checkAddresses(c); err != nil {
			errs = append(errs, fmt.Errorf("sinks[%d]: %w", i, err))
		}
	}
	return errors.Join(errs...)
}

// checkAddresses applies the guard to the hosts c connects to. Errors name
// the field and the refused host, never the URL (it may embed a token).
// clientUrl is only a link in the alert, never fetched.
func checkAddresses(c Config) error {
	var guard netguard.Guard // private receivers refused
	var errs []error
	if c.URL != "" {
		u, err := url.Parse(c.URL)
		if err != nil {
			// ParseEndpointSinks accepted it; refuse rather than guess.
			errs = append(errs, fmt.Errorf("%w: sink %q: url: unparsable", ErrInvalid, c.Name))
		} else if err := guard.CheckHost(u.Hostname()); err != nil {
			errs = append(errs, fmt.Errorf("%w: sink %q: url: receiver refused: %w", ErrInvalid, c.Name, err))
		}
	}
	if c.SMTPAddr != "" {
		host, _, err := net.SplitHostPort(c.SMTPAddr)
		if err != nil {
			errs = append(errs, fmt.Errorf("%w: sink %q: smtpAddr: want host:port", ErrInvalid, c.Name))
		} else if err := guard.CheckHost(host); err != nil {
			errs = append(errs, fmt.Errorf("%w: sink %q: smtpAddr: relay refused: %w", ErrInvalid, c.Name, err))
		}
	}
	return errors.Join(errs...)
}

// RedactEndpointSinks returns per-endpoint sinks with every secret replaced.
func RedactEndpointSinks(raw json.RawMessage) json.RawMessage {
	cfgs, err := ParseEndpointSinks(raw)
	if err != nil || cfgs == nil {
		return nil
	}
	out := make([]Config, len(cfgs))
	for i, c := range cfgs {
		out[i] = c.Redacted()
	}
	b, err := json.Marshal(out)
	if err != nil {
		return json.RawMessage(`"` + Redacted + `"`)
	}
	return b
}

// GuardedClient is an HTTP client whose every connection passes the SSRF
// guard, a refused address failing permanently: the client of receivers
// chosen by API callers (per-endpoint sinks, status page webhook
// subscribers).
func GuardedClient() *http.Client { return DialingClient(guardedDial()) }
