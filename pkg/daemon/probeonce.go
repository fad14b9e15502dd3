package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"net/url"
	"time"

	"github.com/mcpmon/mcpmon/pkg/clock"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/msg"
	"github.com/mcpmon/mcpmon/pkg/tracing"
	"github.com/mcpmon/mcpmon/prober"
)

// ProbeOnce runs one probe of ep from this machine with the prober every
// mcpmon role runs (same handshake, classes, SSRF guard and secret
// scrubbing) and returns its result. Nothing is registered, queued or
// stored: it is `mcpmon probe`, for trying a server before registering it,
// for reproducing what a prober saw, and for the MCP conformance suite's
// client scenarios. o.AllowPrivateTargets turns the SSRF guard off, as
// --allow-private-targets does for a daemon; o.OTLPEndpoint (or the OTEL_*
// environment, as for a daemon) exports the probe as a trace, flushed
// before ProbeOnce returns.
func ProbeOnce(ctx context.Context, ep model.Endpoint, o OnceOptions) (msg.ProbeResult, error) {
	u, err := url.Parse(ep.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return msg.ProbeResult{}, fmt.Errorf("url %q: want an http or https URL with a host", ep.URL)
	}
	if err := prober.ValidateProtocol(ep.Transport, ep.ProtocolVersion); err != nil {
		return msg.ProbeResult{}, err
	}
	if ep.Timeout < 0 || ep.Timeout > prober.MaxTimeout {
		return msg.ProbeResult{}, fmt.Errorf("timeout %s: want at most %s", ep.Timeout, prober.MaxTimeout)
	}
	if ep.ID == "" {
		ep.ID = "probe"
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	tr, err := tracing.New(ctx, tracing.Options{Endpoint: o.OTLPEndpoint, Getenv: o.Getenv, ServiceVersion: Version, Logger: log})
	if err != nil {
		return msg.ProbeResult{}, err
	}
	p := prober.New(prober.Options{
		AllowPrivateTargets: o.AllowPrivateTargets,
		AllowedNetworks:     o.AllowedNetworks,
		Logger:              log,
		Clock:               clock.Real{},
		ClientName:          "mcpmon",
		ClientVersion:       Version,
		Tracer:              tr.Provider(),
	})
	// Run, not ProbeAfter: there is no store to remember a catalog in, and
	// one probe has nothing earlier to compare with.
	res, _ := p.Run(ctx, ep, msg.NewProbeCommand(ep.ID, time.Now()), nil)
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), TracingShutdownTimeout)
	defer cancel()
	if err := tr.Shutdown(sctx); err != nil {
		log.Warn("flush the probe's spans to the OTLP receiver", "component", "tracing", "err", err)
	}
	return res, nil
}

// OnceOptions configure ProbeOnce.
type OnceOptions struct {
	AllowPrivateTargets bool
	// AllowedNetworks open only these private networks (--allow-target-networks).
	AllowedNetworks []netip.Prefix
	// OTLPEndpoint is --otlp-endpoint; Getenv reads the OTEL_* variables
	// (nil: the process environment).
	OTLPEndpoint string
	Getenv       func(string) string
	// Logger; nil discards.
	Logger *slog.Logger
}
