package prober

import (
	"context"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/mcpmon/mcpmon/pkg/tracing"
)

// discardExporter drops every batch: the benchmark measures the
// instrumentation and the batch processor, not a receiver.
type discardExporter struct{}

func (discardExporter) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discardExporter) Shutdown(context.Context) error                             { return nil }

// BenchmarkProbeTracingCPURatio alternates an untraced probe (tracing off:
// no tracer, the daemon's default) with a traced one (the pkg/tracing
// provider, every probe sampled, a batch processor over an exporter that
// discards) against the same server, and reports the CPU of each and
// their ratio. "trace-context" also sends traceparent to the target.
//
//	go test ./prober -run '^$' -bench ProbeTracingCPURatio -benchtime 2000x
func BenchmarkProbeTracingCPURatio(b *testing.B) {
	base := benchServer(b)
	tr, err := tracing.New(b.Context(), tracing.Options{Endpoint: "http://127.0.0.1:1", Getenv: func(string) string { return "" },
		SpanProcessor: sdktrace.NewBatchSpanProcessor(discardExporter{})})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = tr.Shutdown(ctx)
	})
	off := testProber(b, nil)
	on := testProber(b, func(o *Options) { o.Tracer = tr.Provider() })
	for _, tc := range []struct {
		name         string
		traceContext bool
	}{{"spans", false}, {"trace-context", true}} {
		b.Run(tc.name, func(b *testing.B) {
			url := base + "/tools"
			probe := func(p *Prober) {
				ep := endpoint(url)
				ep.TraceContext = tc.traceContext
				if res := p.Probe(context.Background(), ep, cmd()); res.Class != ClassOK {
					b.Fatalf("probe: %s %s", res.Class, res.Error)
				}
			}
			probe(off)
			probe(on)
			rounds := max(b.N, 300)
			var untraced, traced time.Duration
			for range rounds {
				t := cpuTime()
				probe(off)
				m := cpuTime()
				probe(on)
				untraced += m - t
				traced += cpuTime() - m
			}
			b.ReportMetric(float64(untraced)/float64(rounds), "off-cpu-ns/probe")
			b.ReportMetric(float64(traced)/float64(rounds), "on-cpu-ns/probe")
			b.ReportMetric(float64(traced)/float64(untraced), "ratio")
		})
	}
}
