package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/mcpmon/mcpmon/alerter/sinks"
	"github.com/mcpmon/mcpmon/pkg/alert"
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

	var mu sync.Mutex
	cache := map[string][]alert.Sink{} // endpoint ID + raw config → sinks
	set.forEndpoint = func(_ context.Context, ep store.Endpoint) ([]alert.Sink, error) {
		if len(ep.Sinks) == 0 || string(ep.Sinks) == "null" {
			return global, nil
		}
		key := ep.ID + "\x00" + string(ep.Sinks)
		mu.Lock()
		defer mu.Unlock()
		if s, ok := cache[key]; ok {
			return s, nil
		}
		own, err := sinks.ParseEndpointSinks(ep.Sinks)
		if err != nil {
			return nil, fmt.Errorf("sinks of endpoint %s: %w", ep.ID, err)
		}
		out := append([]alert.Sink(nil), global...)
		for _, c := range own {
			if globalNames[c.Name] {
				d.log.Warn("endpoint sink shadows a global sink of the same name; using the global one", "endpoint", ep.ID, "sink", c.Name)
				continue
			}
			s, err := sinks.BuildOne(c, nil, logger)
			if err != nil {
				return nil, fmt.Errorf("sink %q of endpoint %s: %w", c.Name, ep.ID, err)
			}
			out = append(out, s)
		}
		cache[key] = out
		return out, nil
	}
	return set, nil
}

// validateEndpointSinks vets per-endpoint sinks in REST requests.
func validateEndpointSinks(raw json.RawMessage) error {
	_, err := sinks.ParseEndpointSinks(raw)
	return err
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
