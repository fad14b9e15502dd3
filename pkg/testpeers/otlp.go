package testpeers

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/hex"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"google.golang.org/grpc"
)

// maxOTLPBody bounds one export request the receiver reads.
const maxOTLPBody = 16 << 20

// OTLPReceiver is a real OTLP trace receiver for one test: OTLP/HTTP
// (protobuf, optionally gzip) at HTTPURL and OTLP/gRPC at GRPCURL, both
// decoded by the collector's own pdata, not by hand. It keeps every span
// and the raw bytes of every export, for asserting what was never sent.
type OTLPReceiver struct {
	// HTTPURL is the base URL (the exporter appends /v1/traces);
	// GRPCURL is http://host:port of the gRPC listener.
	HTTPURL, GRPCURL string

	mu      sync.Mutex
	raw     []byte
	spans   []OTLPSpan
	headers []http.Header // of each OTLP/HTTP export
	changed chan struct{}
}

// OTLPSpan is one received span, flattened with its resource.
type OTLPSpan struct {
	TraceID, SpanID, ParentID string // hex; ParentID "" for a root
	Name                      string
	Kind                      string
	Start, End                time.Time
	Attrs                     map[string]any
	Resource                  map[string]any
	Scope                     string
	StatusCode                string // Unset, Ok or Error
	StatusMessage             string
}

// NewOTLPReceiver starts both listeners on 127.0.0.1 for the rest of the test.
func NewOTLPReceiver(t testing.TB) *OTLPReceiver {
	t.Helper()
	o := &OTLPReceiver{changed: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/traces", o.serveHTTP)
	hs := httptest.NewServer(mux)
	t.Cleanup(hs.Close)
	o.HTTPURL = hs.URL

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer(grpc.MaxRecvMsgSize(maxOTLPBody))
	ptraceotlp.RegisterGRPCServer(gs, &grpcTraces{o: o})
	go func() { _ = gs.Serve(ln) }()
	t.Cleanup(gs.Stop)
	o.GRPCURL = "http://" + ln.Addr().String()
	return o
}

func (o *OTLPReceiver) serveHTTP(w http.ResponseWriter, r *http.Request) {
	var body io.Reader = http.MaxBytesReader(w, r.Body, maxOTLPBody)
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		defer zr.Close()
		body = io.LimitReader(zr, maxOTLPBody)
	}
	b, err := io.ReadAll(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	req := ptraceotlp.NewExportRequest()
	if err := req.UnmarshalProto(b); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	o.mu.Lock()
	o.headers = append(o.headers, r.Header.Clone())
	o.mu.Unlock()
	o.add(b, req.Traces())
	out, _ := ptraceotlp.NewExportResponse().MarshalProto()
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

type grpcTraces struct {
	ptraceotlp.UnimplementedGRPCServer
	o *OTLPReceiver
}

func (g *grpcTraces) Export(_ context.Context, req ptraceotlp.ExportRequest) (ptraceotlp.ExportResponse, error) {
	// The bytes as the exporter sent them, re-encoded from what the
	// collector decoded.
	b, err := req.MarshalProto()
	if err != nil {
		return ptraceotlp.NewExportResponse(), err
	}
	g.o.add(b, req.Traces())
	return ptraceotlp.NewExportResponse(), nil
}

func (o *OTLPReceiver) add(raw []byte, td ptrace.Traces) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.raw = append(o.raw, raw...)
	for _, rs := range td.ResourceSpans().All() {
		res := rs.Resource().Attributes().AsRaw()
		for _, ss := range rs.ScopeSpans().All() {
			for _, s := range ss.Spans().All() {
				o.spans = append(o.spans, OTLPSpan{
					TraceID: traceHex(s.TraceID()), SpanID: spanHex(s.SpanID()), ParentID: spanHex(s.ParentSpanID()),
					Name: s.Name(), Kind: s.Kind().String(),
					Start: s.StartTimestamp().AsTime(), End: s.EndTimestamp().AsTime(),
					Attrs: s.Attributes().AsRaw(), Resource: res, Scope: ss.Scope().Name(),
					StatusCode: s.Status().Code().String(), StatusMessage: s.Status().Message(),
				})
			}
		}
	}
	close(o.changed)
	o.changed = make(chan struct{})
}

func traceHex(id pcommon.TraceID) string {
	if id.IsEmpty() {
		return ""
	}
	return hex.EncodeToString(id[:])
}

func spanHex(id pcommon.SpanID) string {
	if id.IsEmpty() {
		return ""
	}
	return hex.EncodeToString(id[:])
}

// Spans returns every span received so far, in arrival order.
func (o *OTLPReceiver) Spans() []OTLPSpan {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]OTLPSpan(nil), o.spans...)
}

// Headers returns the request headers of every OTLP/HTTP export so far.
func (o *OTLPReceiver) Headers() []http.Header {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]http.Header(nil), o.headers...)
}

// Raw returns the bytes of every export so far, concatenated.
func (o *OTLPReceiver) Raw() []byte {
	o.mu.Lock()
	defer o.mu.Unlock()
	return bytes.Clone(o.raw)
}

// WaitSpans waits up to timeout until cond holds of the spans received,
// failing the test otherwise; it wakes on each export, so it does not poll.
func (o *OTLPReceiver) WaitSpans(t testing.TB, timeout time.Duration, what string, cond func([]OTLPSpan) bool) []OTLPSpan {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		o.mu.Lock()
		spans, changed := append([]OTLPSpan(nil), o.spans...), o.changed
		o.mu.Unlock()
		if cond(spans) {
			return spans
		}
		select {
		case <-changed:
		case <-deadline.C:
			t.Fatalf("OTLP receiver: %s not seen within %s (%d spans received)", what, timeout, len(spans))
		case <-t.Context().Done():
			t.Fatalf("OTLP receiver: test ended waiting for %s", what)
		}
	}
}
