package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"sync"

	"github.com/mcpmon/mcpmon/alerter/sinks"
	"github.com/mcpmon/mcpmon/pkg/alert"
	"github.com/mcpmon/mcpmon/pkg/netguard"
	"github.com/mcpmon/mcpmon/pkg/store"
)

type sinkSet struct {
	global      []alert.Sink
	forEndpoint func(ctx context.Context, ep store.Endpoint) ([]alert.Sink, error)
}

// sinks builds the global sinks from --webhook-url and --sinks-file, and the
// per-endpoint resolver that adds an endpoint's own sinks (from the REST API)
// to them. Built endpoint sinks are cached by their configuration so a
// verdict does not rebuild HTTP clients.
func (d *Daemon) sinks() (sinkSet, error) {
	var set sinkSet
	cfgs := sinks.FromFlags(d.opts.WebhookURL, d.opts.WebhookSecret)
	if d.opts.SinksFile != "" {
		fromFile, err := sinks.LoadFile(d.opts.SinksFile)
		if err != nil {
			return set, err
		}
		cfgs = append(cfgs, fromFile...)
	}
	logger := d.log
	global, err := sinks.Build(cfgs, nil, logger)
	if err != nil {
		return set, fmt.Errorf("alert sinks: %w", err)
	}
	set.global = global
	globalNames := map[string]bool{}
	for _, s := range global {
		globalNames[s.Name()] = true
	}
	if len(global) == 0 {
		d.log.Warn("no global alert sinks configured: only endpoints with their own sinks alert; set --webhook-url or --sinks-file")
	}

	// Per-endpoint sinks come from API callers: unless private targets are
	// allowed, they connect only through the SSRF guard (netguard, checked
	// after DNS, on every connection), so a sink URL or SMTP relay cannot
	// reach cloud metadata or internal services. The global sinks above are
	// the operator's own configuration and are not guarded.
	own := sinks.BuildOptions{Logger: logger}
	if !d.opts.AllowPrivateTargets {
		own.DialContext = guardedSinkDial()
		own.HTTPClient = sinks.DialingClient(own.DialContext)
	}

	// One cache entry per endpoint, replaced when its sinks change, so
	// memory follows the number of endpoints, not the number of edits.
	type cached struct {
		raw   string
		sinks []alert.Sink
	}
	var mu sync.Mutex
	cache := map[string]cached{}
	set.forEndpoint = func(_ context.Context, ep store.Endpoint) ([]alert.Sink, error) {
		if len(ep.Sinks) == 0 || string(ep.Sinks) == "null" {
			return global, nil
		}
		mu.Lock()
		defer mu.Unlock()
		if c, ok := cache[ep.ID]; ok && c.raw == string(ep.Sinks) {
			return c.sinks, nil
		}
		cfgs, err := sinks.ParseEndpointSinks(ep.Sinks)
		if err != nil {
			return nil, fmt.Errorf("sinks of endpoint %s: %w", ep.ID, err)
		}
		out := append([]alert.Sink(nil), global...)
		for _, c := range cfgs {
			if globalNames[c.Name] {
				d.log.Warn("endpoint sink shadows a global sink of the same name; using the global one", "endpoint", ep.ID, "sink", c.Name)
				continue
			}
			s, err := sinks.BuildOneWith(c, own)
			if err != nil {
				return nil, fmt.Errorf("sink %q of endpoint %s: %w", c.Name, ep.ID, err)
			}
			// Counted by type, not by the caller-chosen name: bounded series.
			out = append(out, endpointSink{Sink: s, label: "endpoint:" + c.Type})
		}
		cache[ep.ID] = cached{raw: string(ep.Sinks), sinks: out}
		return out, nil
	}
	return set, nil
}

// endpointSink is a per-endpoint sink: its name (part of its ledger keys)
// is the caller's, its metric label the sink type.
type endpointSink struct {
	alert.Sink
	label string
}

func (s endpointSink) MetricLabel() string { return s.label }

// guardedSinkDial is the dial-time SSRF guard for per-endpoint sinks. A
// refused address is a permanent failure: retrying cannot reach it, so the
// delivery gives up at once instead of spending its budget.
func guardedSinkDial() func(ctx context.Context, network, addr string) (net.Conn, error) {
	dial := netguard.Guard{}.DialContext
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if errors.Is(err, netguard.ErrBlocked) {
			return nil, fmt.Errorf("%w: %w", alert.ErrPermanent, err)
		}
		return c, err
	}
}

// endpointSinksValidator vets per-endpoint sinks in REST requests: the
// sinks package's checks, then — unless allowPrivate — the guard's
// registration-time address check on every receiver the sink connects to
// (url, smtpAddr): a literal loopback, private, link-local (cloud metadata)
// or otherwise blocked IP, or a localhost name, is refused. Names that
// resolve to such addresses are refused when sending, by guardedSinkDial.
func endpointSinksValidator(allowPrivate bool) func(json.RawMessage) error {
	return func(raw json.RawMessage) error {
		cfgs, err := sinks.ParseEndpointSinks(raw)
		if err != nil || allowPrivate {
			return err
		}
		var errs []error
		for i, c := range cfgs {
			if err := checkSinkAddresses(c); err != nil {
				errs = append(errs, fmt.Errorf("sinks[%d]: %w", i, err))
			}
		}
		return errors.Join(errs...)
	}
}

// checkSinkAddresses applies the guard to the hosts c connects to. Errors
// name the field and the refused host, never the URL (it may embed a
// token). clientUrl is only a link in the alert, never fetched.
func checkSinkAddresses(c sinks.Config) error {
	var guard netguard.Guard // private receivers refused
	var errs []error
	if c.URL != "" {
		u, err := url.Parse(c.URL)
		if err != nil {
			// ParseEndpointSinks accepted it; refuse rather than guess.
			errs = append(errs, fmt.Errorf("%w: sink %q: url: unparsable", sinks.ErrInvalid, c.Name))
		} else if err := guard.CheckHost(u.Hostname()); err != nil {
			errs = append(errs, fmt.Errorf("%w: sink %q: url: receiver refused: %w", sinks.ErrInvalid, c.Name, err))
		}
	}
	if c.SMTPAddr != "" {
		host, _, err := net.SplitHostPort(c.SMTPAddr)
		if err != nil {
			errs = append(errs, fmt.Errorf("%w: sink %q: smtpAddr: want host:port", sinks.ErrInvalid, c.Name))
		} else if err := guard.CheckHost(host); err != nil {
			errs = append(errs, fmt.Errorf("%w: sink %q: smtpAddr: relay refused: %w", sinks.ErrInvalid, c.Name, err))
		}
	}
	return errors.Join(errs...)
}

// redactEndpointSinks returns per-endpoint sinks with every secret replaced.
func redactEndpointSinks(raw json.RawMessage) json.RawMessage {
	cfgs, err := sinks.ParseEndpointSinks(raw)
	if err != nil || cfgs == nil {
		return nil
	}
	out := make([]sinks.Config, len(cfgs))
	for i, c := range cfgs {
		out[i] = c.Redacted()
	}
	b, err := json.Marshal(out)
	if err != nil {
		return json.RawMessage(`"<redacted>"`)
	}
	return b
}
