package prober

import (
	"bufio"
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/mcpmon/mcpmon/pkg/clock"
	"github.com/mcpmon/mcpmon/pkg/conformance"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/msg"
	"github.com/mcpmon/mcpmon/pkg/netguard"
	"github.com/mcpmon/mcpmon/pkg/store"
)

// Protocol revisions the probe speaks, newest first.
const (
	Version20260728 = "2026-07-28" // stateless: server/discover
	Version20251125 = "2025-11-25"
	Version20250618 = "2025-06-18"
	Version20250326 = "2025-03-26"
	Version20241105 = "2024-11-05" // legacy HTTP+SSE
)

// Versions lists the supported protocol revisions, newest first.
func Versions() []string { return slices.Clone(versions[:]) }

var versions = [...]string{Version20260728, Version20251125, Version20250618, Version20250326, Version20241105}

// Transports an endpoint may select.
const (
	TransportAuto           = "auto"
	TransportStreamableHTTP = "streamable-http"
	TransportSSE            = "sse"
)

// ErrInvalidProtocol reports a transport or pinned version the prober does
// not speak, or a contradictory pair.
var ErrInvalidProtocol = errors.New("invalid transport or protocol version")

// ValidateProtocol checks an endpoint's transport (auto | streamable-http |
// sse, empty = auto) and optional pinned protocol version at registration.
func ValidateProtocol(transport, version string) error {
	switch transport {
	case "", TransportAuto, TransportStreamableHTTP, TransportSSE:
	default:
		return fmt.Errorf("%w: transport %q (want %s, %s or %s)", ErrInvalidProtocol, transport, TransportAuto, TransportStreamableHTTP, TransportSSE)
	}
	if version == "" {
		return nil
	}
	if !slices.Contains(versions[:], version) {
		return fmt.Errorf("%w: protocol version %q (known: %s)", ErrInvalidProtocol, version, strings.Join(versions[:], ", "))
	}
	if transport == TransportSSE && version == Version20260728 || transport == TransportStreamableHTTP && version == Version20241105 {
		return fmt.Errorf("%w: protocol %s is not spoken over transport %s", ErrInvalidProtocol, version, transport)
	}
	return nil
}

// Event kinds a probe may attach to its result (pkg/msg is their home).
const (
	EventVersionChanged = msg.EventVersionChanged
	EventServerChanged  = msg.EventServerChanged
	EventCatalogChanged = msg.EventCatalogChanged
	EventCertExpiring   = msg.EventCertExpiring
)

// Defaults for zero Options fields.
const (
	DefaultMaxBody          = 1 << 20
	DefaultMaxSSEEvents     = 64
	DefaultTimeout          = 10 * time.Second
	MaxTimeout              = 2 * time.Minute
	DefaultLatencyThreshold = 3 * time.Second
	DefaultCertWarning      = 14 * 24 * time.Hour
	DefaultMaxRedirects     = 3
	DefaultMaxToolPages     = 20
)

// CatalogStore keeps what a prober remembers of each endpoint: its last tool
// catalog (kind "catalog") and server identity (kind "server"), under
// store.ProberObjectID(endpoint ID, region). store.Objects satisfies it.
type CatalogStore interface {
	GetObject(ctx context.Context, kind, id string) ([]byte, error)
	PutObject(ctx context.Context, kind, id string, doc []byte) error
}

// Options configure a Prober. Zero values take the defaults above.
type Options struct {
	// AllowPrivateTargets turns the SSRF guard (netguard.Guard) off (tests,
	// private deployments).
	AllowPrivateTargets bool
	// AllowedNetworks are exceptions to the SSRF block list (e.g. one
	// internal subnet) while everything else stays refused.
	AllowedNetworks []netip.Prefix
	// ConfineTargets confines the guard to AllowedNetworks (and, with
	// AllowPrivateTargets, to private addresses): every other address,
	// public ones included, is refused (netguard.Guard.Confine). The agent
	// probes the endpoints that carry its secrets with such a prober.
	ConfineTargets bool
	// Region is recorded in every result.
	Region string
	// RegionalMemory keeps what the prober remembers of an endpoint (see
	// Catalogs) under its Region (store.ProberObjectID), as a deployment
	// with a region set needs: there every region probes every slot, and
	// regions may see different catalogs. Without it the memory is the
	// endpoint's own, shared by probers that take turns on one queue
	// whatever their region label.
	RegionalMemory bool

	Logger  *slog.Logger
	Metrics *Metrics // optional
	Clock   clock.Clock
	// MaxBody caps every response body and SSE stream (default 1 MiB).
	MaxBody int64
	// MaxSSEEvents caps the events read while waiting for one answer.
	MaxSSEEvents int
	// DefaultTimeout applies to endpoints without a timeout.
	DefaultTimeout time.Duration
	// DefaultLatencyThreshold marks a probe degraded when its total exceeds
	// it and the endpoint sets none. Negative disables.
	DefaultLatencyThreshold time.Duration
	// CertWarning adds a cert_expiring event when the certificate expires
	// within it.
	CertWarning time.Duration
	// Catalogs keeps what the prober remembers per endpoint between probes:
	// the tool catalog (kind CatalogKind) for drift events and the identity
	// of the last successful probe (kind IdentityKind) for version-change
	// events, per region (see objectID). Nil disables drift events (the
	// fingerprint is still computed) and measures changes against the
	// previous result only.
	Catalogs CatalogStore
	// Resolver resolves target names (nil: net.DefaultResolver). Tests point
	// it at a DNS server on 127.0.0.1.
	Resolver *net.Resolver
	// RootCAs verifies target certificates (nil: the system pool).
	RootCAs *x509.CertPool
	// ClientName and ClientVersion are sent as clientInfo.
	ClientName    string
	ClientVersion string
	// CredentialWarning adds a credential_expiry event when an endpoint's
	// JWT bearer token expires within it (default 72h); an endpoint's own
	// CredentialWarning overrides it.
	CredentialWarning time.Duration
	// MaxCachedTokens bounds the OAuth token cache (default 10000
	// endpoints; the least recently used is dropped first).
	MaxCachedTokens int
	// ConformanceEvery is how often per endpoint a probe sends the extra
	// requests of the active conformance rules (default
	// conformance.ActiveEvery); the passive rules judge every probe.
	// Negative turns conformance off: no rules, no result field.
	ConformanceEvery time.Duration
	// Tracer makes each probe a trace (otel.go); nil: no spans, and no
	// trace context is sent to any target.
	Tracer trace.TracerProvider
}

// Prober runs MCP probes. It is safe for concurrent use; every probe gets its
// own transport, so no connection is shared between endpoints or probes.
type Prober struct {
	opts  Options
	log   *slog.Logger
	clock clock.Clock
	guard netguard.Guard
	// meta is the 2026-07-28 params._meta, built once.
	meta map[string]any
	// readers and writers recycle the probes' 4 KiB buffers.
	readers, writers sync.Pool
	// userAgent is the User-Agent header value as written on the wire.
	userAgent string
	// initParams holds the encoded initialize params per protocol version.
	initParams map[string]json.RawMessage
	// tokens caches OAuth client-credentials tokens per endpoint, fetched
	// through tokenClient (oauth.go).
	tokens      *tokenCache
	tokenClient *http.Client
	// tracer is Options.Tracer's, nil without one.
	tracer trace.Tracer
}

func (p *Prober) getReader(r io.Reader) *bufio.Reader {
	if br, ok := p.readers.Get().(*bufio.Reader); ok {
		br.Reset(r)
		return br
	}
	return bufio.NewReaderSize(r, 4096)
}

func (p *Prober) putReader(br *bufio.Reader) {
	br.Reset(nil)
	p.readers.Put(br)
}

func (p *Prober) getWriter(w io.Writer) *bufio.Writer {
	if bw, ok := p.writers.Get().(*bufio.Writer); ok {
		bw.Reset(w)
		return bw
	}
	return bufio.NewWriterSize(w, 4096)
}

func (p *Prober) putWriter(bw *bufio.Writer) {
	bw.Reset(nil)
	p.writers.Put(bw)
}

// initializeParams returns the encoded params of initialize for version.
func (p *Prober) initializeParams(version string) json.RawMessage {
	if b, ok := p.initParams[version]; ok {
		return b
	}
	return encodeInitializeParams(version, p.opts.ClientName, p.opts.ClientVersion)
}

func encodeInitializeParams(version, name, clientVersion string) json.RawMessage {
	b, _ := json.Marshal(map[string]any{
		"protocolVersion": version,
		"capabilities":    map[string]any{},
		"clientInfo":      map[string]string{"name": name, "version": clientVersion},
	})
	return b
}

// New returns a Prober.
func New(opts Options) *Prober {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Clock == nil {
		opts.Clock = clock.Real{}
	}
	if opts.MaxBody <= 0 {
		opts.MaxBody = DefaultMaxBody
	}
	if opts.MaxSSEEvents <= 0 {
		opts.MaxSSEEvents = DefaultMaxSSEEvents
	}
	if opts.DefaultTimeout <= 0 {
		opts.DefaultTimeout = DefaultTimeout
	}
	if opts.DefaultLatencyThreshold == 0 {
		opts.DefaultLatencyThreshold = DefaultLatencyThreshold
	}
	if opts.CertWarning == 0 {
		opts.CertWarning = DefaultCertWarning
	}
	if opts.CredentialWarning == 0 {
		opts.CredentialWarning = DefaultCredentialWarning
	}
	if opts.ClientName == "" {
		opts.ClientName = "mcpmon"
	}
	if opts.ClientVersion == "" {
		opts.ClientVersion = "dev"
	}
	if opts.Resolver == nil {
		opts.Resolver = net.DefaultResolver
	}
	if opts.ConformanceEvery == 0 {
		opts.ConformanceEvery = conformance.ActiveEvery
	}
	initParams := make(map[string]json.RawMessage, len(versions))
	for _, v := range versions {
		initParams[v] = encodeInitializeParams(v, opts.ClientName, opts.ClientVersion)
	}
	p := &Prober{
		tokens:     newTokenCache(opts.MaxCachedTokens),
		initParams: initParams,
		userAgent:  wireHeaderValue(opts.ClientName + "/" + opts.ClientVersion),
		opts:       opts,
		log:        opts.Logger.With("component", "prober"),
		clock:      opts.Clock,
		guard:      netguard.Guard{AllowPrivate: opts.AllowPrivateTargets, Allowed: opts.AllowedNetworks, Confine: opts.ConfineTargets},
		meta: map[string]any{
			"io.modelcontextprotocol/protocolVersion":    Version20260728,
			"io.modelcontextprotocol/clientInfo":         map[string]string{"name": opts.ClientName, "version": opts.ClientVersion},
			"io.modelcontextprotocol/clientCapabilities": map[string]any{},
		},
	}
	p.tokenClient = newTokenClient(p)
	if opts.Tracer != nil {
		p.tracer = opts.Tracer.Tracer(TracerName)
	}
	return p
}

// Probe probes ep once for cmd's slot with no knowledge of earlier probes.
func (p *Prober) Probe(ctx context.Context, ep model.Endpoint, cmd msg.ProbeCommand) msg.ProbeResult {
	return p.ProbeAfter(ctx, ep, cmd, nil)
}

// ProbeAfter probes ep once and remembers what it learnt at once (see Run
// and Remember): for callers that publish nothing, or tests.
func (p *Prober) ProbeAfter(ctx context.Context, ep model.Endpoint, cmd msg.ProbeCommand, prev *msg.ProbeResult) msg.ProbeResult {
	res, mem := p.Run(ctx, ep, cmd, prev)
	if err := p.Remember(ctx, mem); err != nil {
		p.log.Warn("remember probe memory failed", "endpoint", ep.ID, "err", err)
	}
	return res
}

// Memory is what a probe learnt that later probes compare with: the tool
// catalog, the server identity and the OAuth pin, each nil when unchanged.
// Run returns it instead of storing it, so the caller stores it only after
// the result is safely published: stored first, a failed publish would make
// the redelivered command's probe find the change already remembered and
// report no event.
type Memory struct {
	endpointID string
	// objectID is where the documents go (Prober.objectID).
	objectID string
	catalog  []byte
	identity []byte
	// authServer is a new OAuth pin (oauthpin.go), kept under the
	// endpoint's own ID whatever the region.
	authServer []byte
}

// objectID is the ID of this prober's documents of an endpoint. With
// RegionalMemory it is its region's own (store.ProberObjectID), so that
// regions which see different catalogs (a stale edge cache in one of them)
// each compare with what they saw last instead of overwriting each other's
// and reporting a change on every probe. Otherwise it is the endpoint ID,
// as before regions.
func (p *Prober) objectID(endpointID string) string {
	if !p.opts.RegionalMemory {
		return endpointID
	}
	return store.ProberObjectID(endpointID, p.opts.Region)
}

// loadObject reads this prober's document of kind for an endpoint. A
// region without one yet reads the endpoint's own (regionless) document:
// what the prober remembered before it had a region, or before documents
// were kept per region. So an upgrade neither misses a change made across
// it nor, for regions that agree, reports one; inherited reports that the
// document came from there, so the caller stores it under the region's ID
// even when nothing changed, and the fallback is read once.
func (p *Prober) loadObject(ctx context.Context, kind, endpointID string) (doc []byte, inherited bool, err error) {
	id := p.objectID(endpointID)
	doc, err = p.opts.Catalogs.GetObject(ctx, kind, id)
	if id == endpointID || !errors.Is(err, model.ErrNotFound) {
		return doc, false, err
	}
	doc, err = p.opts.Catalogs.GetObject(ctx, kind, endpointID)
	return doc, err == nil, err
}

// Remember stores m. Nothing to store, or no store, is not an error.
func (p *Prober) Remember(ctx context.Context, m Memory) error {
	if p.opts.Catalogs == nil {
		return nil
	}
	var errs []error
	if m.catalog != nil {
		if err := p.opts.Catalogs.PutObject(ctx, store.KindCatalog, m.objectID, m.catalog); err != nil {
			errs = append(errs, fmt.Errorf("store tool catalog of %s: %w", m.endpointID, err))
		}
	}
	if m.identity != nil {
		if err := p.opts.Catalogs.PutObject(ctx, store.KindServerIdentity, m.objectID, m.identity); err != nil {
			errs = append(errs, fmt.Errorf("store server identity of %s: %w", m.endpointID, err))
		}
	}
	if m.authServer != nil {
		if err := p.opts.Catalogs.PutObject(ctx, store.KindAuthServer, m.endpointID, m.authServer); err != nil {
			errs = append(errs, fmt.Errorf("store pinned OAuth authorization server of %s: %w", m.endpointID, err))
		}
	}
	return errors.Join(errs...)
}

// Run probes ep once. prev, the endpoint's previous result if any,
// lets the probe start with the era the server spoke last time (saving the
// server/discover round trip against 2025-era servers) unless that result
// failed or is from an earlier renegotiation period (see RenegotiateEvery).
// Changes of protocol version and server name or version are measured
// against the last successful probe (see IdentityKind), prev standing in
// when no store is configured. Run reads the store but writes nothing: what
// the probe learnt comes back as Memory.
func (p *Prober) Run(ctx context.Context, ep model.Endpoint, cmd msg.ProbeCommand, prev *msg.ProbeResult) (msg.ProbeResult, Memory) {
	mem := Memory{endpointID: ep.ID, objectID: p.objectID(ep.ID)}
	res := msg.ProbeResult{
		Schema:     msg.SchemaVersion,
		EndpointID: ep.ID,
		ProbeRunID: cmd.ProbeRunID(),
		Slot:       cmd.Slot,
		Region:     p.opts.Region,
		StartedAt:  p.clock.Now().UTC(),
		Phases:     map[string]float64{},
	}
	ctx, span := p.startProbeSpan(ctx, ep, cmd, time.Now())
	pctx, cancel := context.WithTimeout(ctx, p.timeoutOf(ep))
	defer cancel()

	// The configured credential, read before an OAuth token replaces it.
	credHeader, cred, hasCred := bearerJWT(ep.Headers)
	// An OAuth token is obtained before the clock of the probe starts: the
	// token URL's latency is not the MCP server's (it has its own phase).
	var tokenTime time.Duration
	var tokenStart time.Time
	var tokenErr *probeError
	var authChanged *authChange
	if ep.OAuth != nil {
		tokenStart = time.Now()
		tr := p.token(pctx, ep)
		tokenTime, tokenErr, authChanged, mem.authServer = tr.fetched, tr.err, tr.changed, tr.pin
		if tokenErr == nil {
			ep.Headers = withBearer(ep.Headers, tr.token)
		}
	}

	start := time.Now()
	r := newRun(p, ep, &res)
	r.propagateTo(ctx, span)
	r.conf.slot, r.conf.every = cmd.Slot, p.opts.ConformanceEvery
	if prev != nil {
		r.conf.prev = prev.Conformance
	}
	var err error = tokenErr
	if tokenErr == nil {
		err = r.probe(pctx, prev)
	}
	// Read before anything else can take time: a failure that ends at the
	// deadline was caused by it, whatever the transport made of it. The
	// clock, not pctx.Err: the socket's deadline (set to the same instant)
	// can fail a read before the context's own timer has fired.
	dl, _ := pctx.Deadline()
	expired := !time.Now().Before(dl)
	r.close()
	// The active conformance requests are not the server's latency.
	total := time.Since(start) - r.conf.activeTime
	res.Phases[msg.PhaseTotal] = total.Seconds()
	if tokenTime > 0 {
		r.mu.Lock()
		r.addPhase(msg.PhaseAuthToken, tokenStart, tokenStart.Add(tokenTime))
		r.mu.Unlock()
	}
	r.copyPhases()

	secrets := newScrubber(ep.Headers, endpointSecrets(ep)...)
	redactIdentity(&res, secrets)
	pe := outcome(pctx, err, expired, r.timeout)
	if d := pe.blockedDetail(); d != "" {
		// The result says only that the guard refused; what it refused is
		// the operator's network, told here.
		p.log.Info("SSRF guard refused the target", "endpoint", ep.ID, "url", model.RedactURL(ep.URL), "refused", d)
	}
	p.conclude(&res, ep, r, pe, total, secrets)
	res.Status = StatusOf(res.Class)
	var confEvents []msg.Event
	res.Conformance, confEvents = p.conformanceOf(r, &res, secrets)
	res.Events = append(res.Events, confEvents...)
	if ep.OAuth != nil && res.Class == ClassAuthRejected {
		// The target refused the token (revoked, or expired early): the
		// next probe fetches a new one instead of repeating it.
		p.tokens.forget(ep.ID)
	}
	p.opts.Metrics.credentialExpiry(ep.ID, cred.exp) // zero when none
	if hasCred {
		warn := ep.CredentialWarning
		if warn <= 0 {
			warn = p.opts.CredentialWarning
		}
		if ev := credentialEvent(credHeader, cred, p.clock.Now(), warn); ev != nil {
			res.Events = append(res.Events, *ev)
		}
	}

	if authChanged != nil {
		res.Events = append(res.Events, authChanged.event(secrets))
	}
	if ev := p.certEvent(&res); ev != nil {
		res.Events = append(res.Events, *ev)
	}
	// The store reads of change detection get a context of their own: a
	// probe that ran to its deadline (a session-closing DELETE never
	// answered) has used up ctx's, and a server must not hide a catalog
	// change by hanging at the end of the probe.
	mctx, mcancel := memoryContext(ctx)
	defer mcancel()
	evs, identity := p.identityChanges(mctx, ep.ID, cmd.Slot, prev, &res)
	res.Events = append(res.Events, evs...)
	mem.identity = identity
	if r.tools != nil {
		// Built after the probe, with the scrubber: the fingerprint in the
		// result covers the catalog as stored, never a secret it echoed.
		cat := buildCatalog(r.tools, secrets, defaultCatalogLimits, r.toolsMore)
		res.ToolCount, res.CatalogFingerprint, res.CatalogTruncated = len(cat.Tools), cat.Fingerprint, cat.Truncated
		ev, catalog := p.catalogDrift(mctx, ep.ID, cat, secrets)
		if ev != nil {
			res.Events = append(res.Events, *ev)
		}
		mem.catalog = catalog
	}
	res.FinishedAt = p.clock.Now().UTC()
	r.endProbeSpan(span, &res, time.Now())

	p.opts.Metrics.observe(&res)
	lvl := slog.LevelDebug
	if res.Status != msg.StatusUp {
		lvl = slog.LevelInfo
	}
	if p.log.Enabled(ctx, lvl) {
		p.log.Log(ctx, lvl, "probe finished", "endpoint", ep.ID, "slot", cmd.Slot, "url", model.RedactURL(ep.URL), "status", res.Status,
			"class", res.Class, "error", res.Error, "version", res.ProtocolVersion, "duration", total)
	}
	return res, mem
}

// memoryTimeout bounds the store reads of change detection after a probe.
const memoryTimeout = 5 * time.Second

// memoryContext is the context of the store reads after a probe: ctx's
// values without its deadline, bounded by memoryTimeout instead, and
// cancelled when ctx is cancelled (a shutdown) rather than expired.
func memoryContext(ctx context.Context) (context.Context, context.CancelFunc) {
	mctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), memoryTimeout)
	stop := context.AfterFunc(ctx, func() {
		if errors.Is(ctx.Err(), context.Canceled) {
			cancel()
		}
	})
	return mctx, func() { stop(); cancel() }
}

// endpointSecrets are ep's secrets besides its header values (which
// newScrubber takes whole): credential-like URL query values, the tool
// check's argument values and the OAuth client secret.
func endpointSecrets(ep model.Endpoint) []string {
	out := append(model.QuerySecrets(ep.URL), toolSecrets(ep.ToolCheck)...)
	if ep.OAuth != nil && ep.OAuth.ClientSecret != "" {
		out = append(out, ep.OAuth.ClientSecret)
	}
	return out
}

// withBearer returns a copy of headers whose Authorization (any spelling)
// is "Bearer tok".
func withBearer(headers map[string]string, tok string) map[string]string {
	hs := make(map[string]string, len(headers)+1)
	for k, v := range headers {
		if !strings.EqualFold(k, "Authorization") {
			hs[k] = v
		}
	}
	hs["Authorization"] = "Bearer " + tok
	return hs
}

// outcome turns the probe's error into a classified one (nil: success).
// Any failure that ended at the probe's deadline is a timeout: a response
// dripped past it fails as a broken read, but what failed was the deadline.
func outcome(ctx context.Context, err error, expired bool, timeout time.Duration) *probeError {
	if err == nil {
		return nil
	}
	var pe *probeError
	if !errors.As(err, &pe) {
		pe = classify(ctx, err)
	}
	if expired && pe.class == ClassNetwork {
		return failf(ClassTimeout, pe.status, "no complete answer within the timeout (%s): %v", timeout, pe)
	}
	return pe
}

// conclude sets the class and error of res. The latency threshold compares
// the probe's total: every phase, including a fallback between eras and the
// DELETE that ends the session, since that is what a client connecting
// afresh waits for too.
func (p *Prober) conclude(res *msg.ProbeResult, ep model.Endpoint, r *run, pe *probeError, total time.Duration, secrets scrubber) {
	switch {
	case pe != nil:
		res.Class = pe.class
		res.Error = pe.render(secrets)
		if pe.status != 0 {
			res.HTTPStatus = pe.status
		}
	case r.degraded != nil:
		res.Class = ClassDegraded
		res.Error = r.degraded.render(secrets)
	default:
		res.Class = ClassOK
		threshold := ep.LatencyThreshold
		if threshold == 0 {
			threshold = p.opts.DefaultLatencyThreshold
		}
		if threshold > 0 && total > threshold {
			res.Class = ClassDegraded
			res.Error = fmt.Sprintf("probe took %s, over the latency threshold %s", total.Round(time.Millisecond), threshold)
		}
	}
}

// certEvent warns of a certificate near (or past) its expiry.
func (p *Prober) certEvent(res *msg.ProbeResult) *msg.Event {
	if res.CertExpiry == nil || res.CertExpiry.Sub(p.clock.Now()) >= p.opts.CertWarning {
		return nil
	}
	left := res.CertExpiry.Sub(p.clock.Now())
	m := fmt.Sprintf("TLS certificate expires %s (in %s)", res.CertExpiry.Format(time.RFC3339), left.Round(time.Minute))
	if left <= 0 {
		m = fmt.Sprintf("TLS certificate expired %s", res.CertExpiry.Format(time.RFC3339))
	}
	return &msg.Event{Kind: EventCertExpiring, Severity: "warning", Message: m}
}

// timeoutOf is the probe timeout of ep: its own, else the prober's default,
// never over MaxTimeout.
func (p *Prober) timeoutOf(ep model.Endpoint) time.Duration {
	timeout := ep.Timeout
	if timeout <= 0 {
		timeout = p.opts.DefaultTimeout
	}
	return min(timeout, MaxTimeout)
}
