package api_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"sync"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/api"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/store/bolt"
)

// heapPeak samples the live heap (runtime/metrics, no stop-the-world)
// every 100µs while f runs and returns the highest reading above the heap
// just before it, after a GC: what f held at once, not what it allocated.
func heapPeak(f func()) uint64 {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	read := func() uint64 { metrics.Read(sample); return sample[0].Value.Uint64() }
	runtime.GC()
	idle := read()
	var peak uint64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(100 * time.Microsecond)
		defer t.Stop()
		for {
			peak = max(peak, read())
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	})
	f()
	close(done)
	wg.Wait()
	peak = max(peak, read())
	if peak < idle {
		return 0
	}
	return peak - idle
}

// BenchmarkListEndpoints10k: the peak heap of listing one tenant's 10,000
// endpoints page by page over GET /v1/endpoints (default limit 100)
// against the old single read (every record, its last verdict and one
// JSON body of all of them), side by side. Target: paged under 20 MB
// above idle.
func BenchmarkListEndpoints10k(b *testing.B) {
	const n = 10_000
	st, err := bolt.Open(filepath.Join(b.TempDir(), "bench.db"), bolt.Options{SweepInterval: -1})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = st.Close() })
	for i := range n {
		_, err := st.CreateEndpoint(b.Context(), model.Endpoint{
			ID: fmt.Sprintf("ep%05d", i), Name: fmt.Sprintf("endpoint %d", i), URL: fmt.Sprintf("https://mcp%d.example.com/mcp", i),
			Transport: "auto", Schedule: "@every 30s", Timeout: 10 * time.Second,
			Headers: map[string]string{"Authorization": "Bearer 0123456789abcdef0123456789abcdef"},
			Labels:  map[string]string{"team": "search", "env": "prod", "region": "eu-west-1"},
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	h := api.New(api.Options{Store: st})

	paged := func() {
		cursor, seen := "", 0
		for {
			path := "/v1/endpoints"
			if cursor != "" {
				path += "?cursor=" + url.QueryEscape(cursor)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
			var page struct {
				Endpoints  []json.RawMessage `json:"endpoints"`
				NextCursor string            `json:"nextCursor"`
			}
			if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &page) != nil {
				b.Fatalf("GET %s = %d", path, rec.Code)
			}
			seen += len(page.Endpoints)
			if cursor = page.NextCursor; cursor == "" {
				break
			}
		}
		if seen != n {
			b.Fatalf("paged walk saw %d endpoints, want %d", seen, n)
		}
	}
	oneRead := func() {
		eps, err := st.ListEndpointsOf(b.Context(), model.DefaultTenant)
		if err != nil {
			b.Fatal(err)
		}
		for _, e := range eps {
			if _, err := st.LastVerdict(b.Context(), e.ID); err != nil && !errors.Is(err, model.ErrNotFound) {
				b.Fatal(err)
			}
		}
		body, err := json.Marshal(map[string]any{"endpoints": eps})
		if err != nil || len(body) == 0 {
			b.Fatal(err)
		}
		runtime.KeepAlive(body)
	}

	for _, c := range []struct {
		name string
		f    func()
	}{{"paged", paged}, {"one-read", oneRead}} {
		b.Run(c.name, func(b *testing.B) {
			var worst uint64
			for b.Loop() {
				worst = max(worst, heapPeak(c.f))
			}
			b.ReportMetric(float64(worst)/(1<<20), "peak-MB-above-idle")
		})
	}
}
