package metrics_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/mcpmon/mcpmon/pkg/metrics"
)

// A role builds one registry per process, registers its components' metrics
// on it, and serves the ops endpoints next to (or instead of) its API.
func ExampleOpsHandler() {
	reg := metrics.NewRegistry("v1.0.0")
	promauto.With(reg).NewGauge(prometheus.GaugeOpts{Namespace: "mcpmon", Name: "incidents_open", Help: "Open incidents."}).Set(2)

	var storeUp atomic.Bool
	srv := httptest.NewServer(metrics.OpsHandler(reg, func(ctx context.Context) error {
		if !storeUp.Load() {
			return errors.New("store: dial tcp 127.0.0.1:6379: connect: connection refused")
		}
		return nil
	}))
	defer srv.Close()

	show := func(path string) {
		req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, srv.URL+path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			fmt.Println(err)
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		fmt.Printf("%s %d %s", path, resp.StatusCode, b)
	}
	show("/healthz")
	show("/readyz")
	storeUp.Store(true)
	show("/readyz")

	if err := metrics.Lint(reg); err != nil {
		fmt.Println(err)
	}
	// Output:
	// /healthz 200 ok
	// /readyz 503 {"status":"not ready","reason":"store: dial tcp 127.0.0.1:6379: connect: connection refused"}
	// /readyz 200 {"status":"ready"}
}
