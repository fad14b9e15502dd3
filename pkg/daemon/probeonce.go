package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"time"

	"github.com/mcpmon/mcpmon/pkg/clock"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/msg"
	"github.com/mcpmon/mcpmon/prober"
)

// ProbeOnce runs one probe of ep from this machine with the prober every
// mcpmon role runs (same handshake, classes, SSRF guard and secret
// scrubbing) and returns its result. Nothing is registered, queued or
// stored: it is `mcpmon probe`, for trying a server before registering it,
// for reproducing what a prober saw, and for the MCP conformance suite's
// client scenarios. allowPrivate turns the SSRF guard off, as
// --allow-private-targets does for a daemon.
func ProbeOnce(ctx context.Context, ep model.Endpoint, allowPrivate bool, log *slog.Logger) (msg.ProbeResult, error) {
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
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	p := prober.New(prober.Options{
		AllowPrivateTargets: allowPrivate,
		Logger:              log,
		Clock:               clock.Real{},
		ClientName:          "mcpmon",
		ClientVersion:       Version,
	})
	// Run, not ProbeAfter: there is no store to remember a catalog in, and
	// one probe has nothing earlier to compare with.
	res, _ := p.Run(ctx, ep, msg.NewProbeCommand(ep.ID, time.Now()), nil)
	return res, nil
}
