package api_test

import (
	"net/http"
	"strings"
	"testing"

	apiv1 "github.com/mcpmon/mcpmon/pkg/api/v1"
)

// TestTraceContextIsOptInAndPatchable: an endpoint sends no trace context
// unless created or patched with traceContext true; null restores the
// default off, and the stored endpoint follows the view.
func TestTraceContextIsOptInAndPatchable(t *testing.T) {
	h := newHarness(t)
	off := h.create(`{"name":"off","url":"https://off.example/mcp"}`)
	if _, b := h.do("GET", "/v1/endpoints/"+off.ID, "", ""); off.TraceContext || strings.Contains(string(b), "traceContext") {
		t.Errorf("default endpoint has traceContext: %s", b)
	}
	on := h.create(`{"name":"on","url":"https://on.example/mcp","traceContext":true}`)
	if !on.TraceContext {
		t.Errorf("created with traceContext true, view %+v", on)
	}
	if e, err := h.store.GetEndpoint(t.Context(), on.ID); err != nil || !e.TraceContext {
		t.Fatalf("stored %+v, %v", e, err)
	}
	var got apiv1.EndpointView
	h.mustJSON("PATCH", "/v1/endpoints/"+on.ID, `{"traceContext":null}`, http.StatusOK, &got)
	if e, err := h.store.GetEndpoint(t.Context(), on.ID); err != nil || e.TraceContext || got.TraceContext {
		t.Errorf("after traceContext null: view %v, stored %+v, %v", got.TraceContext, e, err)
	}
	h.mustJSON("PATCH", "/v1/endpoints/"+off.ID, `{"traceContext":true}`, http.StatusOK, &got)
	if e, err := h.store.GetEndpoint(t.Context(), off.ID); err != nil || !e.TraceContext || !got.TraceContext {
		t.Errorf("after traceContext true: view %v, stored %+v, %v", got.TraceContext, e, err)
	}
	if resp, b := h.do("POST", "/v1/endpoints", "", `{"name":"bad","url":"https://bad.example/mcp","traceContext":"yes"}`); resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), "traceContext") {
		t.Errorf("traceContext \"yes\": %d %s, want a 400 naming the field", resp.StatusCode, b)
	}
}
