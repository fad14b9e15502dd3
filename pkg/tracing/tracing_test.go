package tracing_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/testpeers"
	"github.com/mcpmon/mcpmon/pkg/tracing"
)

func TestNewIsOffWithoutAReceiver(t *testing.T) {
	tr, err := tracing.New(t.Context(), tracing.Options{Getenv: func(string) string { return "" }})
	if err != nil || tr.Provider() != nil {
		t.Fatalf("New without a receiver: provider %v, %v; want none", tr.Provider(), err)
	}
	if err := tr.Shutdown(t.Context()); err != nil {
		t.Errorf("Shutdown of tracing off: %v", err)
	}
}

// TestExportHonoursTheStandardVariables: OTEL_EXPORTER_OTLP_HEADERS reach
// the receiver on every export but never the log, OTEL_SERVICE_NAME and
// OTEL_RESOURCE_ATTRIBUTES name the resource, and Shutdown flushes a span
// still waiting in the batch.
func TestExportHonoursTheStandardVariables(t *testing.T) {
	rcv := testpeers.NewOTLPReceiver(t)
	t.Setenv("OTEL_EXPORTER_OTLP_HEADERS", "x-api-key=hdr-secret-value")
	t.Setenv("OTEL_SERVICE_NAME", "mcpmon-eu")
	t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment.name=staging")
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "600000") // only Shutdown exports
	var logs bytes.Buffer
	tr, err := tracing.New(t.Context(), tracing.Options{Endpoint: rcv.HTTPURL, ServiceVersion: "v9", Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil || tr.Provider() == nil {
		t.Fatalf("New: %v", err)
	}
	_, span := tr.Provider().Tracer("test").Start(t.Context(), "one")
	span.End()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := tr.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	spans := rcv.Spans()
	if len(spans) != 1 || spans[0].Name != "one" {
		t.Fatalf("received %+v, want the one span", spans)
	}
	res := spans[0].Resource
	if res["service.name"] != "mcpmon-eu" || res["service.version"] != "v9" || res["deployment.environment.name"] != "staging" {
		t.Errorf("resource %v", res)
	}
	hs := rcv.Headers()
	if len(hs) == 0 || hs[0].Get("X-Api-Key") != "hdr-secret-value" {
		t.Errorf("export headers %v, want X-Api-Key from OTEL_EXPORTER_OTLP_HEADERS", hs)
	}
	if !strings.Contains(logs.String(), "tracing on") || strings.Contains(logs.String(), "hdr-secret-value") {
		t.Errorf("log:\n%s", logs.String())
	}
}
