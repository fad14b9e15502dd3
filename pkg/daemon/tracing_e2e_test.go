package daemon

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmon/mcpmon/pkg/testpeers"
)

// TestRunExportsProbeTracesOverOTLP runs the mcpmon binary with
// --otlp-endpoint pointed at a real OTLP receiver and registers two
// endpoints of one go-sdk server, one with traceContext: each endpoint's
// probes arrive as traces (a root "probe" span with its phase children and
// mcpmon's resource), the opted-in endpoint's requests carry the
// traceparent of an exported root, and the other's carry none.
func TestRunExportsProbeTracesOverOTLP(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs mcpmon; skipped with -short")
	}
	rcv := testpeers.NewOTLPReceiver(t)
	srv := echoMCPServer("trace-fixture")
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	var mu sync.Mutex
	seen := map[string][]string{} // path → traceparent of each request ("" when none)
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen[r.URL.Path] = append(seen[r.URL.Path], r.Header.Get("Traceparent"))
		mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(target.Close)

	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "OTEL_") {
			env = append(env, kv)
		}
	}
	env = append(env, "OTEL_BSP_SCHEDULE_DELAY=200") // export every 200ms, not every 5s
	api := testpeers.StartMcpmon(t, []string{"run", "--listen", "127.0.0.1:0", "--data-dir", filepath.Join(t.TempDir(), "data"),
		"--window", "2s", "--grace", "1s", "--allow-private-targets", "--otlp-endpoint", rcv.HTTPURL}, env)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	optedIn, err := api.Register(ctx, map[string]any{"name": "traced", "url": target.URL + "/opted/mcp", "schedule": "@every 1s", "timeout": "1s", "traceContext": true})
	if err != nil {
		t.Fatal(err)
	}
	other, err := api.Register(ctx, map[string]any{"name": "untraced", "url": target.URL + "/other/mcp", "schedule": "@every 1s", "timeout": "1s"})
	if err != nil {
		t.Fatal(err)
	}

	// roots maps each endpoint to the trace IDs of its probes whose root
	// and initialize child were both received.
	roots := func(spans []testpeers.OTLPSpan) map[string]map[string]bool {
		byID := map[string]testpeers.OTLPSpan{}
		for _, s := range spans {
			byID[s.SpanID] = s
		}
		out := map[string]map[string]bool{}
		for _, s := range spans {
			root, ok := byID[s.ParentID]
			if s.Name != "initialize" || !ok || root.Name != "probe" || root.TraceID != s.TraceID {
				continue
			}
			ep, _ := root.Attrs["mcpmon.endpoint.id"].(string)
			if out[ep] == nil {
				out[ep] = map[string]bool{}
			}
			out[ep][root.TraceID] = true
		}
		return out
	}
	spans := rcv.WaitSpans(t, 90*time.Second, "a probe trace of each endpoint", func(spans []testpeers.OTLPSpan) bool {
		r := roots(spans)
		return len(r[optedIn]) > 0 && len(r[other]) > 0
	})
	for _, s := range spans {
		if s.Name == "probe" && (s.Resource["service.name"] != "mcpmon" || s.Resource["service.version"] != Version) {
			t.Fatalf("probe span resource %v, want service.name mcpmon, service.version %s", s.Resource, Version)
		}
	}
	traced := roots(spans)[optedIn]

	mu.Lock()
	defer mu.Unlock()
	joined := 0
	for _, tp := range seen["/opted/mcp"] {
		parts := strings.Split(tp, "-")
		if len(parts) != 4 {
			t.Fatalf("opted-in endpoint got traceparent %q", tp)
		}
		if traced[parts[1]] {
			joined++
		}
	}
	if joined == 0 {
		t.Errorf("no traceparent the opted-in endpoint got names an exported probe trace (%d requests, traces %v)", len(seen["/opted/mcp"]), traced)
	}
	for _, tp := range seen["/other/mcp"] {
		if tp != "" {
			t.Fatalf("endpoint without traceContext got traceparent %q", tp)
		}
	}
	if len(seen["/other/mcp"]) == 0 {
		t.Error("the endpoint without traceContext was never probed")
	}
}
