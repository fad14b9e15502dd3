package metrics_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/mcpmon/mcpmon/pkg/metrics"
)

// TestOpsMetricsRestrictions: a token makes /metrics need the bearer
// token (and only /metrics); NoMetrics leaves it out.
func TestOpsMetricsRestrictions(t *testing.T) {
	reg := metrics.NewRegistry("v1")
	for _, tc := range []struct {
		name       string
		o          metrics.OpsOptions
		path, auth string
		want       int
	}{
		{"open", metrics.OpsOptions{}, "/metrics", "", http.StatusOK},
		{"token, none sent", metrics.OpsOptions{Token: "t0k"}, "/metrics", "", http.StatusUnauthorized},
		{"token, wrong", metrics.OpsOptions{Token: "t0k"}, "/metrics", "Bearer t0x", http.StatusUnauthorized},
		{"token, longer", metrics.OpsOptions{Token: "t0k"}, "/metrics", "Bearer t0kk", http.StatusUnauthorized},
		{"token, other scheme", metrics.OpsOptions{Token: "t0k"}, "/metrics", "Basic t0k", http.StatusUnauthorized},
		{"token, right", metrics.OpsOptions{Token: "t0k"}, "/metrics", "bearer t0k", http.StatusOK},
		{"token leaves healthz open", metrics.OpsOptions{Token: "t0k"}, "/healthz", "", http.StatusOK},
		{"no metrics", metrics.OpsOptions{NoMetrics: true}, "/metrics", "", http.StatusNotFound},
		{"no metrics, healthz", metrics.OpsOptions{NoMetrics: true}, "/healthz", "", http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodGet, tc.path, nil)
			if tc.auth != "" {
				req.Header.Set("Authorization", tc.auth)
			}
			rec := httptest.NewRecorder()
			metrics.OpsHandlerWith(reg, nil, tc.o).ServeHTTP(rec, req)
			if rec.Code != tc.want {
				t.Fatalf("GET %s = %d, want %d", tc.path, rec.Code, tc.want)
			}
		})
	}
}
