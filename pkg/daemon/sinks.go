package daemon

import (
	"context"
	"fmt"

	"github.com/mcpmon/mcpmon/alerter/sinks"
	"github.com/mcpmon/mcpmon/pkg/alert"
	"github.com/mcpmon/mcpmon/pkg/model"
)

type sinkSet struct {
	global      []alert.Sink
	forEndpoint func(ctx context.Context, ep model.Endpoint) ([]alert.Sink, error)
}

// sinks builds the global sinks from --webhook-url and --sinks-file, and the
// per-endpoint resolver (sinks.EndpointResolver) that adds an endpoint's own
// sinks, from the REST API, to them.
//
// The set is built once per process: the alerter and the probers'
// blindness notices (regions.go) share it.
func (d *Daemon) sinks() (sinkSet, error) {
	d.sinkOnce.Do(func() { d.sinkSet, d.sinkErr = d.buildSinks() })
	return d.sinkSet, d.sinkErr
}

func (d *Daemon) buildSinks() (sinkSet, error) {
	var set sinkSet
	cfgs := sinks.FromFlags(d.opts.WebhookURL.Reveal(), d.opts.WebhookSecret.Reveal())
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
	if len(global) == 0 {
		d.log.Warn("no global alert sinks configured: only endpoints with their own sinks alert; set --webhook-url-file (or MCPMON_WEBHOOK_URL) or --sinks-file")
	}

	res := sinks.NewEndpointResolver(global, d.opts.AllowPrivateTargets, logger)
	set.forEndpoint = func(_ context.Context, ep model.Endpoint) ([]alert.Sink, error) {
		return res.For(ep.ID, ep.Sinks)
	}
	return set, nil
}
