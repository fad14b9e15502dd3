package status_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/clock"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/status"
)

// benchCached measures GET path over loopback HTTP (client and server on
// the same cores) from a warm cache, in requests per second.
func benchCached(b *testing.B, path string) {
	f := fixture()
	srv := httptest.NewServer(status.Handler(status.NewCache(status.Options{Store: f, Clock: clock.NewFake(now)})))
	defer srv.Close()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	warm, err := client.Get(srv.URL + path)
	if err != nil || warm.StatusCode != http.StatusOK {
		b.Fatalf("warm-up: %v %v", err, warm)
	}
	_ = warm.Body.Close()
	reads := f.reads.Load()
	b.SetParallelism(4)
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			resp, err := client.Get(srv.URL + path)
			if err != nil {
				b.Error(err)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "req/s")
	b.ReportMetric(float64(f.reads.Load()-reads)/float64(b.N), "store-reads/req")
}

func BenchmarkBadgeFromCache(b *testing.B) { benchCached(b, "/badge/acme-mcp.svg") }

func BenchmarkStatusJSONFromCache(b *testing.B) { benchCached(b, "/status/acme-mcp.json") }

// BenchmarkRender1000PublicEndpoints: building and rendering the pages of
// 1,000 public endpoints (each 90 daily rollups, an incident) and the
// overview listing them: what one cold refresh of every page costs.
func BenchmarkRender1000PublicEndpoints(b *testing.B) {
	base := fixture()
	ep, last, res, incs := base.eps[0], base.verdicts[ep0], base.results[ep0], base.incidents[ep0]
	var daily []model.Rollup
	day := now.Truncate(model.Daily)
	for i := range status.Days {
		daily = append(daily, model.Rollup{Start: day.Add(-time.Duration(i) * model.Daily), Size: model.Daily, Up: 86000, Down: int64(i%7) * 60,
			Total: base.rollups[ep0][0].Total, Initialize: model.NewSketch()})
	}
	b.ResetTimer()
	for b.Loop() {
		pages := make([]status.Page, 0, 1000)
		for i := range 1000 {
			e := ep
			e.ID, e.Slug, e.Name = fmt.Sprintf("id%d", i), fmt.Sprintf("ep-%04d", i), fmt.Sprintf("Endpoint %d", i)
			p := status.Build(status.Input{Endpoint: e, Daily: daily, Incidents: incs, Last: last, HasLast: true, Latest: res, HasLatest: true, Now: now})
			if _, err := status.Render(p); err != nil {
				b.Fatal(err)
			}
			pages = append(pages, p)
		}
		if _, err := status.RenderOverview(pages, now); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/1000, "µs/page")
}
