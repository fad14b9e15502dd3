// Package api is mcpmon's REST API under /v1: it owns the HTTP contract for
// registering MCP endpoints, reading their latest probe result and verdict
// history, listing and acknowledging incidents (with what each alert sink
// was told), and managing maintenance windows; every change it makes is
// recorded in the tenant's audit log (audit.go).
//
// Requests enter through the http.Handler returned by New. Data leaves to the
// store (endpoints, incidents, maintenance documents) and, for every endpoint
// change, to the scheduler so a new or edited schedule takes effect without a
// restart. Everything the API needs is a small interface declared here and
// passed in Options; pkg/store/bolt and pkg/store/redis satisfy Store, and
// *scheduler.Scheduler satisfies Scheduler.
//
// The API speaks JSON with camelCase fields and Go duration strings
// ("30s", "1m30s") for durations. Errors are application/problem+json
// (RFC 9457) with an `errors` list of {pointer, detail} for field problems.
// Endpoint responses carry an ETag (the configuration version); a PATCH with
// If-Match is applied only to that version (412 otherwise), and one without
// it is compare-and-set on the version it read, retried on a lost race, then
// 409.
//
// Every object belongs to the tenant of the key that created it, and every
// handler scopes by the request's tenant: another tenant's object is a 404
// indistinguishable from a missing one, lists hold the tenant's own, and
// Options.Quotas bound what a tenant may hold and how fast it may ask
// (tenants.go).
//
// Secrets never leave: header values and sink secrets are redacted in every
// response, and the request log records method, path, status and duration
// only — never bodies, headers or query strings.
package api

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/base32"
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"

	apiv1 "github.com/mcpmon/mcpmon/pkg/api/v1"
	"github.com/mcpmon/mcpmon/pkg/auth"
	"github.com/mcpmon/mcpmon/pkg/clock"
	"github.com/mcpmon/mcpmon/pkg/hostcheck"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/msg"
	"github.com/mcpmon/mcpmon/pkg/queue"
	"github.com/mcpmon/mcpmon/pkg/store"
	"github.com/mcpmon/mcpmon/pkg/subscribe"
)

// Store is what the API reads and writes. pkg/store/bolt and pkg/store/redis
// implement it.
type Store interface {
	CreateEndpoint(ctx context.Context, e model.Endpoint) (model.Endpoint, error)
	UpdateEndpoint(ctx context.Context, e model.Endpoint) (model.Endpoint, error)
	GetEndpoint(ctx context.Context, id string) (model.Endpoint, error)
	// The owned reads (tenants.go): ownership from the per-tenant index
	// before the record is read.
	GetEndpointOf(ctx context.Context, tenant, id string) (model.Endpoint, error)
	ListEndpoints(ctx context.Context) ([]model.Endpoint, error)
	DeleteEndpoint(ctx context.Context, id string) error
	// The per-tenant index (tenants.go): a tenant's list and its quota.
	ListEndpointsOf(ctx context.Context, tenant string) ([]model.Endpoint, error)
	// One page of the tenant's endpoints (pages.go).
	ListEndpointsPage(ctx context.Context, tenant, after string, limit int) (store.EndpointPage, error)
	CreateEndpointWithin(ctx context.Context, e model.Endpoint, limit int) (model.Endpoint, error)

	LatestResult(ctx context.Context, endpointID string) (msg.ProbeResult, error)
	LastVerdict(ctx context.Context, endpointID string) (msg.Verdict, error)
	ListVerdicts(ctx context.Context, endpointID string, limit int) ([]msg.Verdict, error)
	ListVerdictsBefore(ctx context.Context, endpointID string, before time.Time, limit int) ([]msg.Verdict, error)

	GetIncident(ctx context.Context, id string) (model.Incident, error)
	GetIncidentOf(ctx context.Context, tenant, id string) (model.Incident, error)
	UpdateIncident(ctx context.Context, inc model.Incident) (model.Incident, error)
	// An update posted with notify is saved with its notice on the
	// endpoint's tracker, in one write (updates.go).
	GetTracker(ctx context.Context, endpointID string) (model.Tracker, error)
	SaveTracker(ctx context.Context, t model.Tracker, incidents ...model.Incident) error
	ListIncidents(ctx context.Context, f store.IncidentFilter) ([]model.Incident, error)
	Deliveries(ctx context.Context, incidentID string) ([]model.Delivery, error)

	PutObject(ctx context.Context, kind, id string, doc []byte) error
	GetObject(ctx context.Context, kind, id string) ([]byte, error)
	ListObjects(ctx context.Context, kind string) (map[string][]byte, error)
	DeleteObject(ctx context.Context, kind, id string) error
	// Maintenance windows by tenant (maintenance.go): the tenant's index,
	// and the quota counted in the write's transaction.
	GetObjectOf(ctx context.Context, kind, tenant, id string) ([]byte, error)
	ListObjectsOf(ctx context.Context, kind, tenant string) (map[string][]byte, error)
	PutObjectWithin(ctx context.Context, kind, id string, doc []byte, limit int) error
}

// Scheduler learns about endpoint changes. *scheduler.Scheduler implements it.
type Scheduler interface {
	// Upsert schedules or re-schedules ep (paused endpoints are unscheduled).
	Upsert(ep model.Endpoint) error
	// Remove unschedules the endpoint.
	Remove(id string)
}

// Options configure New. Store is required; the rest have defaults.
type Options struct {
	Store Store
	// Scheduler, when set, is told about every create, update and delete so
	// changes take effect at once in this process (other replicas catch up
	// through their periodic Sync).
	Scheduler Scheduler
	// TargetValidator vets an endpoint URL beyond the syntax checks done here
	// (scheme, host, no userinfo): the process wires the SSRF guard's
	// netguard.Guard.CheckTarget with its allow-private-targets flag. Its
	// error message is returned to the client as the `url` field problem.
	TargetValidator func(rawURL string) error
	// ProtocolValidator vets a transport and pinned protocol version pair
	// beyond the syntax checks done here (the process wires
	// prober.ValidateProtocol: e.g. a version the prober cannot speak, or
	// one the chosen transport does not carry).
	ProtocolValidator func(transport, version string) error
	// SinkValidator vets an endpoint's per-endpoint sinks document. Without
	// it any JSON value is accepted.
	SinkValidator func(sinks json.RawMessage) error
	// SinkRedactor returns sinks with every secret replaced, for responses.
	// Default: RedactSinks.
	SinkRedactor func(sinks json.RawMessage) json.RawMessage
	// Regions is the deployment's region set (--regions): an endpoint's
	// regions field must name some of them (endpoint_regions.go).
	Regions []string
	// Logger for request and error logs; default discards.
	Logger *slog.Logger
	// Clock stamps acknowledgements and maintenance windows; default wall time.
	Clock clock.Clock
	// NewID returns a fresh ID for endpoints and maintenance windows. IDs
	// appear in queue group and dedup IDs, so they must be short and use only
	// [a-z0-9-]. Default: 16 random base32 characters.
	NewID func() string
	// MaxBodyBytes caps a request body (default 1 MiB); larger ones get 413.
	MaxBodyBytes int64
	// Authenticator, when set, requires an API key on every /v1 request
	// (auth.go); nil serves /v1 without keys.
	Authenticator Authenticator
	// AuthFailures limits failed authentications per client address
	// (auth.go); nil: auth.NewFailureLimiter's defaults.
	AuthFailures *auth.FailureLimiter
	// OperatorSinks name the operator's global sinks: another tenant's
	// incident shows how many notifications went to them, never their
	// names or outcomes (incidents.go).
	OperatorSinks []string
	// Keys serves /v1/keys (admin); nil answers it with 404.
	Keys KeyManager
	// Audit records every successful state change and serves /v1/audit
	// (admin, audit.go); nil uses Store if it implements AuditLog (the
	// store backends do), else keeps no log.
	Audit AuditLog
	// Metrics, when set, counts what the API does beyond requests
	// (NewMetrics).
	Metrics *Metrics
	// AllowedHosts, when not empty, are the only Host header values the API
	// answers (host, or host:port); others get 421 (against DNS rebinding).
	AllowedHosts []string
	// Quotas bound each tenant's endpoints, maintenance windows and request
	// rate (tenants.go); zero fields are no limit.
	Quotas Quotas
	// DeadLetters are the stage queues' dead-letter queues by stage name,
	// served under /v1/dlq to the operator (dlq.go); empty answers 404.
	DeadLetters map[string]queue.DeadLetterQueue
	// SubscriberSealer seals webhook subscribers' URLs and secrets at rest
	// (the sealing keyring); nil keeps them as given.
	SubscriberSealer subscribe.Sealer
	// MaxSubscribersPerPage caps a page's subscribers of every kind (<= 0:
	// model.DefaultMaxSubscribersPerPage).
	MaxSubscribersPerPage int
	// AllowHTTPWebhooks accepts http:// webhook subscriber URLs (the
	// allow-private-targets flag); https only otherwise.
	AllowHTTPWebhooks bool
	// Probes serves POST /v1/endpoints/{id}/probe (probenow.go); nil
	// answers it with 503.
	Probes ProbeRequester
	// MCP, when set, builds the handler served at /mcp from this API's own
	// handler (mcp.go; the process wires mcpapi.New); nil serves no /mcp.
	MCP func(rest http.Handler) http.Handler
	// AgentCommands holds agent locations' probe commands for
	// GET /v1/agent/commands (agents.go); nil serves none.
	AgentCommands AgentCommandSource
	// AgentResults is the results queue agents' results are published to;
	// nil refuses them.
	AgentResults ResultPublisher
	// AgentSecretsOverHTTP sends commands whose endpoints carry secrets
	// to agents polling over plain HTTP (tests on loopback); otherwise
	// only over TLS.
	AgentSecretsOverHTTP bool
	// AgentOfflineAfter is how long an agent may go without a poll before
	// GET /v1/agents shows it offline (default model.DefaultAgentOfflineAfter).
	AgentOfflineAfter time.Duration
	// HostResolver looks up the TXT record that proves a status page's
	// custom host (statuspages_host.go); default net.DefaultResolver.
	HostResolver TXTResolver
	// HostLookupTimeout bounds that lookup (default
	// hostcheck.DefaultLookupTimeout).
	HostLookupTimeout time.Duration
	// UnverifiedHosts lets a status page's custom host hold its name
	// against other pages without proof, as pkg/status then serves it
	// (--status-page-host-verification=false); otherwise only a verified or
	// grandfathered host does, and pending claims hold nothing.
	UnverifiedHosts bool
}

// DefaultMaxBodyBytes is the default request body cap.
const DefaultMaxBodyBytes = 1 << 20

// Redacted is the contract's marker for a secret value (apiv1.Redacted),
// under the name the server's redaction code uses.
const Redacted = apiv1.Redacted

type server struct {
	store     Store
	sched     Scheduler
	validURL  func(string) error
	validProt func(transport, version string) error
	validSink func(json.RawMessage) error
	redact    func(json.RawMessage) json.RawMessage
	log       *slog.Logger
	clock     clock.Clock
	newID     func() string
	maxBody   int64
	authn     Authenticator
	failures  *auth.FailureLimiter
	refusals  refusalLog // refusals.go
	opSinks   map[string]bool
	keys      KeyManager
	audit     AuditLog
	metrics   *Metrics
	quotas    Quotas
	limiter   *rateLimiter // nil: no rate limit
	// agentLimiter is agent keys' own, per key (agents.go); nil with limiter.
	agentLimiter *rateLimiter
	inFlight     *inFlight // nil: no cap on a tenant's requests in progress (tenants.go)
	dlq          map[string]queue.DeadLetterQueue
	regions      []string
	subSeal      subscribe.Sealer
	maxSubs      int
	httpHooks    bool
	probes       ProbeRequester
	// ownHosts are the API's own host names (Options.AllowedHosts, no
	// port), which no status page may take (statuspages_host.go).
	ownHosts map[string]bool
	// Status page host proof (statuspages_host.go): the resolver, its
	// timeout, and whether a host needs proof (!Options.UnverifiedHosts).
	hostDNS     TXTResolver
	hostTimeout time.Duration
	hostProof   bool
	// The agent exchange (agents.go).
	agentCmds  AgentCommandSource
	agentPub   ResultPublisher
	agentPlain bool
	seen       agentSeen
	// offlineAfter: an agent without a poll for this long is offline.
	offlineAfter time.Duration
}

// New returns the /v1 API handler. It panics if opts.Store is nil: that is a
// wiring bug, not a runtime condition.
func New(opts Options) http.Handler {
	if opts.Store == nil {
		panic("api.New: Options.Store is required")
	}
	s := &server{
		store:     opts.Store,
		sched:     opts.Scheduler,
		validURL:  opts.TargetValidator,
		validProt: opts.ProtocolValidator,
		validSink: opts.SinkValidator,
		redact:    opts.SinkRedactor,
		regions:   opts.Regions,
		log:       opts.Logger,
		clock:     opts.Clock,
		newID:     opts.NewID,
		maxBody:   opts.MaxBodyBytes,
		authn:     opts.Authenticator,
		failures:  opts.AuthFailures,
		opSinks:   map[string]bool{},
		keys:      opts.Keys,
		audit:     opts.Audit,
		metrics:   opts.Metrics,
		quotas:    opts.Quotas,
		dlq:       opts.DeadLetters,
		subSeal:   opts.SubscriberSealer,
		maxSubs:   cmp.Or(max(opts.MaxSubscribersPerPage, 0), model.DefaultMaxSubscribersPerPage),
		httpHooks: opts.AllowHTTPWebhooks,
		probes:    opts.Probes,

		agentCmds:  opts.AgentCommands,
		agentPub:   opts.AgentResults,
		agentPlain: opts.AgentSecretsOverHTTP,

		offlineAfter: cmp.Or(max(opts.AgentOfflineAfter, 0), model.DefaultAgentOfflineAfter),

		hostDNS:     opts.HostResolver,
		hostTimeout: cmp.Or(max(opts.HostLookupTimeout, 0), hostcheck.DefaultLookupTimeout),
		hostProof:   !opts.UnverifiedHosts,
	}
	if s.hostDNS == nil {
		s.hostDNS = net.DefaultResolver
	}
	if opts.Metrics != nil {
		s.seen.metrics = opts.Metrics.Agents
	}
	if s.redact == nil {
		s.redact = model.RedactSinks
	}
	if s.failures == nil {
		s.failures = auth.NewFailureLimiter(auth.FailureLimits{})
	}
	for _, n := range opts.OperatorSinks {
		s.opSinks[n] = true
	}
	s.ownHosts = ownHostNames(opts.AllowedHosts) // statuspages_host.go
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.log = s.log.With("component", "api")
	if s.clock == nil {
		s.clock = clock.Real{}
	}
	if s.newID == nil {
		s.newID = RandomID
	}
	if s.maxBody <= 0 {
		s.maxBody = DefaultMaxBodyBytes
	}
	if al, ok := opts.Store.(AuditLog); ok && s.audit == nil {
		s.audit = al
	}
	s.limiter = newRateLimiter(opts.Quotas, s.clock)
	s.agentLimiter = newAgentRateLimiter(s.limiter != nil, s.clock)
	s.inFlight = newInFlight(opts.Quotas)

	r := chi.NewRouter()
	allow := sync.OnceValue(func() *chi.Mux { return flatRoutes(r) })                                  // once every route is in
	r.Use(requestID, s.logRequests, s.recoverer, hostAllowList(opts.AllowedHosts), requireJSON(allow)) // guards.go
	r.NotFound(func(w http.ResponseWriter, r *http.Request) {
		writeProblem(w, r, problemf(http.StatusNotFound, "", "no route for %s", r.URL.Path))
	})
	r.MethodNotAllowed(func(w http.ResponseWriter, req *http.Request) {
		for _, m := range allowed(allow(), req.URL.Path) {
			w.Header().Add("Allow", m)
		}
		writeProblem(w, req, problemf(http.StatusMethodNotAllowed, "", "%s is not allowed on %s", req.Method, req.URL.Path))
	})
	// The contract is documentation: public, outside /v1's authentication
	// (openapi.go, docs.go).
	r.Get("/v1/openapi.json", specHandler())
	r.Get("/docs", docsHandler())
	s.mountMCP(r, opts.MCP)                     // mcp.go
	r.Route("/v1/agent", s.agentExchangeRoutes) // agents.go: agent keys only, outside the audit log
	r.Route("/v1", func(r chi.Router) {
		r.Use(s.authenticate)  // auth.go: key and scope for every /v1 route
		r.Use(s.recordAudit)   // audit.go: who changed what
		r.Use(s.limitRate)     // tenants.go: each tenant's request rate, after the key names the tenant
		r.Use(s.limitInFlight) // tenants.go: and how many it holds at once
		r.Route("/endpoints", func(r chi.Router) {
			r.Get("/", s.listEndpoints)
			r.Post("/", s.createEndpoint)
			r.Get("/{id}", s.getEndpoint)
			r.Patch("/{id}", s.patchEndpoint)
			r.Delete("/{id}", s.deleteEndpoint)
			r.Get("/{id}/verdicts", s.listVerdicts)
			r.Get("/{id}/uptime", s.getUptime)           // uptime.go
			r.Get("/{id}/history", s.getHistory)         // uptime.go
			r.Get("/{id}/catalog", s.getCatalog)         // uptime.go
			r.Get("/{id}/events", s.listEvents)          // events.go
			r.Get("/{id}/conformance", s.getConformance) // conformance.go
			r.Post("/{id}/probe", s.probeEndpoint)       // probenow.go
		})
		r.Route("/incidents", func(r chi.Router) {
			r.Get("/", s.listIncidents)
			r.Get("/{id}", s.getIncident)
			r.Post("/{id}/ack", s.ackIncident)
			r.Post("/{id}/updates", s.postIncidentUpdate) // updates.go
		})
		r.Route("/maintenance", func(r chi.Router) {
			r.Get("/", s.listMaintenance)
			r.Post("/", s.createMaintenance)
			r.Get("/{id}", s.getMaintenance)
			r.Put("/{id}", s.putMaintenance)
			r.Delete("/{id}", s.deleteMaintenance)
		})
		r.Route("/status-pages", func(r chi.Router) { // statuspages.go
			r.Get("/", s.listStatusPages)
			r.Post("/", s.createStatusPage)
			r.Get("/{id}", s.getStatusPage)
			r.Put("/{id}", s.putStatusPage)
			r.Delete("/{id}", s.deleteStatusPage)
			r.Post("/{id}/verify-host", s.verifyHost) // statuspages_host.go
		})
		r.Route("/status-page-hosts", s.statusPageHostRoutes) // statuspagehosts.go: the operator's
		r.Route("/keys", s.keyRoutes)                         // keys.go
		r.Route("/agents", s.agentRoutes)                     // agents.go
		r.Route("/audit", s.auditLogRoutes)
		r.Route("/dlq", s.dlqRoutes)                                                  // dlq.go
		r.Get("/status-pages/{id}/subscribers", s.listSubscribers)                    // subscribers.go
		r.Post("/status-pages/{id}/subscribers", s.createWebhookSubscriber)           // subscribers.go
		r.Delete("/status-pages/{id}/subscribers/{subscriberId}", s.deleteSubscriber) // subscribers.go
	})
	return r
}

// RandomID returns 16 lower-case base32 characters (80 random bits).
func RandomID() string {
	var b [10]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b[:]))
}

// logRequests logs one line per request: method, path, status, duration and
// response size. Query strings, headers and bodies are never logged: they
// can carry secrets.
func (s *server) logRequests(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		ww := middleware.NewWrapResponseWriter(w, r.ProtoMajor)
		next.ServeHTTP(ww, r)
		status := ww.Status()
		if status == 0 {
			status = http.StatusOK
		}
		level := slog.LevelInfo
		if status >= 500 {
			level = slog.LevelError
		}
		s.log.LogAttrs(r.Context(), level, "request",
			slog.String("method", r.Method),
			slog.String("path", r.URL.Path),
			slog.Int("status", status),
			slog.Duration("duration", time.Since(start)),
			slog.Int("bytes", ww.BytesWritten()),
			slog.String("request_id", middleware.GetReqID(r.Context())),
		)
	})
}

// recoverer turns a handler panic into a logged 500 problem.
func (s *server) recoverer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				s.log.Error("handler panic", "method", r.Method, "path", r.URL.Path, "panic", v)
				writeProblem(w, r, problemf(http.StatusInternalServerError, "", "internal error"))
			}
		}()
		next.ServeHTTP(w, r)
	})
}

// flatRoutes is r's routes on one router without mounts, for a 405's
// Allow (chi's own 405 lists them; a custom handler has to work them out).
// On r, Match says a subrouter's mount path routes every method (the
// mount's own node); on the flat copy each route has only its methods. A
// subrouter's "/" route also serves its mount path without the slash
// (/v1/endpoints), as chi does.
func flatRoutes(r chi.Routes) *chi.Mux {
	flat := chi.NewRouter()
	nop := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
	_ = chi.Walk(r, func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		if !slices.Contains(allowable, method) {
			return nil
		}
		flat.Method(method, route, nop)
		if len(route) > 1 && strings.HasSuffix(route, "/") && !strings.HasSuffix(route, "*/") {
			flat.Method(method, strings.TrimSuffix(route, "/"), nop)
		}
		return nil
	})
	return flat
}

// allowable are the methods a 405's Allow may list.
var allowable = []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete}

// allowed lists the methods flat routes at path.
func allowed(flat *chi.Mux, path string) []string {
	var out []string
	for _, m := range allowable {
		if flat.Match(chi.NewRouteContext(), m, path) {
			out = append(out, m)
		}
	}
	return out
}
