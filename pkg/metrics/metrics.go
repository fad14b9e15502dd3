// Package metrics owns the operational plumbing every mcpmon role shares: the
// per-process Prometheus registry (Go and process collectors plus
// mcpmon_build_info) and the ops HTTP handler that serves /metrics, /healthz
// and /readyz.
//
// Data enters as the roles' own collectors, registered by each component's
// NewMetrics(reg) on the registry NewRegistry returns, and as a readiness
// func the role supplies (e.g. "can I reach the store and the queue?"). It
// leaves as the Prometheus text exposition on /metrics and as the liveness
// and readiness answers Kubernetes probes read. There is no global registry:
// a process builds one with NewRegistry and passes it down.
package metrics

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Namespace prefixes every mcpmon metric.
const Namespace = "mcpmon"

// Paths served by OpsHandler.
const (
	PathMetrics = "/metrics"
	PathHealthz = "/healthz"
	PathReadyz  = "/readyz"
)

// DefaultReadyTimeout bounds one readiness check so a hung dependency turns
// into a 503 well before the kubelet's probe timeout (default 1s) gives up.
const DefaultReadyTimeout = 800 * time.Millisecond

// NewRegistry returns a fresh registry holding the Go runtime and process
// collectors and mcpmon_build_info{version} = 1. Every role registers its own
// metrics on it.
func NewRegistry(version string) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	if version == "" {
		version = "unknown"
	}
	bi := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: Namespace,
		Name:      "build_info",
		Help:      "A metric with a constant '1' value labeled by the mcpmon version that is running.",
	}, []string{"version"})
	bi.WithLabelValues(version).Set(1)
	reg.MustRegister(bi)
	return reg
}

// ReadyFunc reports whether the process can do its work; a non-nil error
// says why not (e.g. "store: dial tcp 127.0.0.1:6379: connection refused").
type ReadyFunc func(ctx context.Context) error

// OpsHandler serves:
//
//	GET /metrics  the Prometheus exposition of reg
//	GET /healthz  200 "ok" while the process runs (liveness: restart only if this fails)
//	GET /readyz   200 {"status":"ready"} or 503 {"status":"not ready","reason":"..."}
//
// ready may be nil (always ready). Any other path is 404, so the handler can
// be mounted at the root of a dedicated ops listener or under a router.
func OpsHandler(reg prometheus.Gatherer, ready ReadyFunc) http.Handler {
	return OpsHandlerWith(reg, ready, OpsOptions{})
}

// OpsOptions say who may read /metrics. The exposition labels every
// tenant's endpoint IDs, states and failure classes, so a multi-tenant
// deployment either serves it on a listener only the scraper reaches
// (NoMetrics on the tenant-facing one) or asks for a token.
type OpsOptions struct {
	// NoMetrics leaves /metrics out (404): it is served on another listener.
	NoMetrics bool
	// Token, when not empty, is the bearer token a scrape must send
	// (Authorization: Bearer <token>); without it /metrics is 401.
	Token string
}

// OpsHandlerWith is OpsHandler with /metrics restricted by o.
func OpsHandlerWith(reg prometheus.Gatherer, ready ReadyFunc, o OpsOptions) http.Handler {
	mux := http.NewServeMux()
	if !o.NoMetrics {
		mux.Handle("GET "+PathMetrics, requireBearer(o.Token, promhttp.HandlerFor(reg, promhttp.HandlerOpts{
			// A collector error should still expose what could be gathered
			// rather than blank the whole scrape.
			ErrorHandling: promhttp.ContinueOnError,
		})))
	}
	mux.HandleFunc("GET "+PathHealthz, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("GET "+PathReadyz, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		if ready != nil {
			ctx, cancel := context.WithTimeout(r.Context(), DefaultReadyTimeout)
			defer cancel()
			if err := ready(ctx); err != nil {
				w.WriteHeader(http.StatusServiceUnavailable)
				_ = json.NewEncoder(w).Encode(readyBody{Status: "not ready", Reason: err.Error()})
				return
			}
		}
		_ = json.NewEncoder(w).Encode(readyBody{Status: "ready"})
	})
	return mux
}

type readyBody struct {
	Status string `json:"status"`
	Reason string `json:"reason,omitempty"`
}

// requireBearer admits a request whose Authorization is "Bearer <token>".
// The comparison is of the two SHA-256 digests in constant time, so neither
// the token's bytes nor its length show in the answer's timing.
func requireBearer(token string, next http.Handler) http.Handler {
	if token == "" {
		return next
	}
	want := sha256.Sum256([]byte(token))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		scheme, got, _ := strings.Cut(r.Header.Get("Authorization"), " ")
		sum := sha256.Sum256([]byte(strings.TrimSpace(got)))
		if !strings.EqualFold(scheme, "Bearer") || subtle.ConstantTimeCompare(sum[:], want[:]) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="mcpmon metrics"`)
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte("/metrics needs Authorization: Bearer <token> (--metrics-token-file)\n"))
			return
		}
		next.ServeHTTP(w, r)
	})
}
