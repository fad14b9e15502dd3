// Package daemon assembles mcpmon's roles into a running process: it opens the
// queue and store backends the options name, builds the scheduler, API,
// prober, aggregator and alerter a role needs, runs their loops, and serves
// the REST API with /metrics, /healthz and /readyz on one listener.
//
// `mcpmon run` starts every role in one process on the embedded queue and
// store; `mcpmon api|prober|aggregator|alerter` start one role on SQS and
// Redis so each can run as any number of replicas. Shutdown is ordered: stop
// taking work (loops return on ctx), flush publishers, then close queues and
// the store, so nothing acknowledged is lost.
package daemon

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/mcpmon/mcpmon/aggregator"
	"github.com/mcpmon/mcpmon/alerter"
	"github.com/mcpmon/mcpmon/alerter/sinks"
	"github.com/mcpmon/mcpmon/pkg/api"
	"github.com/mcpmon/mcpmon/pkg/clock"
	"github.com/mcpmon/mcpmon/pkg/config"
	"github.com/mcpmon/mcpmon/pkg/hostcheck"
	"github.com/mcpmon/mcpmon/pkg/mcpapi"
	"github.com/mcpmon/mcpmon/pkg/metrics"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/msg"
	"github.com/mcpmon/mcpmon/pkg/netguard"
	"github.com/mcpmon/mcpmon/pkg/queue"
	"github.com/mcpmon/mcpmon/pkg/seal"
	publicstatus "github.com/mcpmon/mcpmon/pkg/status"
	"github.com/mcpmon/mcpmon/pkg/store"
	"github.com/mcpmon/mcpmon/pkg/subscribe"
	"github.com/mcpmon/mcpmon/pkg/tracing"
	"github.com/mcpmon/mcpmon/prober"
)

// Version is stamped at build time with -ldflags "-X ...daemon.Version=v1.2.3".
var Version = "dev"

// Role names a process's job.
type Role string

const (
	RoleAll        Role = "run"
	RoleAPI        Role = "api"
	RoleProber     Role = "prober"
	RoleAggregator Role = "aggregator"
	RoleAlerter    Role = "alerter"
)

func (r Role) has(x Role) bool { return r == RoleAll || r == x }

// usageError marks errors in the command line or configuration (exit 2).
type usageError struct{ error }

func (e usageError) Unwrap() error { return e.error }

// IsUsage reports whether err is a command-line or configuration error.
func IsUsage(err error) bool {
	var u usageError
	return errors.As(err, &u)
}

// Main parses args and env for role, then runs it until ctx is done.
func Main(ctx context.Context, role Role, args []string, env func(string) string, stdout, stderr io.Writer) error {
	o, err := config.Parse("mcpmon "+string(role), args, env, stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return usageError{err}
	}
	if role != RoleAll && o.Queue == config.QueueEmbedded {
		return usageError{fmt.Errorf("the embedded queue lives inside one process: run `mcpmon run` for everything in one process, or give %s --queue sqs (and --store redis) to run it as its own process", role)}
	}
	if role != RoleAll && role != RoleAPI && o.Store == config.StoreEmbedded {
		return usageError{fmt.Errorf("the embedded store lives inside one process: give %s --store redis --redis-url URL", role)}
	}
	logger := NewLogger(o, stderr)
	d, err := Start(ctx, role, o, Deps{Logger: logger, Stdout: stdout})
	if err != nil {
		return err
	}
	return d.Wait()
}

// NewLogger builds the process logger from the options.
func NewLogger(o config.Options, w io.Writer) *slog.Logger {
	var lvl slog.Level
	_ = lvl.UnmarshalText([]byte(o.LogLevel))
	ho := &slog.HandlerOptions{Level: lvl}
	if o.LogJSON {
		return slog.New(slog.NewJSONHandler(w, ho))
	}
	return slog.New(slog.NewTextHandler(w, ho))
}

// Deps are what a process takes from outside besides options.
type Deps struct {
	Logger *slog.Logger
	Clock  clock.Clock
	// Stdout receives the start-up banner (where the API listens).
	Stdout io.Writer
	// Registry, when set, is used instead of a fresh one (tests).
	Registry *prometheus.Registry
	// wrapHandler, when set, wraps each stage's message handler: the
	// dead-letter tests make a consumer fail the real way, through the
	// consumer, redelivery and redrive, and then "fix" it.
	wrapHandler func(queueName string, h queue.Handler) queue.Handler
	// proberOptions, when set, adjusts each in-process prober's options
	// by region: the region tests make one region's probes fail the real
	// way, at the target.
	proberOptions func(region string, o *prober.Options)
	// hostResolver, when set, answers the API's status page host
	// verification lookups (a DNS server on loopback in tests).
	hostResolver hostcheck.Resolver
}

// Daemon is a running mcpmon process.
type Daemon struct {
	role Role
	opts config.Options
	log  *slog.Logger
	clk  clock.Clock
	reg  *prometheus.Registry
	st   store.Store
	// file counts the embedded store's commits (nil on Redis).
	file interface {
		Counts() (commits, pages uint64)
	}
	// kr seals secrets at rest: endpoint secrets (openStore) and status
	// page subscribers (subscriptions.go). Loaded once, before any backend.
	kr *seal.Keyring
	qs *queues
	// subs is the status page subscription service (subscriptions.go),
	// shared by the API and the alerter of one process.
	subs *subscribe.Service
	ln   net.Listener
	srv  *http.Server
	// metricsLn and metricsSrv serve /metrics apart from the API
	// (--metrics-listen); nil without it.
	metricsLn  net.Listener
	metricsSrv *http.Server
	tls        *tls.Config // nil: plain HTTP
	cancel     context.CancelFunc
	// drain is the context message handlers run on: it outlives the process
	// context by DrainTimeout so a handler that has already started (a probe,
	// an alert in flight) finishes and is acknowledged instead of being cut
	// off mid-effect, which would turn a clean shutdown into a redelivery.
	drain       context.Context
	drainCancel context.CancelFunc

	wg         sync.WaitGroup
	errMu      sync.Mutex
	err        error
	pubs       []*queue.Publisher
	stopped    chan struct{}
	prune      metricsPruner // per-endpoint series of deleted endpoints (prune.go)
	keys       apiKeys       // API keys (apikeys.go)
	delay      *metrics.PipelineDelay
	wrap       func(queueName string, h queue.Handler) queue.Handler // Deps.wrapHandler
	proberOpts func(region string, o *prober.Options)                // Deps.proberOptions
	hostDNS    hostcheck.Resolver                                    // Deps.hostResolver
	sinkOnce   sync.Once                                             // sinks.go
	sinkSet    sinkSet
	sinkErr    error
	replica    struct { // replicaID
		once sync.Once
		id   string
	}
	// pageHosts serves status pages at the root of their custom hosts
	// (pkg/status); nil without the API role.
	pageHosts func(http.Handler) http.Handler
	// tracing exports the probers' spans (tracing.go); nil before the
	// probers start and in roles without them.
	tracing *tracing.Tracing
}

// Start opens the backends, builds the role's components and starts them.
// It returns once the HTTP listener is bound; Wait blocks until ctx is done
// and shutdown has finished.
func Start(ctx context.Context, role Role, o config.Options, deps Deps) (_ *Daemon, err error) {
	if deps.Logger == nil {
		deps.Logger = slog.New(slog.DiscardHandler)
	}
	if deps.Clock == nil {
		deps.Clock = clock.Real{}
	}
	if deps.Stdout == nil {
		deps.Stdout = io.Discard
	}
	reg := deps.Registry
	if reg == nil {
		reg = metrics.NewRegistry(Version)
	}
	ctx, cancel := context.WithCancel(ctx)
	d := &Daemon{role: role, opts: o, log: deps.Logger, clk: deps.Clock, reg: reg, cancel: cancel, stopped: make(chan struct{}), wrap: deps.wrapHandler, proberOpts: deps.proberOptions, hostDNS: deps.hostResolver}
	d.drain, d.drainCancel = context.WithCancel(context.WithoutCancel(ctx))
	defer func() {
		if err != nil {
			cancel()
			d.drainCancel()
			d.wg.Wait() // loops started before the failure stop before their backends close
			d.stopTracing()
			d.closeBackends()
			for _, ln := range []net.Listener{d.ln, d.metricsLn} {
				if ln != nil {
					_ = ln.Close()
				}
			}
		}
	}()

	if err := checkRegions(role, o); err != nil {
		return nil, err
	}
	if d.tls, err = loadTLS(o); err != nil {
		return nil, err
	}
	if d.kr, err = keyring(o, d.log); err != nil {
		return nil, err
	}
	if d.st, err = openStore(ctx, o, d.kr, d.clk, d.log); err != nil {
		return nil, err
	}
	if fc := fileCollector(d.st); fc != nil { // backends.go
		reg.MustRegister(fc)
		d.file = fc
	}
	if lc := ledgerCollector(d.st); lc != nil { // backends_remote.go
		reg.MustRegister(lc)
	}
	qm := queue.NewMetrics(reg)
	if d.qs, err = openQueues(ctx, o, sharedFile(o, d.st), d.clk, d.log, reg, QueuesIn(role, o.Regions, o.Region)); err != nil {
		return nil, err
	}
	d.qs.keepReasonsIn(d.st, d.clk)                    // backends_remote.go
	if wf := newWriteFailures(d.st, d.qs); wf != nil { // backends.go
		reg.MustRegister(wf)
	}
	if c, ok := storeUnder[createdStore](d.st); ok { // backends.go
		reg.MustRegister(storeCreated{c})
	}
	for _, w := range o.Warnings {
		d.log.Warn(w)
	}
	// Bound before the API is built: under --auth none its default Host
	// allow-list carries the port actually bound.
	if d.ln, err = net.Listen("tcp", o.Listen); err != nil {
		return nil, fmt.Errorf("listen on %s (is another process using it? pick another with --listen): %w", o.Listen, err)
	}
	if o.MetricsListen != "" {
		if d.metricsLn, err = net.Listen("tcp", o.MetricsListen); err != nil {
			return nil, fmt.Errorf("listen on %s (is another process using it? pick another with --metrics-listen): %w", o.MetricsListen, err)
		}
	}
	mux := http.NewServeMux()
	if err := d.build(ctx, mux, qm); err != nil {
		return nil, err
	}
	mux.Handle("/", metrics.OpsHandlerWith(reg, d.ready, metrics.OpsOptions{NoMetrics: d.metricsLn != nil, Token: o.MetricsToken.Reveal()}))

	var root http.Handler = mux
	if d.pageHosts != nil {
		root = d.pageHosts(root)
	}
	d.srv = d.serve(d.ln, root, "http server")
	if d.metricsLn != nil {
		d.metricsSrv = d.serve(d.metricsLn, metrics.OpsHandlerWith(reg, d.ready, metrics.OpsOptions{Token: o.MetricsToken.Reveal()}), "metrics server")
	}
	if d.role.has(RoleAPI) && d.tls == nil && !isLoopback(d.ln.Addr()) {
		d.log.Warn("the REST API listens on a non-loopback address without TLS: requests, and any credentials in them, cross the network in clear text; serve HTTPS with --tls-cert/--tls-key, put it behind a TLS proxy, or listen on 127.0.0.1", "addr", d.Addr())
	}
	d.banner(deps.Stdout)
	d.authBanner(deps.Stdout) // apikeys.go
	go d.shutdownOnDone(ctx)
	return d, nil
}

// serve starts an HTTP server on ln; a serve error stops the process.
func (d *Daemon) serve(ln net.Listener, h http.Handler, name string) *http.Server {
	srv := newHTTPServer(h, d.opts, d.tls, d.log)
	go func() {
		serve := srv.Serve
		if d.tls != nil {
			serve = func(ln net.Listener) error { return srv.ServeTLS(ln, "", "") }
		}
		if err := serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			d.fail(fmt.Errorf("%s: %w", name, err))
		}
	}()
	return srv
}

// apiHosts are the Host values the API answers: --api-hosts, or under
// --auth none the loopback names on the bound port. An open API on
// loopback is reachable from any web page the operator visits by DNS
// rebinding (the page's own name resolving to 127.0.0.1); the page's
// requests carry that name as Host, so pinning the loopback names refuses
// them.
func apiHosts(o config.Options, bound net.Addr) []string {
	if len(o.APIHosts) > 0 || o.Auth != config.AuthNone {
		return o.APIHosts
	}
	_, port, err := net.SplitHostPort(bound.String())
	if err != nil {
		return []string{"localhost", "127.0.0.1", "[::1]"}
	}
	return []string{net.JoinHostPort("localhost", port), net.JoinHostPort("127.0.0.1", port), net.JoinHostPort("::1", port)}
}

// newHTTPServer is a listener's server, with limits so that no client
// holds a connection or memory for long: a slow or dripped request is cut
// off by the read timeouts, a slow reader of the response by the write
// timeout, a silent keep-alive connection by the idle timeout, and a
// bloated header block by MaxHeaderBytes (431). What net/http logs itself
// (TLS handshakes of scanners, dropped connections) is debug: any client
// can cause it.
func newHTTPServer(h http.Handler, o config.Options, tc *tls.Config, log *slog.Logger) *http.Server {
	orDefault := func(d, def time.Duration) time.Duration {
		if d <= 0 {
			return def
		}
		return d
	}
	read := orDefault(o.HTTPReadTimeout, config.DefaultHTTPReadTimeout)
	return &http.Server{
		Handler:           h,
		TLSConfig:         tc,
		ReadHeaderTimeout: min(config.DefaultReadHeaderTimeout, read),
		ReadTimeout:       read,
		WriteTimeout:      orDefault(o.HTTPWriteTimeout, config.DefaultHTTPWriteTimeout),
		IdleTimeout:       orDefault(o.HTTPIdleTimeout, config.DefaultHTTPIdleTimeout),
		MaxHeaderBytes:    config.MaxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(log.With("component", "http").Handler(), slog.LevelDebug),
	}
}

// loadTLS reads --tls-cert/--tls-key; nil when neither is set.
func loadTLS(o config.Options) (*tls.Config, error) {
	if o.TLSCert == "" && o.TLSKey == "" {
		return nil, nil
	}
	cert, err := tls.LoadX509KeyPair(o.TLSCert, o.TLSKey)
	if err != nil {
		return nil, usageError{fmt.Errorf("--tls-cert/--tls-key: %w", err)}
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil
}

// isLoopback reports whether addr is a loopback address (not the
// unspecified one, which listens on every interface).
func isLoopback(addr net.Addr) bool {
	ta, ok := addr.(*net.TCPAddr)
	return ok && ta.IP.IsLoopback()
}

// Addr is the bound listen address (useful with --listen 127.0.0.1:0).
func (d *Daemon) Addr() string { return d.ln.Addr().String() }

// MetricsAddr is the bound --metrics-listen address, or "" without one.
func (d *Daemon) MetricsAddr() string {
	if d.metricsLn == nil {
		return ""
	}
	return d.metricsLn.Addr().String()
}

// Store exposes the process's store (tests).
func (d *Daemon) Store() store.Store { return d.st }

// Stop cancels the daemon; Wait returns once shutdown has finished.
func (d *Daemon) Stop() { d.cancel() }

// Wait blocks until shutdown has finished and returns the first loop error.
func (d *Daemon) Wait() error {
	<-d.stopped
	d.errMu.Lock()
	defer d.errMu.Unlock()
	return d.err
}

func (d *Daemon) fail(err error) {
	d.errMu.Lock()
	if d.err == nil {
		d.err = err
	}
	d.errMu.Unlock()
	d.log.Error("stopping: a component failed", "err", err)
	d.cancel()
}

// loop runs f until ctx is done; an error other than ctx's stops the process.
func (d *Daemon) loop(ctx context.Context, name string, f func(ctx context.Context) error) {
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		if err := f(ctx); err != nil && ctx.Err() == nil {
			d.fail(fmt.Errorf("%s: %w", name, err))
		}
	}()
}

func (d *Daemon) shutdownOnDone(ctx context.Context) {
	<-ctx.Done()
	d.log.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = d.srv.Shutdown(sctx)
	if d.metricsSrv != nil {
		_ = d.metricsSrv.Shutdown(sctx)
	}
	drainTimer := time.AfterFunc(DrainTimeout, d.drainCancel)
	d.wg.Wait()
	drainTimer.Stop()
	d.drainCancel()
	d.stopTracing()
	d.closeBackends()
	d.log.Info("stopped")
	close(d.stopped)
}

func (d *Daemon) closeBackends() {
	for _, p := range d.pubs {
		if err := p.Close(); err != nil {
			d.log.Warn("flush publisher", "err", err)
		}
	}
	d.pubs = nil
	if d.qs != nil && d.qs.close != nil {
		if err := d.qs.close(); err != nil {
			d.log.Warn("close queues", "err", err)
		}
		d.qs = nil
	}
	if d.st != nil {
		if err := d.st.Close(); err != nil {
			d.log.Warn("close store", "err", err)
		}
		d.st = nil
	}
}

func (d *Daemon) ready(ctx context.Context) error {
	st := d.st
	if st == nil {
		return errors.New("store closed")
	}
	if err := st.Ping(ctx); err != nil {
		return fmt.Errorf("store: %w", err)
	}
	if qs := d.qs; qs != nil && qs.file != nil {
		if err := qs.file.Check(); err != nil {
			return fmt.Errorf("queue: %w", err)
		}
	}
	return nil
}

func (d *Daemon) publisher(name string, qm *queue.Metrics) *queue.Publisher {
	p := queue.NewPublisher(d.qs.get(name), queue.PublisherOptions{Logger: d.log, Metrics: qm})
	d.pubs = append(d.pubs, p)
	return p
}

// remoteReceiveWait is the SQS long-poll wait: long enough that an idle
// consumer costs six receives a minute, short enough that a shutdown which
// lets the last receive finish stays well inside Kubernetes' 30 s grace.
const remoteReceiveWait = 10 * time.Second

// pipelineDelay is the process's one pipeline-delay histogram, shared by the
// aggregator and the alerter of a process that runs both.
func (d *Daemon) pipelineDelay() *metrics.PipelineDelay {
	if d.delay == nil {
		d.delay = metrics.NewPipelineDelay(d.reg)
	}
	return d.delay
}

// DrainTimeout bounds how long shutdown waits for handlers already running.
const DrainTimeout = 15 * time.Second

// stageConcurrency is how many results (aggregator) or verdicts (alerter)
// one process handles at once.
const stageConcurrency = 8

func (d *Daemon) consume(ctx context.Context, name string, h queue.Handler, concurrency int, qm *queue.Metrics) {
	// The consumer stops receiving when ctx ends; a handler it already
	// started runs on the drain context (see Daemon.drain).
	if d.wrap != nil {
		h = d.wrap(name, h)
	}
	drained := func(_ context.Context, m queue.Message) error { return h(d.drain, m) }
	opts := queue.ConsumerOptions{Concurrency: concurrency, Visibility: d.opts.Visibility, FinishReceive: d.qs.remote,
		// A store outage is waited out with the message in flight, so it
		// cannot walk messages to the DLQ unapplied.
		Transient: func(err error) bool { return errors.Is(err, store.ErrUnavailable) }, Failures: d.qs.failures, Clock: d.clk, Logger: d.log, Metrics: qm}
	if d.qs.remote {
		opts.Wait = remoteReceiveWait
	}
	d.loop(ctx, "consume "+name, func(ctx context.Context) error { return queue.Consume(ctx, d.qs.get(name), drained, opts) })
}

// startAggregator starts the aggregator of a process that has the role:
// its results consumer and its tick. It returns the aggregator's result
// handler, which the producers of results in this process (the probers,
// the API's agent results) hand results to on the embedded queue
// (regions.go's resultsPublisher); nil without the role.
func (d *Daemon) startAggregator(ctx context.Context, qm *queue.Metrics) (queue.Handler, error) {
	if !d.role.has(RoleAggregator) {
		return nil, nil
	}
	o, reg := d.opts, d.reg
	rm := aggregator.NewRegionMetrics(reg, o.Regions)
	mem, err := d.aggregatorMembership() // heartbeat.go
	if err != nil {
		return nil, fmt.Errorf("aggregator membership: %w", err)
	}
	var members aggregator.Members
	var memberTTL time.Duration
	if mem != nil {
		members, memberTTL = mem, mem.TTL()
		d.loop(ctx, "aggregator heartbeat", mem.Run)
	}
	live, err := d.liveRegions(rm) // heartbeat.go
	if err != nil {
		return nil, fmt.Errorf("prober heartbeats: %w", err)
	}
	agg, err := aggregator.New(aggregator.Options{
		Store:         d.st,
		Publisher:     d.publisher(msg.QueueVerdicts, qm),
		Window:        o.Window,
		Grace:         o.Grace,
		Regions:       o.Regions,
		Live:          live,
		Agents:        d.agentFleet(), // agents.go
		RegionMetrics: rm,
		Members:       members,
		Replica:       d.replicaID(),
		MemberTTL:     memberTTL,
		Clock:         d.clk,
		Logger:        d.log,
		Metrics:       forgetting(&d.prune, aggregator.NewMetrics(reg, d.pipelineDelay())),
	})
	if err != nil {
		return nil, fmt.Errorf("aggregator: %w", err)
	}
	d.consume(ctx, msg.QueueResults, agg.Handle, stageConcurrency, qm)
	d.loop(ctx, "aggregator", agg.Run)
	return agg.Handle, nil
}

// build wires the role's components onto mux and starts their loops.
func (d *Daemon) build(ctx context.Context, mux *http.ServeMux, qm *queue.Metrics) error {
	o, reg := d.opts, d.reg
	d.loop(ctx, "queue depth", func(ctx context.Context) error {
		qm.WatchDepth(ctx, 15*time.Second, d.log, d.qs.depth...)
		return nil
	})
	ready := newReadyGauge(reg) // readiness.go
	d.loop(ctx, "readiness", func(ctx context.Context) error { return watchReadiness(ctx, d.ready, ready, d.log) })

	// Before the API and the probers: both hand their results to it.
	fold, err := d.startAggregator(ctx, qm)
	if err != nil {
		return err
	}
	if d.role.has(RoleAPI) {
		locs := d.agentLocations()        // agents.go
		sched := d.newScheduler(qm, locs) // regions.go
		// Load the schedule before serving; a store that is not reachable
		// yet is waited for by the sync loop below, not a failed start.
		eps, err := d.st.ListEndpoints(ctx)
		switch {
		case errors.Is(err, store.ErrUnavailable):
			d.log.Warn("store unreachable at start: endpoints are scheduled once it answers", "err", err)
		case err != nil:
			return fmt.Errorf("load endpoints for the scheduler: %w", err)
		default:
			if err := sched.Sync(ctx, eps); err != nil {
				return fmt.Errorf("schedule endpoints: %w", err)
			}
		}
		d.loop(ctx, "scheduler", sched.Run)
		// Changes made through another API replica reach this scheduler
		// through the periodic resync.
		d.loop(ctx, "scheduler sync", func(ctx context.Context) error { return sched.SyncEvery(ctx, d.st, 15*time.Second) })
		allow := o.AllowPrivateTargets
		authn, keys, err := d.setupAPIKeys(ctx) // apikeys.go
		if err != nil {
			return err
		}
		h := api.New(api.Options{
			Authenticator:     authn,
			Keys:              keys,
			Store:             d.st,
			Audit:             d.st,
			Metrics:           api.NewMetrics(reg),
			Scheduler:         sched,
			TargetValidator:   netguard.Guard{AllowPrivate: allow, Allowed: o.TargetNetworks()}.CheckTarget,
			ProtocolValidator: prober.ValidateProtocol,
			SinkValidator:     func(raw json.RawMessage) error { return sinks.ValidateEndpointSinks(raw, allow) },
			SinkRedactor:      sinks.RedactEndpointSinks,
			Regions:           o.Regions,
			Logger:            d.log,
			Clock:             d.clk,
			AllowedHosts:      apiHosts(o, d.ln.Addr()),
			OperatorSinks:     sinkNames(o),
			Quotas: api.Quotas{
				MaxEndpoints: o.MaxEndpointsPerTenant, MaxMaintenance: o.MaxMaintenancePerTenant, MaxStatusPages: o.MaxStatusPagesPerTenant,
				MaxAgents:     o.MaxAgentsPerTenant,
				RatePerSecond: o.RateLimit, Burst: o.RateBurst, MaxInFlight: o.MaxInFlightPerTenant,
			},
			DeadLetters:           d.qs.dead,
			SubscriberSealer:      d.kr,
			MaxSubscribersPerPage: o.MaxSubscribersPerPage,
			AllowHTTPWebhooks:     allow,
			Probes:                sched, // POST /v1/endpoints/{id}/probe: the scheduler's queues, per region
			MCP: func(rest http.Handler) http.Handler { // /mcp: every tool a request to /v1
				return mcpapi.New(rest, mcpapi.Options{Version: Version, Logger: d.log})
			},
			AgentCommands:        locs,
			AgentResults:         d.agentResults(qm, fold), // agents.go
			AgentSecretsOverHTTP: o.AgentSecretsOverHTTP,
			AgentOfflineAfter:    o.AgentOfflineAfter,
			HostResolver:         d.hostResolver(),
			UnverifiedHosts:      !o.StatusPageHostVerification,
		})
		mux.Handle("/v1/", h)
		mux.Handle("/mcp", h) // pkg/mcpapi through the API's key check
		// The rendered API document: api.New serves it outside /v1 (the
		// document lists GET /docs), so it is mounted by name.
		mux.Handle("/docs", h)
		// Public status pages and badges: outside /v1, no key, only the
		// endpoints their owners made public (pkg/status).
		pubCache := publicstatus.NewCache(publicstatus.Options{Store: d.st, Clock: d.clk, Logger: d.log, PublicIndex: o.PublicIndex, Subscribe: o.SubscribeSMTPAddr != "",
			UnverifiedHosts: !o.StatusPageHostVerification})
		pub := publicstatus.Handler(pubCache)
		for _, path := range []string{"/status", "/status/", "/badge/"} {
			mux.Handle(path, pub)
		}
		// A status page's custom host is known only from the store, so it
		// is matched in front of the mux rather than by a mux pattern.
		d.pageHosts = publicstatus.Hosts(pubCache)
		subs, err := d.subscriptions() // subscriptions.go
		if err != nil {
			return err
		}
		if subs != nil {
			h := subs.Handler(pubCache) // the page of /status/{slug}/… from the public pages' index
			for _, path := range subscribe.Routes {
				mux.Handle(path, h)
			}
			// The confirmation mails its subscribes owe, sent after
			// they are answered.
			d.loop(ctx, "subscription confirmations", subs.RunConfirmations)
		}
		// Webhook subscribers exist without SMTP: their orphans are
		// pruned whether or not e-mail subscriptions are on.
		d.loop(ctx, "subscriptions prune", func(ctx context.Context) error {
			return subscribe.RunPrune(ctx, d.st, d.clk, d.log, 10*time.Minute)
		})
		// Served custom hosts are looked up again. Every API replica runs
		// the rounds: a page is written only if unchanged since its
		// lookup, so replicas cost each other at most a second lookup.
		hostChecks := hostcheck.NewMetrics(reg)
		if o.StatusPageHostVerification && o.StatusPageHostRecheckInterval > 0 {
			hc := hostcheck.New(hostcheck.Options{
				Store: d.st, Resolver: d.hostResolver(), NewToken: model.NewHostToken, Clock: d.clk, Logger: d.log, Metrics: hostChecks,
				Policy: model.HostRecheck{Interval: o.StatusPageHostRecheckInterval, Grace: o.StatusPageHostRecheckGrace},
			})
			d.loop(ctx, "status page host re-check", func(ctx context.Context) error { return hc.Run(ctx, hostcheck.DefaultEvery) })
		}
	}
	if d.role.has(RoleProber) {
		if err := d.startProbers(ctx, qm, fold); err != nil { // regions.go: one per region with `run --regions`
			return err
		}
	}
	if d.role.has(RoleAlerter) {
		sinks, err := d.sinks()
		if err != nil {
			return usageError{err}
		}
		subs, err := d.subscriptions() // subscriptions.go
		if err != nil {
			return err
		}
		hooks := d.webhookSubscriptions() // subscriptions.go
		router := subscribe.Router{Webhook: hooks}
		if subs != nil {
			router.Mail = subs
		}
		var notifier alerter.SubscriberNotifier = router
		al, err := alerter.New(alerter.Options{
			Subscribers: notifier,
			Store:       d.st,
			Sinks:       sinks.global,
			SinksFor:    sinks.forEndpoint,
			Clock:       d.clk,
			Logger:      d.log,
			Metrics:     alerter.NewMetrics(reg, d.pipelineDelay()),
			Owner:       o.ReplicaID,
			Lease:       o.ClaimLease,
			GiveUpAfter: o.SinkGiveUpAfter,

			AgentOfflineAfter: o.AgentOfflineAfter,
		})
		if err != nil {
			return fmt.Errorf("alerter: %w", err)
		}
		if notifier != nil {
			d.loop(ctx, "alerter subscribers", func(ctx context.Context) error { return al.RunSubscribers(ctx, 0) })
		}
		d.consume(ctx, msg.QueueVerdicts, al.Handle, stageConcurrency, qm)
		d.loop(ctx, "alerter sweep", al.Run)
		d.loop(ctx, "alerter events", func(ctx context.Context) error { return al.RunEvents(ctx, 0) })
		d.loop(ctx, "alerter agents", func(ctx context.Context) error { return al.RunAgents(ctx, 0) }) // alerter/agents.go
		d.loop(ctx, "alerter migrations", func(ctx context.Context) error { return alerter.RunMigrations(ctx, d.st, d.log, 0) })
	}
	d.loop(ctx, "metrics prune", d.pruneMetrics)
	return nil
}

// hostResolver answers status page host lookups: Deps.hostResolver, else
// the server --status-page-host-resolver names, else the system's.
func (d *Daemon) hostResolver() hostcheck.Resolver {
	switch {
	case d.hostDNS != nil:
		return d.hostDNS
	case d.opts.StatusPageHostResolver != "":
		return hostcheck.ResolverAt(d.opts.StatusPageHostResolver)
	}
	return net.DefaultResolver
}

// banner prints the address the listener actually bound (after port 0 or
// a wildcard host is resolved), then URLs a local client can use.
func (d *Daemon) banner(w io.Writer) {
	addr := d.Addr()
	scheme, proto := "http", "HTTP"
	if d.tls != nil {
		scheme, proto = "https", "HTTPS"
	}
	where := ""
	host := addr
	if ta, ok := d.ln.Addr().(*net.TCPAddr); ok && ta.IP.IsUnspecified() {
		where = ", every interface"
		host = net.JoinHostPort("127.0.0.1", strconv.Itoa(ta.Port))
	}
	metricsAt := host
	if d.metricsLn != nil {
		metricsAt = d.metricsLn.Addr().String()
	}
	if !d.role.has(RoleAPI) {
		fmt.Fprintf(w, "mcpmon %s %s: listening on %s (%s%s): metrics on %s://%s/metrics\n", d.role, Version, addr, proto, where, scheme, metricsAt)
		return
	}
	fmt.Fprintf(w, `mcpmon %s (%s): listening on %s (%s%s)
API on %s://%s/v1  MCP on %s://%s/mcp  metrics on %s://%s/metrics
register an MCP endpoint:
  curl -sS -X POST %s://%s/v1/endpoints -H "Authorization: Bearer $MCPMON_TOKEN" -H 'Content-Type: application/json' \
    -d '{"name":"example","url":"https://mcp.example.com/mcp","schedule":"@every 30s"}'
`, Version, d.role, addr, proto, where, scheme, host, scheme, host, scheme, metricsAt, scheme, host)
}

// Gather scrapes the process's registry (the load harness reads it).
func (d *Daemon) Gather() ([]*dto.MetricFamily, error) { return d.reg.Gather() }

// StoreWrites is the embedded store's file's commits and pages written
// since the daemon started (mcpmon_store_commits_total and
// mcpmon_store_pages_written_total, without gathering the whole
// registry); ok is false on another store.
func (d *Daemon) StoreWrites() (commits, pages uint64, ok bool) {
	if d.file == nil {
		return 0, 0, false
	}
	commits, pages = d.file.Counts()
	return commits, pages, true
}

// sinkNames names the operator's global sinks (--webhook-url, --sinks-file)
// for the API, which shows another tenant's incidents without them. A
// sinks file that does not load is the alerter's error to report; here it
// only names no sink.
func sinkNames(o config.Options) []string {
	cfgs := sinks.FromFlags(o.WebhookURL.Reveal(), o.WebhookSecret.Reveal())
	if o.SinksFile != "" {
		if more, err := sinks.LoadFile(o.SinksFile); err == nil {
			cfgs = append(cfgs, more...)
		}
	}
	names := make([]string, 0, len(cfgs))
	for _, c := range cfgs {
		names = append(names, c.Name)
	}
	return names
}
