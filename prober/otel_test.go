package prober

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmon/mcpmon/pkg/msg"
	"github.com/mcpmon/mcpmon/pkg/testpeers"
	"github.com/mcpmon/mcpmon/pkg/tracing"
)

// tracedProber is a test prober whose probes are exported to rcv over the
// OTLP protocol given ("http/protobuf" or "grpc"), through the same
// pkg/tracing provider the daemon builds. flush exports what is pending.
func tracedProber(t *testing.T, rcv *testpeers.OTLPReceiver, protocol string) (p *Prober, flush func()) {
	t.Helper()
	endpoint := rcv.HTTPURL
	if protocol == tracing.ProtocolGRPC {
		endpoint = rcv.GRPCURL
	}
	env := map[string]string{tracing.EnvProtocol: protocol}
	tr, err := tracing.New(t.Context(), tracing.Options{Endpoint: endpoint, Getenv: func(k string) string { return env[k] }, ServiceVersion: "test"})
	if err != nil || tr.Provider() == nil {
		t.Fatalf("tracing.New: %v (provider %v)", err, tr.Provider())
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = tr.Shutdown(ctx)
	})
	flush = func() {
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		if err := tr.Shutdown(ctx); err != nil {
			t.Fatalf("flush spans: %v", err)
		}
	}
	return testProber(t, func(o *Options) { o.Tracer = tr.Provider() }), flush
}

// spanTree splits the spans of one probe into its root and its children,
// failing unless there is exactly one root and every other span is its child.
func spanTree(t *testing.T, spans []testpeers.OTLPSpan) (root testpeers.OTLPSpan, children map[string]testpeers.OTLPSpan) {
	t.Helper()
	var roots []testpeers.OTLPSpan
	for _, s := range spans {
		if s.ParentID == "" {
			roots = append(roots, s)
		}
	}
	if len(roots) != 1 || roots[0].Name != SpanProbe {
		t.Fatalf("want one root span %q, got %d roots of %d spans: %+v", SpanProbe, len(roots), len(spans), spans)
	}
	root = roots[0]
	children = map[string]testpeers.OTLPSpan{}
	for _, s := range spans {
		if s.SpanID == root.SpanID {
			continue
		}
		if s.ParentID != root.SpanID || s.TraceID != root.TraceID {
			t.Errorf("span %s: trace %s parent %s, want trace %s parent %s (the root)", s.Name, s.TraceID, s.ParentID, root.TraceID, root.SpanID)
		}
		if _, dup := children[s.Name]; dup {
			t.Errorf("two spans named %s", s.Name)
		}
		children[s.Name] = s
	}
	return root, children
}

// TestProbeIsATraceWithASpanPerPhase probes a go-sdk server with an
// exporter pointed at a real OTLP receiver, over OTLP/HTTP and gRPC: the
// probe is one trace, a root "probe" span with the result's attributes and
// one child per phase the result times, each child as long as its phase.
// The endpoint's credentials (an Authorization header, a custom header, a
// secret query parameter, a secret path) are nowhere in the bytes exported.
func TestProbeIsATraceWithASpanPerPhase(t *testing.T) {
	for _, protocol := range []string{tracing.ProtocolHTTP, tracing.ProtocolGRPC} {
		t.Run(protocol, func(t *testing.T) {
			rcv := testpeers.NewOTLPReceiver(t)
			p, flush := tracedProber(t, rcv, protocol)
			mux := http.NewServeMux()
			mux.Handle("/hidden-path-secret/mcp", mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return sdkServer() }, &mcp.StreamableHTTPOptions{JSONResponse: true}))
			srv := serve(t, mux)
			ep := endpoint(srv.URL + "/hidden-path-secret/mcp?api_key=query-secret-value")
			ep.Headers = map[string]string{"Authorization": "Bearer bearer-secret-value", "X-Custom": "custom-secret-value"}
			res := p.Probe(t.Context(), ep, cmd())
			if res.Status != msg.StatusUp {
				t.Fatalf("probe %s %s: %s", res.Status, res.Class, res.Error)
			}
			flush()

			root, children := spanTree(t, rcv.Spans())
			want := map[string]any{
				AttrEndpointID: "ep1", AttrProbeRunID: res.ProbeRunID, AttrClass: ClassOK, AttrStatus: "up",
				AttrProtocolVersion: res.ProtocolVersion, AttrTransport: TransportStreamableHTTP,
				AttrServerAddress: "127.0.0.1", AttrURLScheme: "http", AttrToolCount: int64(1),
			}
			for k, v := range want {
				if root.Attrs[k] != v {
					t.Errorf("root attribute %s = %v (%T), want %v", k, root.Attrs[k], root.Attrs[k], v)
				}
			}
			if _, ok := root.Attrs[AttrServerPort]; !ok {
				t.Errorf("root has no %s: %v", AttrServerPort, root.Attrs)
			}
			if _, ok := root.Attrs[AttrErrorType]; ok || root.StatusCode == "Error" {
				t.Errorf("an up probe's root is marked failed: %v %s", root.Attrs, root.StatusCode)
			}
			if root.Resource["service.name"] != tracing.ServiceName || root.Scope != TracerName || root.Kind != "Client" {
				t.Errorf("resource %v scope %q kind %s", root.Resource, root.Scope, root.Kind)
			}
			for phase, secs := range res.Phases {
				if phase == msg.PhaseTotal {
					continue
				}
				c, ok := children[phase]
				if !ok {
					t.Errorf("no span for phase %s (children %v)", phase, keys(children))
					continue
				}
				if got := c.End.Sub(c.Start).Seconds(); math.Abs(got-secs) > 1e-6 {
					t.Errorf("span %s lasts %gs, the phase %gs", phase, got, secs)
				}
				if c.Start.Before(root.Start) || c.End.After(root.End) {
					t.Errorf("span %s [%v, %v] outside the root [%v, %v]", phase, c.Start, c.End, root.Start, root.End)
				}
				delete(children, phase)
			}
			if len(children) != 0 {
				t.Errorf("spans for phases the result does not time: %v", keys(children))
			}
			for _, phase := range []string{msg.PhaseInitialize, msg.PhaseToolsList} {
				if _, ok := res.Phases[phase]; !ok {
					t.Errorf("result has no %s phase: %v", phase, res.Phases)
				}
			}
			raw := rcv.Raw()
			for _, secret := range []string{"bearer-secret-value", "custom-secret-value", "query-secret-value", "hidden-path-secret", "api_key"} {
				if bytes.Contains(raw, []byte(secret)) {
					t.Errorf("exported spans contain %q", secret)
				}
			}
		})
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestFailedProbeSpanIsAnErrorWithTheClass: a probe that fails marks its
// root span Error with the class, and records the HTTP status.
func TestFailedProbeSpanIsAnErrorWithTheClass(t *testing.T) {
	rcv := testpeers.NewOTLPReceiver(t)
	p, flush := tracedProber(t, rcv, tracing.ProtocolHTTP)
	srv := serve(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusBadGateway) }))
	res := p.Probe(t.Context(), endpoint(srv.URL), cmd())
	if res.Class != ClassHTTP5xx {
		t.Fatalf("class %s, want %s", res.Class, ClassHTTP5xx)
	}
	flush()
	root, _ := spanTree(t, rcv.Spans())
	if root.StatusCode != "Error" || root.StatusMessage != ClassHTTP5xx {
		t.Errorf("root status %s %q, want Error %q", root.StatusCode, root.StatusMessage, ClassHTTP5xx)
	}
	if root.Attrs[AttrErrorType] != ClassHTTP5xx || root.Attrs[AttrHTTPStatus] != int64(http.StatusBadGateway) || root.Attrs[AttrStatus] != "down" {
		t.Errorf("root attributes %v", root.Attrs)
	}
}

// recordingTarget wraps a go-sdk server's handler and keeps, per request,
// its traceparent header and its params._meta.traceparent.
type recordingTarget struct {
	mu   sync.Mutex
	seen []seenRequest
}

type seenRequest struct {
	method, rpc             string
	header, meta, tracestat string
	hasMeta                 bool // params carried _meta: a 2026-07-28 request
}

func (rt *recordingTarget) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		r.Body = io.NopCloser(bytes.NewReader(body))
		var m struct {
			Method string `json:"method"`
			Params struct {
				Meta map[string]any `json:"_meta"`
			} `json:"params"`
		}
		_ = json.Unmarshal(body, &m)
		meta, _ := m.Params.Meta["traceparent"].(string)
		rt.mu.Lock()
		rt.seen = append(rt.seen, seenRequest{r.Method, m.Method, r.Header.Get("Traceparent"), meta, r.Header.Get("Tracestate"), m.Params.Meta != nil})
		rt.mu.Unlock()
		next.ServeHTTP(w, r)
	})
}

// TestTraceparentReachesTheTargetOnlyWhenOptedIn: with traceContext on,
// every request of the probe carries the probe's traceparent (whose trace
// ID is the exported root's, and parent ID the root span), and each
// 2026-07-28 request (server/discover also opens a 2025-era probe) also
// params._meta.traceparent; off, no request carries one, even though the
// probe is traced.
func TestTraceparentReachesTheTargetOnlyWhenOptedIn(t *testing.T) {
	for _, tc := range []struct {
		name      string
		optIn     bool
		stateless bool // 2026-07-28
	}{
		{"2025-11-25 opted in", true, false},
		{"2025-11-25 not opted in", false, false},
		{"2026-07-28 opted in", true, true},
		{"2026-07-28 not opted in", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rcv := testpeers.NewOTLPReceiver(t)
			p, flush := tracedProber(t, rcv, tracing.ProtocolHTTP)
			rt := &recordingTarget{}
			h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return sdkServer() }, &mcp.StreamableHTTPOptions{Stateless: tc.stateless, JSONResponse: true})
			srv := serve(t, rt.wrap(h))
			ep := endpoint(srv.URL)
			ep.TraceContext = tc.optIn
			res := p.Probe(t.Context(), ep, cmd())
			if res.Status != msg.StatusUp {
				t.Fatalf("probe %s %s: %s", res.Status, res.Class, res.Error)
			}
			if want := map[bool]string{true: Version20260728, false: Version20251125}[tc.stateless]; res.ProtocolVersion != want {
				t.Fatalf("probe spoke %s, want %s", res.ProtocolVersion, want)
			}
			flush()
			root, _ := spanTree(t, rcv.Spans())
			want := "00-" + root.TraceID + "-" + root.SpanID + "-01"
			rt.mu.Lock()
			defer rt.mu.Unlock()
			if len(rt.seen) < 2 {
				t.Fatalf("target saw %d requests", len(rt.seen))
			}
			metas := 0
			for _, s := range rt.seen {
				wantHeader, wantMeta := "", ""
				if tc.optIn {
					wantHeader = want
					if s.hasMeta {
						wantMeta = want
					}
				}
				if s.hasMeta {
					metas++
				}
				if s.header != wantHeader || s.meta != wantMeta {
					t.Errorf("%s %s: traceparent header %q _meta %q, want %q %q", s.method, s.rpc, s.header, s.meta, wantHeader, wantMeta)
				}
				if s.tracestat != "" {
					t.Errorf("%s %s: tracestate %q from a probe with none", s.method, s.rpc, s.tracestat)
				}
			}
			if tc.stateless && metas < 2 {
				t.Errorf("only %d requests carried _meta under 2026-07-28", metas)
			}
		})
	}
}

// TestTraceparentIsNotSentWithoutATracer: opted in but with tracing off,
// the target sees no trace context (there is no trace to join).
func TestTraceparentIsNotSentWithoutATracer(t *testing.T) {
	rt := &recordingTarget{}
	srv := serve(t, rt.wrap(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return sdkServer() }, &mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true})))
	ep := endpoint(srv.URL)
	ep.TraceContext = true
	if res := testProber(t, nil).Probe(t.Context(), ep, cmd()); res.Status != msg.StatusUp {
		t.Fatalf("probe %s %s: %s", res.Status, res.Class, res.Error)
	}
	rt.mu.Lock()
	defer rt.mu.Unlock()
	for _, s := range rt.seen {
		if s.header != "" || s.meta != "" {
			t.Errorf("%s %s carried trace context %q %q", s.method, s.rpc, s.header, s.meta)
		}
	}
}

// TestEndpointTraceparentHeaderIsReplaced: an endpoint header named
// traceparent never reaches the target beside the probe's own.
func TestEndpointTraceparentHeaderIsReplaced(t *testing.T) {
	rcv := testpeers.NewOTLPReceiver(t)
	p, flush := tracedProber(t, rcv, tracing.ProtocolHTTP)
	rt := &recordingTarget{}
	srv := serve(t, rt.wrap(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return sdkServer() }, &mcp.StreamableHTTPOptions{JSONResponse: true})))
	ep := endpoint(srv.URL)
	ep.TraceContext = true
	ep.Headers = map[string]string{"traceparent": "00-11111111111111111111111111111111-2222222222222222-01"}
	if res := p.Probe(t.Context(), ep, cmd()); res.Status != msg.StatusUp {
		t.Fatalf("probe %s %s: %s", res.Status, res.Class, res.Error)
	}
	flush()
	root, _ := spanTree(t, rcv.Spans())
	rt.mu.Lock()
	defer rt.mu.Unlock()
	for _, s := range rt.seen {
		if !strings.Contains(s.header, root.TraceID) {
			t.Errorf("%s %s: traceparent %q, want the probe's trace %s", s.method, s.rpc, s.header, root.TraceID)
		}
	}
}
