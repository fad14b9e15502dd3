package prober

// otel.go owns the probe's trace: one root span "probe" per probe and one
// child per phase it timed (trace.go), built after the probe from the
// phases' own start and end, so the spans and the phase histograms agree
// and an untraced probe does no tracing work at all. With the endpoint's
// traceContext on, the probe's W3C trace context goes to the target on
// every request (request.go). Attributes name the endpoint, the era, the
// transport and the outcome; never a header value, a token, a path, a
// query or user info (docs/operations/tracing.md lists them).

import (
	"context"
	"net/url"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/msg"
)

// TracerName is the instrumentation scope of the probe's spans.
const TracerName = "github.com/mcpmon/mcpmon/prober"

// SpanProbe is the root span of a probe; its children are named by the
// msg.Phase* they time.
const SpanProbe = "probe"

// Span attribute keys: the semantic conventions' where they have one
// (server.*, url.scheme, http.response.status_code, error.type and the
// MCP conventions' mcp.*), mcpmon.* for what only mcpmon knows.
const (
	AttrEndpointID      = "mcpmon.endpoint.id"
	AttrProbeRunID      = "mcpmon.probe.run_id"
	AttrRegion          = "mcpmon.probe.region"
	AttrTransport       = "mcpmon.probe.transport"
	AttrClass           = "mcpmon.probe.class"
	AttrStatus          = "mcpmon.probe.status"
	AttrToolCount       = "mcpmon.probe.tool_count"
	AttrProtocolVersion = "mcp.protocol.version"
	AttrMethod          = "mcp.method.name"
	AttrHTTPStatus      = "http.response.status_code"
	AttrServerAddress   = "server.address"
	AttrServerPort      = "server.port"
	AttrURLScheme       = "url.scheme"
	AttrErrorType       = "error.type"
)

// phaseMethods is the MCP method a phase's span times, where it times one.
var phaseMethods = map[string]string{
	msg.PhaseDiscover:    "server/discover",
	msg.PhaseInitialize:  "initialize",
	msg.PhaseInitialized: "notifications/initialized",
	msg.PhasePing:        "ping",
	msg.PhaseToolsList:   "tools/list",
	msg.PhaseToolCall:    "tools/call",
}

// startProbeSpan starts the probe's root span; without a tracer it returns
// ctx and a nil span, and nothing else in this file runs.
func (p *Prober) startProbeSpan(ctx context.Context, ep model.Endpoint, cmd msg.ProbeCommand, start time.Time) (context.Context, trace.Span) {
	if p.tracer == nil {
		return ctx, nil
	}
	return p.tracer.Start(ctx, SpanProbe, trace.WithSpanKind(trace.SpanKindClient), trace.WithTimestamp(start),
		trace.WithAttributes(attribute.String(AttrEndpointID, ep.ID), attribute.String(AttrProbeRunID, cmd.ProbeRunID())))
}

// propagateTo sets the trace context the run sends to its target, when the
// endpoint opted in and the probe has a span.
func (r *run) propagateTo(ctx context.Context, span trace.Span) {
	if span == nil || !r.ep.TraceContext || !span.SpanContext().IsValid() {
		return
	}
	c := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, c)
	r.traceparent, r.tracestate = c["traceparent"], c["tracestate"]
}

// endProbeSpan records the outcome on span, adds a child per phase and
// ends it at end.
func (r *run) endProbeSpan(span trace.Span, res *msg.ProbeResult, end time.Time) {
	if span == nil {
		return
	}
	if span.IsRecording() {
		span.SetAttributes(resultAttributes(res, r.u)...)
		tr := r.p.tracer
		ctx := trace.ContextWithSpan(context.Background(), span)
		r.mu.Lock()
		phases := r.phases[:r.nPhases]
		for _, ph := range phases {
			opts := []trace.SpanStartOption{trace.WithTimestamp(ph.start), trace.WithSpanKind(trace.SpanKindClient)}
			if m, ok := phaseMethods[ph.name]; ok {
				opts = append(opts, trace.WithAttributes(attribute.String(AttrMethod, m)))
			}
			_, child := tr.Start(ctx, ph.name, opts...)
			child.End(trace.WithTimestamp(ph.end))
		}
		r.mu.Unlock()
		if res.Status == msg.StatusDown {
			span.SetStatus(codes.Error, res.Class)
		}
	}
	span.End(trace.WithTimestamp(end))
}

// resultAttributes are the root span's attributes from the result and the
// endpoint URL's scheme, host and port (u is nil when the URL did not
// parse; never its path, query or user
// info, which may carry credentials).
func resultAttributes(res *msg.ProbeResult, u *url.URL) []attribute.KeyValue {
	as := make([]attribute.KeyValue, 0, 12)
	as = append(as, attribute.String(AttrClass, res.Class), attribute.String(AttrStatus, string(res.Status)))
	if u != nil && u.Host != "" {
		as = append(as, attribute.String(AttrURLScheme, u.Scheme), attribute.String(AttrServerAddress, u.Hostname()))
		if port, err := strconv.Atoi(u.Port()); err == nil {
			as = append(as, attribute.Int(AttrServerPort, port))
		}
	}
	add := func(k, v string) {
		if v != "" {
			as = append(as, attribute.String(k, v))
		}
	}
	add(AttrProtocolVersion, res.ProtocolVersion)
	add(AttrTransport, res.Transport)
	add(AttrRegion, res.Region)
	if res.HTTPStatus != 0 {
		as = append(as, attribute.Int(AttrHTTPStatus, res.HTTPStatus))
	}
	if res.ToolCount > 0 {
		as = append(as, attribute.Int(AttrToolCount, res.ToolCount))
	}
	if res.Status == msg.StatusDown {
		as = append(as, attribute.String(AttrErrorType, res.Class))
	}
	return as
}
