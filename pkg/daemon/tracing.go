package daemon

import (
	"context"
	"time"

	"github.com/mcpmon/mcpmon/pkg/tracing"
)

// TracingShutdownTimeout bounds the flush of the last spans at exit: a
// receiver that is down loses them rather than holding up the shutdown.
const TracingShutdownTimeout = 5 * time.Second

// startTracing builds the probers' tracer provider from --otlp-endpoint and
// the OTEL_* environment (pkg/tracing); off, d.tracing's Provider is nil.
func (d *Daemon) startTracing(ctx context.Context) error {
	t, err := tracing.New(ctx, tracing.Options{Endpoint: d.opts.OTLPEndpoint, ServiceVersion: Version, Logger: d.log})
	if err != nil {
		return usageError{err}
	}
	d.tracing = t
	return nil
}

// stopTracing flushes the spans of the probes that finished. It runs after
// the handlers have drained, so the last probes' spans are among them.
func (d *Daemon) stopTracing() {
	if d.tracing == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), TracingShutdownTimeout)
	defer cancel()
	if err := d.tracing.Shutdown(ctx); err != nil {
		d.log.Warn("flush spans to the OTLP receiver", "component", "tracing", "err", err)
	}
	d.tracing = nil
}
