package metrics_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/mcpmon/mcpmon/pkg/metrics"
)

func TestNewRegistryBuildInfo(t *testing.T) {
	reg := metrics.NewRegistry("v1.2.3")
	want := `
# HELP mcpmon_build_info A metric with a constant '1' value labeled by the mcpmon version that is running.
# TYPE mcpmon_build_info gauge
mcpmon_build_info{version="v1.2.3"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "mcpmon_build_info"); err != nil {
		t.Fatal(err)
	}
	// Go and process collectors are registered.
	n, err := testutil.GatherAndCount(reg, "go_goroutines", "process_start_time_seconds")
	if err != nil {
		t.Fatal(err)
	}
	if n < 1 {
		t.Fatalf("go/process collectors missing: got %d series", n)
	}
	if err := testutil.GatherAndCompare(metrics.NewRegistry(""), strings.NewReader(strings.Replace(want, "v1.2.3", "unknown", 1)), "mcpmon_build_info"); err != nil {
		t.Fatalf("empty version: %v", err)
	}
}

func TestNewRegistryIsolated(t *testing.T) {
	// Two registries in one process must not share state (no global registry).
	a, b := metrics.NewRegistry("a"), metrics.NewRegistry("b")
	promauto.With(a).NewCounter(prometheus.CounterOpts{Namespace: metrics.Namespace, Name: "x_total", Help: "x"}).Inc()
	if n, _ := testutil.GatherAndCount(b, "mcpmon_x_total"); n != 0 {
		t.Fatalf("registry b sees a's metric: %d", n)
	}
	if n, _ := testutil.GatherAndCount(a, "mcpmon_x_total"); n != 1 {
		t.Fatalf("registry a lost its metric: %d", n)
	}
}

func get(t *testing.T, h http.Handler, path string) (int, string, http.Header) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequestWithContext(t.Context(), http.MethodGet, path, nil))
	body, _ := io.ReadAll(rec.Result().Body)
	return rec.Code, string(body), rec.Result().Header
}

func TestOpsHandler(t *testing.T) {
	reg := metrics.NewRegistry("test")
	c := promauto.With(reg).NewCounterVec(prometheus.CounterOpts{Namespace: metrics.Namespace, Name: "probes_total", Help: "h"}, []string{"endpoint", "class"})
	c.WithLabelValues("ep1", "ok").Add(3)

	errStore := errors.New("store: dial tcp 127.0.0.1:6379: connection refused")
	var readyErr error
	h := metrics.OpsHandler(reg, func(ctx context.Context) error {
		if _, ok := ctx.Deadline(); !ok {
			t.Error("ready called without a deadline")
		}
		return readyErr
	})

	tests := []struct {
		name     string
		path     string
		readyErr error
		code     int
		contains string
	}{
		{"metrics", "/metrics", nil, 200, `mcpmon_probes_total{class="ok",endpoint="ep1"} 3`},
		{"metrics build info", "/metrics", nil, 200, `mcpmon_build_info{version="test"} 1`},
		{"healthz", "/healthz", nil, 200, "ok"},
		{"healthz while not ready", "/healthz", errStore, 200, "ok"},
		{"readyz ok", "/readyz", nil, 200, `"status":"ready"`},
		{"readyz store down", "/readyz", errStore, 503, `"reason":"store: dial tcp 127.0.0.1:6379: connection refused"`},
		{"unknown path", "/nope", nil, 404, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			readyErr = tt.readyErr
			code, body, hdr := get(t, h, tt.path)
			if code != tt.code {
				t.Fatalf("GET %s: code %d, want %d; body %q", tt.path, code, tt.code, body)
			}
			if !strings.Contains(body, tt.contains) {
				t.Fatalf("GET %s: body %q does not contain %q", tt.path, body, tt.contains)
			}
			if tt.path == "/readyz" {
				if ct := hdr.Get("Content-Type"); ct != "application/json" {
					t.Fatalf("readyz content type %q", ct)
				}
				var v map[string]string
				if err := json.Unmarshal([]byte(body), &v); err != nil {
					t.Fatalf("readyz body is not JSON: %v", err)
				}
			}
		})
	}
}

func TestOpsHandlerNilReady(t *testing.T) {
	h := metrics.OpsHandler(metrics.NewRegistry("x"), nil)
	if code, body, _ := get(t, h, "/readyz"); code != 200 || !strings.Contains(body, "ready") {
		t.Fatalf("nil ready: %d %q", code, body)
	}
}

func TestOpsHandlerReadyTimeout(t *testing.T) {
	// A hung dependency check becomes a 503 bounded by DefaultReadyTimeout
	// instead of hanging the kubelet's probe.
	// synctest's fake clock makes the 800ms timeout instant.
	synctest.Test(t, func(t *testing.T) {
		h := metrics.OpsHandler(metrics.NewRegistry("x"), func(ctx context.Context) error {
			<-ctx.Done()
			return ctx.Err()
		})
		start := time.Now()
		code, body, _ := get(t, h, "/readyz")
		if code != 503 || !strings.Contains(body, "deadline exceeded") {
			t.Fatalf("hung ready: %d %q", code, body)
		}
		if d := time.Since(start); d != metrics.DefaultReadyTimeout {
			t.Fatalf("ready gave up after %v, want %v", d, metrics.DefaultReadyTimeout)
		}
	})
}

func TestOpsHandlerMethod(t *testing.T) {
	h := metrics.OpsHandler(metrics.NewRegistry("x"), nil)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequestWithContext(t.Context(), http.MethodPost, "/healthz", nil))
	if rec.Code != http.StatusMethodNotAllowed {
		t.Fatalf("POST /healthz: %d", rec.Code)
	}
}

func TestCatalogWellFormed(t *testing.T) {
	seen := map[string]bool{}
	for _, f := range metrics.Catalog() {
		if seen[f.Name] {
			t.Errorf("%s listed twice", f.Name)
		}
		seen[f.Name] = true
		if !strings.HasPrefix(f.Name, "mcpmon_") {
			t.Errorf("%s: not in the mcpmon namespace", f.Name)
		}
		if f.Type == metrics.Counter && !strings.HasSuffix(f.Name, "_total") {
			t.Errorf("%s: counter without _total", f.Name)
		}
		if !slices.IsSorted(f.Labels) {
			t.Errorf("%s: labels %v not sorted", f.Name, f.Labels)
		}
	}
	if f, ok := metrics.Lookup("mcpmon_probe_duration_seconds_bucket"); !ok || f.Name != "mcpmon_probe_duration_seconds" {
		t.Fatalf("histogram bucket lookup: %v %v", f, ok)
	}
	if f, ok := metrics.Lookup("mcpmon_probe_phase_seconds_count"); !ok || f.Name != "mcpmon_probe_phase_seconds" {
		t.Fatalf("summary count lookup: %v %v", f, ok)
	}
	if _, ok := metrics.Lookup("mcpmon_probe_phase_seconds_bucket"); ok {
		t.Fatal("a summary has no _bucket series")
	}
	if _, ok := metrics.Lookup("mcpmon_probes_total_bucket"); ok {
		t.Fatal("counter must not resolve _bucket")
	}
}

func TestLint(t *testing.T) {
	tests := []struct {
		name    string
		setup   func(reg *prometheus.Registry)
		wantErr string
	}{
		{"catalog metrics pass", func(reg *prometheus.Registry) {
			f := promauto.With(reg)
			f.NewCounterVec(prometheus.CounterOpts{Name: "mcpmon_probes_total", Help: "h"}, []string{"endpoint", "class", "region"}).WithLabelValues("e", "ok", "eu")
			f.NewHistogramVec(prometheus.HistogramOpts{Name: "mcpmon_pipeline_delay_seconds", Help: "h"}, []string{"stage"}).WithLabelValues("probe_to_verdict")
			f.NewGauge(prometheus.GaugeOpts{Name: "mcpmon_incidents_open", Help: "h"})
			f.NewCounter(prometheus.CounterOpts{Name: "other_total", Help: "not ours"})
		}, ""},
		{"unknown name", func(reg *prometheus.Registry) {
			promauto.With(reg).NewCounter(prometheus.CounterOpts{Name: "mcpmon_probe_total", Help: "h"})
		}, "mcpmon_probe_total"},
		{"wrong type", func(reg *prometheus.Registry) {
			promauto.With(reg).NewCounter(prometheus.CounterOpts{Name: "mcpmon_incidents_open", Help: "h"})
		}, "type counter"},
		{"wrong labels", func(reg *prometheus.Registry) {
			promauto.With(reg).NewCounterVec(prometheus.CounterOpts{Name: "mcpmon_alerts_total", Help: "h"}, []string{"sink", "outcome"}).WithLabelValues("s", "sent")
		}, "labels [outcome sink]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reg := metrics.NewRegistry("v")
			tt.setup(reg)
			err := metrics.Lint(reg)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !errors.Is(err, metrics.ErrNotInCatalog) || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("got %v, want ErrNotInCatalog containing %q", err, tt.wantErr)
			}
		})
	}
}
