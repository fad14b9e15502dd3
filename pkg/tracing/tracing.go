// Package tracing owns the process's OpenTelemetry tracer provider: it
// decides from --otlp-endpoint and the standard OTEL_* variables whether
// traces are exported (Decide, a pure function), and builds the SDK
// provider with a batch span processor and an OTLP/HTTP or OTLP/gRPC
// exporter (New). Spans enter through the trace.TracerProvider it hands
// out (the prober makes one trace per probe); they leave in batches to the
// OTLP receiver, and Shutdown flushes what is left within its context's
// bound. Off, Provider is nil and the prober uses the no-op tracer.
//
// What a probe's spans carry, and what they never carry, is in
// docs/operations/tracing.md.
package tracing

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// ServiceName is the service.name of mcpmon's spans unless
// OTEL_SERVICE_NAME or OTEL_RESOURCE_ATTRIBUTES names another.
const ServiceName = "mcpmon"

// Options configure New.
type Options struct {
	// Endpoint is --otlp-endpoint ("" when unset).
	Endpoint string
	// Getenv reads the OTEL_* variables Decide reads (nil: os.Getenv).
	// The exporters read the rest from the process environment.
	Getenv         func(string) string
	ServiceVersion string
	Logger         *slog.Logger
	// SpanProcessor, when set, replaces the batch processor over the OTLP
	// exporter (benchmarks measure the instrumentation without a network).
	SpanProcessor sdktrace.SpanProcessor
}

// Tracing is the process's tracer provider, or nothing when tracing is off.
type Tracing struct {
	tp *sdktrace.TracerProvider
}

// New builds the provider Decide asks for. Off, it returns a Tracing whose
// Provider is nil. Building the exporter makes no connection: a receiver
// that is down costs dropped batches, logged by the SDK, not a failed start.
func New(ctx context.Context, o Options) (*Tracing, error) {
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	s, err := Decide(o.Endpoint, o.Getenv)
	if err != nil || !s.On {
		return &Tracing{}, err
	}
	sp := o.SpanProcessor
	if sp == nil {
		exp, err := exporter(ctx, s)
		if err != nil {
			return nil, fmt.Errorf("OTLP exporter for %s: %w", s.Shown, err)
		}
		sp = sdktrace.NewBatchSpanProcessor(exp)
	}
	// Detectors later in the list win: the environment's service name and
	// attributes over mcpmon's defaults.
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", ServiceName), attribute.String("service.version", o.ServiceVersion)),
		resource.WithTelemetrySDK(),
		resource.WithFromEnv(),
	)
	if err != nil {
		// A malformed OTEL_RESOURCE_ATTRIBUTES still leaves the rest.
		o.Logger.Warn("tracing resource is partial", "err", err)
	}
	// No sampler option: the SDK reads OTEL_TRACES_SAMPLER and
	// OTEL_TRACES_SAMPLER_ARG (default parentbased_always_on).
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sp), sdktrace.WithResource(res))
	o.Logger.Info("tracing on: probes are exported as OTLP traces", "component", "tracing", "protocol", s.Protocol, "receiver", s.Shown)
	return &Tracing{tp: tp}, nil
}

// exporter builds the OTLP exporter of s. Headers, timeout, compression
// and certificates come from the OTEL_EXPORTER_OTLP_* variables, read by
// the exporter: the headers (credentials) never pass through mcpmon.
func exporter(ctx context.Context, s Setup) (*otlptrace.Exporter, error) {
	if s.Protocol == ProtocolGRPC {
		var opts []otlptracegrpc.Option
		if s.URL != "" {
			opts = append(opts, otlptracegrpc.WithEndpointURL(s.URL))
		}
		return otlptracegrpc.New(ctx, opts...)
	}
	var opts []otlptracehttp.Option
	if s.URL != "" {
		opts = append(opts, otlptracehttp.WithEndpointURL(s.URL))
	}
	return otlptracehttp.New(ctx, opts...)
}

// Provider is the tracer provider, nil when tracing is off.
func (t *Tracing) Provider() trace.TracerProvider {
	if t == nil || t.tp == nil {
		return nil
	}
	return t.tp
}

// Shutdown flushes the spans not yet exported and stops the exporter,
// giving up when ctx ends (the caller bounds it: a receiver that is down
// must not hold up the process's exit).
func (t *Tracing) Shutdown(ctx context.Context) error {
	if t == nil || t.tp == nil {
		return nil
	}
	return t.tp.Shutdown(ctx)
}
