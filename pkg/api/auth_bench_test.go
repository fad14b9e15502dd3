package api_test

import (
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/api"
	"github.com/mcpmon/mcpmon/pkg/auth"
	"github.com/mcpmon/mcpmon/pkg/clock"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/store/bolt"
)

// benchAPI is GET /v1/endpoints/{id} on one bolt store, served by two
// routers: one without keys and one with (the key cached, as on a busy
// server). Requests go straight to ServeHTTP: no socket, so the difference
// is the middleware's CPU.
type benchAPI struct {
	open, authed http.Handler
	key, path    string
}

func newBenchAPI(b *testing.B) *benchAPI {
	b.Helper()
	st, err := bolt.Open(filepath.Join(b.TempDir(), "bench.db"), bolt.Options{SweepInterval: -1})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = st.Close() })
	ep, err := st.CreateEndpoint(b.Context(), model.Endpoint{ID: "bench", Name: "bench", URL: "https://mcp.example.com/mcp", Transport: "auto", Schedule: "@every 30s", Timeout: 10 * time.Second})
	if err != nil {
		b.Fatal(err)
	}
	// A real clock: the cache TTL runs as it does in production, so a
	// lookup every 5 s is part of the figure.
	kr := auth.NewKeyring(st, auth.Options{Clock: clock.Real{}})
	key, _, err := kr.Create(b.Context(), auth.NewKey{Name: "bench", Scope: auth.ScopeRead})
	if err != nil {
		b.Fatal(err)
	}
	ba := &benchAPI{
		open:   api.New(api.Options{Store: st}),
		authed: api.New(api.Options{Store: st, Authenticator: kr, Keys: kr}),
		key:    key,
		path:   "/v1/endpoints/" + ep.ID,
	}
	// Warm both (and the key cache) so neither pays a first-use cost.
	ba.serve(b, ba.open, "")
	ba.serve(b, ba.authed, ba.key)
	return ba
}

func (ba *benchAPI) serve(b *testing.B, h http.Handler, key string) {
	req := httptest.NewRequest(http.MethodGet, ba.path, nil)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		b.Fatalf("GET %s = %d %s", ba.path, rec.Code, rec.Body)
	}
}

// BenchmarkGetEndpoint measures GET /v1/endpoints/{id} without and with an
// API key, each on its own.
func BenchmarkGetEndpoint(b *testing.B) {
	ba := newBenchAPI(b)
	b.Run("auth=off", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			ba.serve(b, ba.open, "")
		}
	})
	b.Run("auth=on", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			ba.serve(b, ba.authed, ba.key)
		}
	})
}

// BenchmarkAuthOverhead alternates the two routers request by request, so
// both see the same machine state, and reports the difference (the target is
// under 5 µs) and the ratio side by side.
func BenchmarkAuthOverhead(b *testing.B) {
	ba := newBenchAPI(b)
	var off, on time.Duration
	for b.Loop() {
		t := time.Now()
		ba.serve(b, ba.open, "")
		t1 := time.Now()
		ba.serve(b, ba.authed, ba.key)
		t2 := time.Now()
		off += t1.Sub(t)
		on += t2.Sub(t1)
	}
	n := float64(b.N)
	b.ReportMetric(float64(off.Nanoseconds())/n, "off-ns/req")
	b.ReportMetric(float64(on.Nanoseconds())/n, "on-ns/req")
	b.ReportMetric(float64((on-off).Nanoseconds())/n, "auth-ns/req")
	b.ReportMetric(float64(on)/float64(off), "on/off")
}
