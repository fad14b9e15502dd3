package api

import (
	"errors"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

	"golang.org/x/time/rate"

	apiv1 "github.com/mcpmon/mcpmon/pkg/api/v1"
	"github.com/mcpmon/mcpmon/pkg/auth"
	"github.com/mcpmon/mcpmon/pkg/clock"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/store"
)

// Tenants. Every endpoint, incident, maintenance window and key belongs to
// one tenant: the key's (auth.TenantFrom; the default tenant with
// authentication off). A handler that finds another tenant's object answers
// exactly as if it did not exist — the same 404 problem, the same detail —
// never 403, so a key cannot learn which IDs exist elsewhere; lists show
// the tenant's objects only.

// Quotas bound what one tenant may hold and how fast it may ask. A zero
// field means no limit (package tests, embedders); the process takes its
// limits from the --max-*-per-tenant and --rate-limit flags, whose
// defaults are the Default* constants below.
type Quotas struct {
	// MaxEndpoints per tenant. Counted by the store in the create's own
	// transaction (CreateEndpointWithin), so it holds across replicas.
	MaxEndpoints int
	// MaxMaintenance windows per tenant. Counted by the store in the
	// create's own transaction (PutObjectWithin), so it holds across
	// replicas.
	MaxMaintenance int
	// MaxStatusPages per tenant, counted like MaxMaintenance.
	MaxStatusPages int
	// MaxAgents is how many live agent keys a tenant may hold (agents.go).
	MaxAgents int
	// RatePerSecond is each tenant's sustained request rate on /v1 and
	// Burst how many requests it may make at once; beyond them the API
	// answers 429 with Retry-After. Each replica keeps its own buckets, so
	// behind a load balancer a tenant gets up to N times the rate.
	RatePerSecond float64
	Burst         int
	// MaxInFlight is how many requests one tenant may have in progress on
	// this replica at once (0: no limit); past it the API answers 429. The
	// rate bounds how many a tenant starts, this how many it holds: a probe
	// on demand waits up to its endpoint's timeout, so 20 a second could
	// otherwise hold hundreds of requests, each polling the store.
	MaxInFlight int
}

// quotaProblem names the quota, its limit and the flag that sets it.
func quotaProblem(noun, flag string, limit int) *apiv1.Problem {
	return problemf(http.StatusConflict, apiv1.TypeQuotaExceeded,
		"quota reached: this tenant may have at most %d %s (%s); delete one first", limit, noun, flag)
}

// endpointOf loads endpoint id if it is the request's tenant's; another
// tenant's is the same 404 as a missing one, and costs what a missing one
// does: the store decides ownership from its index before it reads (or
// the sealed store opens) the record.
func (s *server) endpointOf(r *http.Request, id string) (model.Endpoint, *apiv1.Problem) {
	e, err := s.store.GetEndpointOf(r.Context(), auth.TenantFrom(r.Context()), id)
	if err != nil {
		return model.Endpoint{}, s.storeProblem(r, err, "endpoint "+id)
	}
	return e, nil
}

// incidentOf loads incident id if it is the request's tenant's (the
// tenant its endpoint had when it opened); otherwise 404 as if missing,
// decided from the store's tenant index before the record is read.
func (s *server) incidentOf(r *http.Request, id string) (model.Incident, *apiv1.Problem) {
	inc, err := s.store.GetIncidentOf(r.Context(), auth.TenantFrom(r.Context()), id)
	if err != nil {
		return model.Incident{}, s.storeProblem(r, err, "incident "+id)
	}
	return inc, nil
}

// isQuota reports whether err is a store quota refusal.
func isQuota(err error) bool { return errors.Is(err, store.ErrQuota) }

// rateLimiter keeps one token bucket per tenant (golang.org/x/time/rate,
// fed the injected clock's time so tests step it). Tenants are bounded by
// the keys in the store — an unauthenticated request is refused before it
// gets here — so the map needs no eviction.
type rateLimiter struct {
	clk   clock.Clock
	limit rate.Limit
	burst int

	mu      sync.Mutex
	tenants map[string]*rate.Limiter
}

func newRateLimiter(q Quotas, clk clock.Clock) *rateLimiter {
	if q.RatePerSecond <= 0 {
		return nil
	}
	burst := q.Burst
	if burst <= 0 {
		burst = max(1, int(math.Ceil(q.RatePerSecond)))
	}
	return &rateLimiter{clk: clk, limit: rate.Limit(q.RatePerSecond), burst: burst, tenants: map[string]*rate.Limiter{}}
}

// allow takes a token of tenant's bucket, or says how long until one is
// there.
func (l *rateLimiter) allow(tenant string) (bool, time.Duration) { return l.allowN(tenant, 1) }

// allowN takes n tokens of tenant's bucket at once (at most its burst, so a
// charge can always be met), or says how long until they are there.
func (l *rateLimiter) allowN(tenant string, n int) (bool, time.Duration) {
	n = min(max(n, 1), l.burst)
	now := l.clk.Now()
	l.mu.Lock()
	lim, ok := l.tenants[tenant]
	if !ok {
		lim = rate.NewLimiter(l.limit, l.burst)
		l.tenants[tenant] = lim
	}
	l.mu.Unlock()
	if lim.AllowN(now, n) {
		return true, 0
	}
	missing := float64(n) - lim.TokensAt(now)
	return false, time.Duration(missing / float64(l.limit) * float64(time.Second))
}

// limitRate answers 429 with Retry-After (whole seconds, at least 1) when
// the request's tenant is past its rate. It follows authenticate, so the
// tenant is the key's.
func (s *server) limitRate(next http.Handler) http.Handler {
	if s.limiter == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.spend(w, r, 1) {
			next.ServeHTTP(w, r)
		}
	})
}

// spend takes n of the request's tenant's tokens, or answers 429 with
// Retry-After (whole seconds, at least 1) and reports false.
func (s *server) spend(w http.ResponseWriter, r *http.Request, n int) bool {
	if s.limiter == nil {
		return true
	}
	ok, wait := s.limiter.allowN(auth.TenantFrom(r.Context()), n)
	if !ok {
		secs := max(1, int(math.Ceil(wait.Seconds())))
		w.Header().Set("Retry-After", strconv.Itoa(secs))
		writeProblem(w, r, problemf(http.StatusTooManyRequests, apiv1.TypeRateLimited,
			"this tenant is over its request rate (%g per second, bursts of %d; --rate-limit); retry in %d s", float64(s.limiter.limit), s.limiter.burst, secs))
	}
	return ok
}

// inFlight counts each tenant's requests in progress. Like the buckets,
// its tenants are bounded by the keys in the store, and a tenant with none
// in progress is dropped.
type inFlight struct {
	max int

	mu sync.Mutex
	n  map[string]int
}

func newInFlight(q Quotas) *inFlight {
	if q.MaxInFlight <= 0 {
		return nil
	}
	return &inFlight{max: q.MaxInFlight, n: map[string]int{}}
}

// acquire counts one more request of tenant in progress, unless it
// already has max.
func (f *inFlight) acquire(tenant string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n[tenant] >= f.max {
		return false
	}
	f.n[tenant]++
	return true
}

func (f *inFlight) release(tenant string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n[tenant]--; f.n[tenant] <= 0 {
		delete(f.n, tenant)
	}
}

// limitInFlight answers 429 with Retry-After: 1 when the request's tenant
// already has Quotas.MaxInFlight requests in progress on this replica. It
// follows authenticate, so the tenant is the key's. /mcp is not wrapped:
// its tool calls make /v1 requests, which are counted, and counting the
// call too would let a tenant's calls hold every slot their own requests
// need.
func (s *server) limitInFlight(next http.Handler) http.Handler {
	if s.inFlight == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tenant := auth.TenantFrom(r.Context())
		if !s.inFlight.acquire(tenant) {
			w.Header().Set("Retry-After", "1")
			writeProblem(w, r, problemf(http.StatusTooManyRequests, apiv1.TypeRateLimited,
				"this tenant already has %d requests in progress (--max-in-flight-per-tenant); retry once one has finished", s.inFlight.max))
			return
		}
		defer s.inFlight.release(tenant)
		next.ServeHTTP(w, r)
	})
}
