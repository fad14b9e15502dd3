// Package config turns command-line flags and MCPMON_* environment variables
// into the Options every mcpmon role runs on. Each flag --foo-bar can also be
// set as MCPMON_FOO_BAR; a flag given on the command line wins over the
// environment. Parse validates everything up front so a bad value stops the
// process with one clear line before anything starts.
package config

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/netip"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/netguard"
	"github.com/mcpmon/mcpmon/pkg/queue"
)

// Backends.
const (
	QueueEmbedded = "embedded"
	QueueSQS      = "sqs"
	StoreEmbedded = "embedded"
	StoreRedis    = "redis"
)

// API authentication (--auth).
const (
	// AuthKeys requires an API key on every /v1 request (pkg/auth).
	AuthKeys = "keys"
	// AuthNone serves /v1 to anyone; refused unless --listen is loopback.
	AuthNone = "none"
)

// Options configure every role. Not every role reads every field.
type Options struct {
	Listen   string
	DataDir  string
	Auth     string // AuthKeys or AuthNone
	LogLevel string
	LogJSON  bool

	Queue          string
	SQSEndpoint    string
	SQSRegion      string
	SQSPrefix      string
	HighThroughput bool

	Store       string
	RedisURL    string
	RedisPrefix string
	// RedisLedgerReplicas: replicas each ledger write waits for (WAIT);
	// 0 does not wait.
	RedisLedgerReplicas int
	LedgerTTL           time.Duration
	// AuditTTL is how long the audit log keeps an entry.
	AuditTTL time.Duration

	Window time.Duration
	Grace  time.Duration
	Region string
	// Regions is the deployment's region set (--regions a,b,c): the
	// scheduler sends each slot to one commands queue per region, each
	// prober consumes its own region's, and the aggregator judges a window
	// against the regions due in it. Empty: one commands queue and no
	// region set, as before regions existed (see regions.go).
	Regions             []string
	AllowPrivateTargets bool
	// AllowTargetNetworks are the private networks probes may reach while
	// the rest stay refused (--allow-target-networks, CIDR or address):
	// netguard.ParseNetworks reads them (TargetNetworks).
	AllowTargetNetworks []string
	ProbeConcurrency    int
	// CanaryURLs are the operator's canary targets (--canary-url, repeated
	// or comma-separated): every prober checks them each CanaryInterval,
	// each check bounded by CanaryTimeout, and is blind when none gives an
	// HTTP answer several rounds in a row (prober/canary.go). Empty: no
	// canaries, and a prober is never blind.
	CanaryURLs     []string
	CanaryInterval time.Duration
	CanaryTimeout  time.Duration
	// PublicIndex serves /status, the one list of every tenant's public
	// endpoints. Off, a multi-tenant deployment tells no visitor which
	// tenants it monitors; per-endpoint pages, JSON, badges and feeds are
	// served either way.
	PublicIndex bool
	// StatusPageHostVerification serves a status page on its custom host
	// only once its tenant proved control of the name by a DNS TXT record
	// (or the host predates verification). Off (single-tenant
	// deployments, tests), every host is served as set.
	StatusPageHostVerification bool
	// StatusPageHostRecheckInterval is how often a served custom host is
	// looked up again (0: never; hosts then stay verified once verified,
	// and grandfathered hosts are served as before); a host whose record
	// is missing on every look for StatusPageHostRecheckGrace goes back
	// to pending (pkg/hostcheck). Only with StatusPageHostVerification.
	StatusPageHostRecheckInterval time.Duration
	StatusPageHostRecheckGrace    time.Duration
	// StatusPageHostResolver is the DNS server (host:port) that status
	// page host lookups ask; empty: the machine's resolver.
	StatusPageHostResolver string

	// WebhookURL and WebhookSecret are the global webhook sink. Each can
	// come from its flag, its MCPMON_* variable or a file
	// (--webhook-url-file, --webhook-secret-file, read by Parse): a value on
	// the command line shows in ps to every user of the host, so Parse
	// warns about it (Warnings).
	WebhookURL        model.SecretURL
	WebhookSecret     model.Secret
	WebhookURLFile    string
	WebhookSecretFile string
	SinksFile         string

	// MetricsListen, when set, is a second listener that serves /metrics
	// (with /healthz and /readyz); the main listener then serves no
	// /metrics, so the API's port can face tenants while the scrape port
	// stays on an internal network.
	MetricsListen string
	// MetricsTokenFile holds the bearer token a scrape of /metrics must
	// send; MetricsToken is its content, read by Parse. Empty: /metrics
	// needs no token.
	MetricsTokenFile string
	MetricsToken     model.Secret

	// BootstrapKey turns on the admin key a first start creates in a store
	// without keys; BootstrapKeyFile, when set, receives it (mode 0600)
	// instead of the banner.
	BootstrapKey     bool
	BootstrapKeyFile string

	// Warnings are what Parse accepted but an operator should change (a
	// secret given as a command-line flag); the daemon logs them at start.
	Warnings []string

	// SecretsKeyFile holds the keys that seal endpoint header values and
	// sinks at rest (pkg/seal: base64 keys, one a line, the first seals).
	// SecretsKey is the same list from MCPMON_SECRETS_KEY, environment
	// only: a key on a command line shows in ps. With neither, the embedded
	// store generates <data-dir>/secrets.key; Redis refuses to start.
	SecretsKeyFile string
	SecretsKey     model.Secret

	// ReplicaID names this process in ledger claims; defaults to host-pid
	// with Redis, EmbeddedReplicaID with the embedded store.
	ReplicaID string
	// ClaimLease is how long an alert claim blocks other replicas; a
	// crashed holder's claim is taken over after it.
	ClaimLease time.Duration
	// SinkGiveUpAfter is how long a sink may keep failing one
	// notification before the alerter gives up on it for that sink.
	SinkGiveUpAfter time.Duration
	// Visibility is the consumers' visibility timeout (default 5s, see
	// queue.DefaultVisibility); handlers still running extend it by
	// heartbeat, so it bounds how long a killed replica's message is held.
	Visibility time.Duration
	// MaxReceiveCount is the stage queues' redrive threshold: a message
	// received this many times without success moves to its dead-letter
	// queue (default queue.DefaultMaxReceiveCount). On SQS it is the
	// queues' RedrivePolicy, set by `mcpmon queues ensure`.
	MaxReceiveCount int

	// HTTP server hardening (the listener every role serves).
	//
	// APIHosts, when set, are the only Host header values the REST API
	// answers (host or host:port), against DNS rebinding. Empty under
	// AuthNone, the daemon pins the loopback names on the bound port.
	APIHosts []string
	// TLSCert and TLSKey (both or neither) are PEM files: the listener
	// serves HTTPS with them.
	TLSCert, TLSKey string
	// HTTPReadTimeout bounds reading one request, headers and body, so a
	// client that drips a body is cut off; headers alone get at most
	// DefaultReadHeaderTimeout. HTTPWriteTimeout bounds handling and
	// writing the response; HTTPIdleTimeout closes a keep-alive connection
	// with no next request.
	HTTPReadTimeout, HTTPWriteTimeout, HTTPIdleTimeout time.Duration

	// Tenant quotas of the REST API (0: no limit). MaxEndpointsPerTenant
	// holds across API replicas (the store counts in the create's own
	// transaction); MaxMaintenancePerTenant and the rate limit are kept
	// per replica.
	MaxEndpointsPerTenant   int
	MaxMaintenancePerTenant int
	// MaxStatusPagesPerTenant is counted like MaxMaintenancePerTenant.
	MaxStatusPagesPerTenant int
	// MaxAgentsPerTenant bounds a tenant's live agent keys (/v1/agents).
	MaxAgentsPerTenant int
	// AgentSecretsOverHTTP sends agents the commands of endpoints that
	// carry secrets over plain HTTP too (tests on loopback); otherwise
	// only over TLS.
	AgentSecretsOverHTTP bool
	// AgentOfflineAfter is how long an agent may go without a poll before
	// it counts as offline: GET /v1/agents, the agent notices to its
	// tenant, and its location left out of the due regions.
	AgentOfflineAfter time.Duration
	// RateLimit is each tenant's requests per second on /v1, RateBurst how
	// many it may send at once; past them the API answers 429.
	RateLimit float64
	RateBurst int
	// MaxInFlightPerTenant is how many /v1 requests a tenant may have in
	// progress on one API replica at once; past it the API answers 429.
	MaxInFlightPerTenant int

	// Status page e-mail subscriptions (pkg/subscribe), sent through their
	// own SMTP relay. SubscribeSMTPAddr empty: subscriptions are off and
	// their routes are 404. SubscribeBaseURL is the public URL the links
	// in the mails start with. SubscribeSMTPPassword is read from
	// SubscribeSMTPPasswordFile.
	SubscribeSMTPAddr, SubscribeSMTPFrom, SubscribeSMTPUsername string
	SubscribeSMTPPasswordFile                                   string
	SubscribeSMTPPassword                                       model.Secret
	SubscribeSMTPTLS, SubscribeSMTPCAFile                       string
	SubscribeBaseURL                                            string
	// MaxSubscribersPerPage caps one page's subscribers, pending and
	// confirmed, counted by the store in the write (0: the default).
	MaxSubscribersPerPage int

	// OTLPEndpoint is the base URL of an OTLP receiver (--otlp-endpoint):
	// set, every probe is exported as a trace (pkg/tracing, which also
	// reads the standard OTEL_* variables and checks the value at start).
	OTLPEndpoint string
}

// Tenant quota defaults: the flags' (pkg/api's Quotas take the values
// the flags give, zero for none).
const (
	DefaultMaxEndpointsPerTenant   = 1000
	DefaultMaxMaintenancePerTenant = 100
	DefaultMaxStatusPagesPerTenant = 20
	DefaultMaxAgentsPerTenant      = 50
	DefaultRateLimit               = 20.0
	DefaultRateBurst               = 40
	DefaultMaxInFlightPerTenant    = 16
)

// The audit log's retention (--audit-ttl): 90 days by default (the
// stores' store.DefaultAuditTTL), at most two years.
const (
	DefaultAuditTTL = 90 * 24 * time.Hour
	MaxAuditTTL     = 2 * 365 * 24 * time.Hour
)

// HTTP server defaults. A request body is at most 1 MiB (the API's cap),
// which takes well under 30 s on any link an operator would use.
const (
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultHTTPReadTimeout   = 30 * time.Second
	DefaultHTTPWriteTimeout  = 60 * time.Second
	DefaultHTTPIdleTimeout   = 120 * time.Second
	// MaxHeaderBytes caps a request's header block (431 beyond it).
	MaxHeaderBytes = 64 << 10
)

// Defaults returns the embedded, single-process defaults of `make run`.
func Defaults() Options {
	return Options{
		Listen:           "127.0.0.1:8080",
		Auth:             AuthKeys,
		DataDir:          "data",
		LogLevel:         "info",
		Queue:            QueueEmbedded,
		SQSPrefix:        "mcpmon-",
		Store:            StoreEmbedded,
		RedisPrefix:      "mcpmon:",
		LedgerTTL:        7 * 24 * time.Hour,
		AuditTTL:         DefaultAuditTTL,
		Window:           time.Minute,
		Grace:            5 * time.Second,
		Region:           "local",
		ProbeConcurrency: 16,
		CanaryInterval:   30 * time.Second,
		CanaryTimeout:    5 * time.Second,
		ClaimLease:       2 * time.Minute,
		SinkGiveUpAfter:  24 * time.Hour,
		Visibility:       queue.DefaultVisibility,
		MaxReceiveCount:  queue.DefaultMaxReceiveCount,
		HTTPReadTimeout:  DefaultHTTPReadTimeout,
		HTTPWriteTimeout: DefaultHTTPWriteTimeout,
		HTTPIdleTimeout:  DefaultHTTPIdleTimeout,

		MaxEndpointsPerTenant:         DefaultMaxEndpointsPerTenant,
		MaxMaintenancePerTenant:       DefaultMaxMaintenancePerTenant,
		MaxStatusPagesPerTenant:       DefaultMaxStatusPagesPerTenant,
		MaxAgentsPerTenant:            DefaultMaxAgentsPerTenant,
		AgentOfflineAfter:             model.DefaultAgentOfflineAfter,
		RateLimit:                     DefaultRateLimit,
		RateBurst:                     DefaultRateBurst,
		MaxInFlightPerTenant:          DefaultMaxInFlightPerTenant,
		BootstrapKey:                  true,
		StatusPageHostVerification:    true,
		StatusPageHostRecheckInterval: model.DefaultHostRecheckInterval,
		StatusPageHostRecheckGrace:    model.DefaultHostRecheckGrace,
		MaxSubscribersPerPage:         model.DefaultMaxSubscribersPerPage,
		SubscribeSMTPTLS:              "starttls",
	}
}

// Register binds every option to fs with the MCPMON_* environment as defaults.
func (o *Options) Register(fs *flag.FlagSet) {
	str := func(p *string, name, usage string) { fs.StringVar(p, name, *p, usage+envHint(name)) }
	dur := func(p *time.Duration, name, usage string) { fs.DurationVar(p, name, *p, usage+envHint(name)) }
	boolean := func(p *bool, name, usage string) { fs.BoolVar(p, name, *p, usage+envHint(name)) }
	str(&o.Listen, "listen", "address for the REST API, /metrics, /healthz and /readyz")
	str(&o.DataDir, "data-dir", "directory for the embedded queue and store")
	str(&o.Auth, "auth", "REST API authentication: keys (an API key on every /v1 request) or none (only with a loopback --listen)")
	str(&o.LogLevel, "log-level", "debug, info, warn or error")
	boolean(&o.LogJSON, "log-json", "log JSON lines instead of text")
	str(&o.Queue, "queue", "queue backend: embedded or sqs")
	str(&o.SQSEndpoint, "sqs-endpoint", "SQS endpoint override (e.g. an emulator); empty uses AWS")
	str(&o.SQSRegion, "sqs-region", "AWS region for SQS; empty uses the AWS config chain")
	str(&o.SQSPrefix, "sqs-prefix", "prefix of the SQS queue names")
	boolean(&o.HighThroughput, "sqs-high-throughput", "create queues in high-throughput FIFO mode (dedup scoped to the message group)")
	str(&o.Store, "store", "store backend: embedded or redis")
	str(&o.RedisURL, "redis-url", "Redis URL: redis://, rediss://, redis+sentinel://h1,h2/0?master_name=M or redis+cluster://h1,h2")
	str(&o.RedisPrefix, "redis-prefix", "prefix of every Redis key")
	fs.IntVar(&o.RedisLedgerReplicas, "redis-ledger-replicas", o.RedisLedgerReplicas, "replicas of its primary each alert-ledger write waits for (WAIT, up to 1s), so a failover cannot lose a mark and send an alert twice; set to the replicas each primary has; 0 does not wait"+envHint("redis-ledger-replicas"))
	dur(&o.LedgerTTL, "ledger-ttl", "how long the idempotency ledger remembers a delivered alert")
	dur(&o.AuditTTL, "audit-ttl", "how long the audit log (GET /v1/audit) keeps an entry (1h..2y)")
	dur(&o.Window, "window", "verdict window (e.g. 1m; 2s for demos and tests)")
	dur(&o.Grace, "grace", "how long after a window closes late results are still folded in")
	str(&o.Region, "region", "region label this prober puts on its results (with --regions: one of them, and the prober consumes that region's commands queue)")
	fs.Var((*listValue)(&o.Regions), "regions", "comma-separated region set: one commands queue per region (<prefix>commands-<region>.fifo); mcpmon run starts one prober per region; empty: one commands queue"+envHint("regions"))
	boolean(&o.AllowPrivateTargets, "allow-private-targets", "allow probing loopback, private and link-local addresses (tests, private deployments)")
	fs.Var((*listValue)(&o.AllowTargetNetworks), "allow-target-networks", "comma-separated networks (CIDR, or one address) probes may reach although private, e.g. 10.20.0.0/16; every other private, loopback and link-local address stays refused"+envHint("allow-target-networks"))
	boolean(&o.PublicIndex, "public-index", "serve /status, the list of every public endpoint of every tenant (off: only per-endpoint pages, JSON, badges and feeds)")
	boolean(&o.StatusPageHostVerification, "status-page-host-verification", "serve a status page on its custom host only once its tenant proves control of the name with a DNS TXT record (off: every host as set, for single-tenant deployments)")
	dur(&o.StatusPageHostRecheckInterval, "status-page-host-recheck-interval", "how often a status page's verified or grandfathered custom host is looked up again (hourly while its record is missing); 0 never, so a host once verified stays verified")
	dur(&o.StatusPageHostRecheckGrace, "status-page-host-recheck-grace", "how long a re-checked host's TXT record may be missing on every look before the host goes back to pending and is no longer served (a host no look has found since re-checks exist, grandfathered or verified before: 14 days at least, from its first re-check)")
	str(&o.StatusPageHostResolver, "status-page-host-resolver", "DNS server (host:port, e.g. 1.1.1.1:53) that status page host lookups ask (verify-host and the re-check); empty: the machine's resolver")
	fs.IntVar(&o.ProbeConcurrency, "probe-concurrency", o.ProbeConcurrency, "probes run in parallel per prober"+envHint("probe-concurrency"))
	fs.Var(&repeatValue{list: &o.CanaryURLs}, "canary-url", "canary target every prober checks to tell its own network failing from the endpoints' (repeat, or comma-separate; two or more, outside your infrastructure and the monitored servers' providers)"+envHint("canary-url"))
	dur(&o.CanaryInterval, "canary-interval", "how often each prober checks its canaries (more often while they fail)")
	dur(&o.CanaryTimeout, "canary-timeout", "how long one canary round may take; a canary that gave no HTTP answer by then failed")
	str((*string)(&o.WebhookURL), "webhook-url", "send alerts to this webhook (secret: never logged; a command line shows in ps, prefer --webhook-url-file or the environment)")
	str((*string)(&o.WebhookSecret), "webhook-secret", "HMAC-SHA256 secret to sign webhook alerts (prefer --webhook-secret-file or the environment)")
	str(&o.WebhookURLFile, "webhook-url-file", "file holding the --webhook-url value (kept out of ps)")
	str(&o.WebhookSecretFile, "webhook-secret-file", "file holding the --webhook-secret value (kept out of ps)")
	str(&o.MetricsListen, "metrics-listen", "address of a separate listener for /metrics, /healthz and /readyz; when set, the main listener serves no /metrics")
	str(&o.MetricsTokenFile, "metrics-token-file", "file holding a bearer token every /metrics scrape must send (Authorization: Bearer <token>)")
	boolean(&o.BootstrapKey, "bootstrap-key", "create an admin API key on the first start of a store without keys")
	str(&o.BootstrapKeyFile, "bootstrap-key-file", "write the first start's admin API key to this file (mode 0600) instead of printing it")
	str(&o.SinksFile, "sinks-file", "JSON file of alert sinks (webhook, slack, pagerduty, opsgenie, email)")
	dur(&o.ClaimLease, "claim-lease", "how long an alert claim blocks other alerter replicas before a crashed holder's claim is taken over")
	dur(&o.SinkGiveUpAfter, "sink-give-up-after", "how long a sink may keep failing one notification (retried with backoff) before it is given up for that sink and recorded as gave_up")
	dur(&o.Visibility, "visibility-timeout", "consumers' visibility timeout: how soon a killed replica's message returns; running handlers extend it by heartbeat")
	str(&o.SecretsKeyFile, "secrets-key-file", "file of base64 keys sealing endpoint secrets at rest, the first current (default <data-dir>/secrets.key with the embedded store; MCPMON_SECRETS_KEY holds keys inline)")
	str(&o.ReplicaID, "replica-id", "identity of this replica in ledger claims (default host-pid; \"embedded\" with the embedded store)")
	fs.Var((*listValue)(&o.APIHosts), "api-hosts", "comma-separated Host header values the REST API answers (host or host:port; default any, with --auth none the loopback names on the bound port), against DNS rebinding"+envHint("api-hosts"))
	str(&o.TLSCert, "tls-cert", "PEM certificate (chain) file: serve HTTPS (with --tls-key)")
	str(&o.TLSKey, "tls-key", "PEM private key file for --tls-cert")
	dur(&o.HTTPReadTimeout, "http-read-timeout", "longest time to read one request, headers and body")
	dur(&o.HTTPWriteTimeout, "http-write-timeout", "longest time to handle a request and write its response")
	dur(&o.HTTPIdleTimeout, "http-idle-timeout", "how long an idle keep-alive connection stays open")
	num := func(p *int, name, usage string) { fs.IntVar(p, name, *p, usage+envHint(name)) }
	num(&o.MaxReceiveCount, "max-receive-count", "receives after which a failing message moves to its dead-letter queue (1..1000; on SQS set by mcpmon queues ensure)")
	num(&o.MaxEndpointsPerTenant, "max-endpoints-per-tenant", "endpoints one tenant may register (0: no limit)")
	num(&o.MaxMaintenancePerTenant, "max-maintenance-per-tenant", "maintenance windows one tenant may have (0: no limit)")
	num(&o.MaxStatusPagesPerTenant, "max-status-pages-per-tenant", "status pages one tenant may have (0: no limit)")
	num(&o.MaxAgentsPerTenant, "max-agents-per-tenant", "live agent keys one tenant may have (mcpmon agents create; 0: no limit)")
	dur(&o.AgentOfflineAfter, "agent-offline-after", "how long an agent may go without a poll before it counts as offline: its tenant is told once, and its location's windows stop counting (1m..1h)")
	boolean(&o.AgentSecretsOverHTTP, "agent-secrets-over-http", "send agents the commands of endpoints with secrets over plain HTTP too (tests on loopback; otherwise only over TLS)")
	fs.Float64Var(&o.RateLimit, "rate-limit", o.RateLimit, "REST API requests per second per tenant, answered 429 beyond it (0: no limit)"+envHint("rate-limit"))
	num(&o.RateBurst, "rate-burst", "REST API requests a tenant may send at once above --rate-limit")
	num(&o.MaxInFlightPerTenant, "max-in-flight-per-tenant", "REST API requests one tenant may have in progress at once on this replica, answered 429 beyond it (0: no limit)")
	str(&o.SubscribeSMTPAddr, "subscribe-smtp-addr", "host:port of the SMTP relay that mails status page subscribers (empty: e-mail subscriptions are off)")
	str(&o.SubscribeSMTPFrom, "subscribe-smtp-from", "From address of the mails to status page subscribers, e.g. \"Status <status@example.com>\"")
	str(&o.SubscribeSMTPUsername, "subscribe-smtp-username", "SMTP user of --subscribe-smtp-addr (AUTH PLAIN, over TLS only)")
	str(&o.SubscribeSMTPPasswordFile, "subscribe-smtp-password-file", "file holding the SMTP password of --subscribe-smtp-username")
	str(&o.SubscribeSMTPTLS, "subscribe-smtp-tls", "TLS to --subscribe-smtp-addr: starttls, require-starttls, tls or none")
	str(&o.SubscribeSMTPCAFile, "subscribe-smtp-ca-file", "PEM CA certificates that verify --subscribe-smtp-addr (default: the system roots)")
	str(&o.SubscribeBaseURL, "subscribe-base-url", "public URL of this deployment's status pages, which the links in subscriber mails start with (e.g. https://status.example.com)")
	num(&o.MaxSubscribersPerPage, "max-subscribers-per-page", "subscribers (pending and confirmed) one status page may have; past it a subscribe is 409")
	str(&o.OTLPEndpoint, "otlp-endpoint", "base URL of an OTLP receiver (e.g. http://collector:4318; with OTEL_EXPORTER_OTLP_PROTOCOL=grpc, :4317): every probe is exported as a trace; empty: OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT, else no tracing")
}

// listValue is a comma-separated flag; each Set replaces the list, so a
// command-line flag overrides the environment.
type listValue []string

func (l *listValue) String() string { return strings.Join(*l, ",") }

func (l *listValue) Set(s string) error {
	*l = nil
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			*l = append(*l, v)
		}
	}
	return nil
}

// repeatValue is a flag that may be repeated, each value comma-separated
// too. The environment sets it first; the first value on the command line
// then replaces the environment's (Parse marks it fresh in between).
type repeatValue struct {
	list  *[]string
	fresh bool
}

func (r *repeatValue) String() string {
	if r.list == nil {
		return ""
	}
	return strings.Join(*r.list, ",")
}

func (r *repeatValue) Set(s string) error {
	if r.fresh {
		*r.list, r.fresh = nil, false
	}
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			*r.list = append(*r.list, v)
		}
	}
	return nil
}

func envHint(flagName string) string { return " (env " + EnvName(flagName) + ")" }

// wantOf says what a flag's value must look like, for the errors of the
// standard flag types, whose Set says only "parse error".
func wantOf(f *flag.Flag) string {
	if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
		return "; want true or false"
	}
	switch kind, _ := flag.UnquoteUsage(f); kind {
	case "duration":
		return "; want a Go duration such as 30s or 1m"
	case "int", "uint", "int64", "uint64":
		return "; want a whole number"
	case "float":
		return "; want a number"
	}
	return ""
}

// EnvName maps a flag name to its environment variable.
func EnvName(flagName string) string {
	return "MCPMON_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// Parse reads args over the environment and validates the result. Errors are
// one line, naming the flag and what to do.
func Parse(name string, args []string, env func(string) string, stderr io.Writer) (Options, error) {
	o := Defaults()
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	// Errors are one line (the caller prints it); only --help prints usage.
	fs.SetOutput(io.Discard)
	o.Register(fs)
	var envErr error
	fs.VisitAll(func(f *flag.Flag) {
		if v := env(EnvName(f.Name)); v != "" && envErr == nil {
			if err := f.Value.Set(v); err != nil {
				envErr = fmt.Errorf("%s=%q: %v%s", EnvName(f.Name), v, err, wantOf(f))
			}
		}
	})
	if envErr != nil {
		return o, envErr
	}
	fs.VisitAll(func(f *flag.Flag) {
		if r, ok := f.Value.(*repeatValue); ok {
			r.fresh = true
		}
	})
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintf(stderr, "usage of %s (every flag can also be set as MCPMON_<FLAG>):\n", name)
			fs.SetOutput(stderr)
			fs.PrintDefaults()
			return o, err
		}
		return o, fmt.Errorf("%v (see --help)", err)
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected argument %q (flags go before nothing else; see --help)", fs.Arg(0))
	}
	if o.ReplicaID == "" {
		o.ReplicaID = defaultReplicaID(o.Store)
	}
	o.SecretsKey = model.Secret(env(EnvSecretsKey))
	fs.Visit(func(f *flag.Flag) {
		if secretFlags[f.Name] {
			o.Warnings = append(o.Warnings, fmt.Sprintf("--%s on the command line shows in ps to every user of this host; use --%s-file or %s", f.Name, f.Name, EnvName(f.Name)))
		}
	})
	if err := o.readSecretFiles(); err != nil {
		return o, err
	}
	return o, o.Validate()
}

// secretFlags are the flags whose values are secrets: given on the command
// line, Parse warns.
var secretFlags = map[string]bool{"webhook-url": true, "webhook-secret": true}

// MaxSecretFileBytes bounds a secret file Parse reads: a token or a URL, not
// a document.
const MaxSecretFileBytes = 8 << 10

// readSecretFiles fills the values the *-file flags name. A file and its
// value flag together are refused: which one wins would be a guess.
func (o *Options) readSecretFiles() error {
	for _, f := range []struct {
		flag, path string
		dst        *string
	}{
		{"--webhook-url-file", o.WebhookURLFile, (*string)(&o.WebhookURL)},
		{"--webhook-secret-file", o.WebhookSecretFile, (*string)(&o.WebhookSecret)},
		{"--metrics-token-file", o.MetricsTokenFile, (*string)(&o.MetricsToken)},
		{"--subscribe-smtp-password-file", o.SubscribeSMTPPasswordFile, (*string)(&o.SubscribeSMTPPassword)},
	} {
		if f.path == "" {
			continue
		}
		if *f.dst != "" {
			return fmt.Errorf("%s and %s are both set: give one", f.flag, strings.TrimSuffix(f.flag, "-file"))
		}
		v, err := ReadSecretFile(f.path)
		if err != nil {
			return fmt.Errorf("%s: %w", f.flag, err)
		}
		*f.dst = v
	}
	return nil
}

// ReadSecretFile returns the content of a one-value secret file without
// surrounding white space (a trailing newline is what editors leave). An
// empty file is refused: an empty token would admit anyone. Errors never
// quote the content.
func ReadSecretFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxSecretFileBytes+1))
	if err != nil {
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	if len(b) > MaxSecretFileBytes {
		return "", fmt.Errorf("%s is larger than %d bytes: want one value", path, MaxSecretFileBytes)
	}
	v := strings.TrimSpace(string(b))
	if v == "" {
		return "", fmt.Errorf("%s is empty", path)
	}
	if strings.ContainsAny(v, "\r\n") {
		return "", fmt.Errorf("%s holds more than one line: want one value", path)
	}
	return v, nil
}

// EnvSecretsKey holds the secrets keys inline (base64, comma-separated, the
// first current). It has no flag on purpose: command lines are visible to
// every user of the host.
const EnvSecretsKey = "MCPMON_SECRETS_KEY"

// EmbeddedReplicaID is every embedded-store process's identity in ledger
// claims. Only one process can open a data dir (the store file is locked),
// so a restarted process is the same replica: it takes over the claims its
// killed predecessor held at once, instead of every notification of those
// endpoints waiting out --claim-lease behind a claim nobody holds.
const EmbeddedReplicaID = "embedded"

// defaultReplicaID is host-pid, unique among replicas sharing a Redis store;
// EmbeddedReplicaID with the embedded store.
func defaultReplicaID(storeKind string) string {
	if storeKind == StoreEmbedded {
		return EmbeddedReplicaID
	}
	host, _ := os.Hostname()
	return fmt.Sprintf("%s-%d", host, os.Getpid())
}

// Validate checks option values and combinations.
func (o Options) Validate() error {
	var errs []error
	if o.SubscribeSMTPAddr != "" && (o.SubscribeSMTPFrom == "" || o.SubscribeBaseURL == "") {
		errs = append(errs, errors.New("--subscribe-smtp-addr needs --subscribe-smtp-from and --subscribe-base-url (the public URL the confirmation and unsubscribe links start with)"))
	}
	if o.MaxSubscribersPerPage < 0 {
		errs = append(errs, fmt.Errorf("--max-subscribers-per-page %d: want 0 or more", o.MaxSubscribersPerPage))
	}
	if _, _, err := net.SplitHostPort(o.Listen); err != nil {
		errs = append(errs, fmt.Errorf("--listen %q: want host:port, e.g. 127.0.0.1:8080", o.Listen))
	}
	switch o.Auth {
	case AuthKeys:
	case AuthNone:
		if !loopbackListen(o.Listen) {
			errs = append(errs, fmt.Errorf("--auth none: only with a loopback --listen (127.0.0.1, [::1] or localhost), not %q: anyone who reaches the API could change it; use API keys (`mcpmon keys create`)", o.Listen))
		}
	default:
		errs = append(errs, fmt.Errorf("--auth %q: want keys or none", o.Auth))
	}
	switch o.Queue {
	case QueueEmbedded:
		if o.DataDir == "" {
			errs = append(errs, errors.New("--data-dir is required with --queue embedded"))
		}
	case QueueSQS:
		if o.SQSEndpoint != "" {
			if u, err := url.Parse(o.SQSEndpoint); err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
				errs = append(errs, fmt.Errorf("--sqs-endpoint %q: want an http(s) URL", o.SQSEndpoint))
			}
		}
	default:
		errs = append(errs, fmt.Errorf("--queue %q: want embedded or sqs", o.Queue))
	}
	switch o.Store {
	case StoreEmbedded:
		if o.DataDir == "" {
			errs = append(errs, errors.New("--data-dir is required with --store embedded"))
		}
	case StoreRedis:
		if o.RedisURL == "" {
			errs = append(errs, errors.New("--store redis needs --redis-url (or MCPMON_REDIS_URL)"))
		}
	default:
		errs = append(errs, fmt.Errorf("--store %q: want embedded or redis", o.Store))
	}
	if o.Window < time.Second {
		errs = append(errs, fmt.Errorf("--window %s: must be at least 1s", o.Window))
	} else if o.Window >= time.Minute && o.Window%time.Minute != 0 || o.Window < time.Minute && time.Minute%o.Window != 0 {
		errs = append(errs, fmt.Errorf("--window %s: must divide a minute (1s..30s) or be whole minutes", o.Window))
	}
	if o.Grace < 0 || o.Grace > o.Window*10 {
		errs = append(errs, fmt.Errorf("--grace %s: must be between 0 and 10 windows", o.Grace))
	}
	if o.LedgerTTL < time.Hour {
		errs = append(errs, fmt.Errorf("--ledger-ttl %s: must be at least 1h (SQS redelivers and DLQ replays arrive long after 5 minutes)", o.LedgerTTL))
	}
	if o.SubscribeSMTPAddr != "" && o.LedgerTTL <= model.SubscriberHorizon {
		errs = append(errs, fmt.Errorf("--ledger-ttl %s: with --subscribe-smtp-addr it must be longer than %s, how long a subscriber notice may still be sent, or a notice could be sent twice", o.LedgerTTL, model.SubscriberHorizon))
	}
	if o.AuditTTL < time.Hour || o.AuditTTL > MaxAuditTTL {
		errs = append(errs, fmt.Errorf("--audit-ttl %s: must be between 1h and 2y (17520h)", o.AuditTTL))
	}
	if o.SinkGiveUpAfter < time.Second || o.SinkGiveUpAfter > 30*24*time.Hour {
		errs = append(errs, fmt.Errorf("--sink-give-up-after %s: must be between 1s and 720h", o.SinkGiveUpAfter))
	}
	if o.StatusPageHostRecheckInterval < 0 || o.StatusPageHostRecheckInterval > 0 && o.StatusPageHostRecheckInterval < time.Hour {
		errs = append(errs, fmt.Errorf("--status-page-host-recheck-interval %s: must be 0 (never) or at least 1h", o.StatusPageHostRecheckInterval))
	}
	if r := o.StatusPageHostResolver; r != "" {
		if host, port, err := net.SplitHostPort(r); err != nil || host == "" || port == "" {
			errs = append(errs, fmt.Errorf("--status-page-host-resolver %q: want host:port, e.g. 1.1.1.1:53", r))
		}
	}
	if o.StatusPageHostRecheckGrace < time.Hour {
		errs = append(errs, fmt.Errorf("--status-page-host-recheck-grace %s: must be at least 1h, so one failed look releases nothing", o.StatusPageHostRecheckGrace))
	}
	if o.AgentOfflineAfter < model.MinAgentOfflineAfter || o.AgentOfflineAfter > model.MaxAgentOfflineAfter {
		errs = append(errs, fmt.Errorf("--agent-offline-after %s: must be between %s and %s", o.AgentOfflineAfter, model.MinAgentOfflineAfter, model.MaxAgentOfflineAfter))
	}
	if o.ClaimLease < time.Second || o.ClaimLease > time.Hour {
		errs = append(errs, fmt.Errorf("--claim-lease %s: must be between 1s and 1h", o.ClaimLease))
	}
	if o.Visibility < time.Second || o.Visibility > 12*time.Hour {
		errs = append(errs, fmt.Errorf("--visibility-timeout %s: must be between 1s and 12h (the SQS cap); the default is %s", o.Visibility, queue.DefaultVisibility))
	}
	if o.MaxReceiveCount < 1 || o.MaxReceiveCount > queue.MaxMaxReceiveCount {
		errs = append(errs, fmt.Errorf("--max-receive-count %d: must be between 1 and %d (the SQS limit); the default is %d", o.MaxReceiveCount, queue.MaxMaxReceiveCount, queue.DefaultMaxReceiveCount))
	}
	if o.RedisLedgerReplicas < 0 || o.RedisLedgerReplicas > 16 {
		errs = append(errs, fmt.Errorf("--redis-ledger-replicas %d: must be between 0 (do not wait) and 16", o.RedisLedgerReplicas))
	}
	if o.ProbeConcurrency < 1 {
		errs = append(errs, fmt.Errorf("--probe-concurrency %d: must be at least 1", o.ProbeConcurrency))
	}
	for _, raw := range o.CanaryURLs {
		if u, err := url.Parse(raw); err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
			errs = append(errs, fmt.Errorf("--canary-url %q: want an http(s) URL with a host", model.RedactURL(raw)))
		}
	}
	if o.CanaryInterval < time.Second || o.CanaryInterval > time.Hour {
		errs = append(errs, fmt.Errorf("--canary-interval %s: must be between 1s and 1h", o.CanaryInterval))
	}
	if o.CanaryTimeout <= 0 || o.CanaryTimeout > o.CanaryInterval {
		errs = append(errs, fmt.Errorf("--canary-timeout %s: must be positive and at most --canary-interval (%s)", o.CanaryTimeout, o.CanaryInterval))
	}
	if o.WebhookURL != "" {
		if u, err := url.Parse(o.WebhookURL.Reveal()); err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
			// Never echo the URL: it may embed a token.
			errs = append(errs, errors.New("--webhook-url: want an http(s) URL with a host"))
		}
	}
	if o.MetricsListen != "" {
		if _, _, err := net.SplitHostPort(o.MetricsListen); err != nil {
			errs = append(errs, fmt.Errorf("--metrics-listen %q: want host:port, e.g. 127.0.0.1:9090", o.MetricsListen))
		} else if o.MetricsListen == o.Listen {
			errs = append(errs, fmt.Errorf("--metrics-listen %q: must differ from --listen", o.MetricsListen))
		}
	}
	if o.BootstrapKeyFile != "" && !o.BootstrapKey {
		errs = append(errs, errors.New("--bootstrap-key-file with --bootstrap-key=false: no key would be written; drop one"))
	}
	for _, h := range o.APIHosts {
		if err := checkAPIHost(h); err != nil {
			errs = append(errs, fmt.Errorf("--api-hosts %q: %v", h, err))
		}
	}
	if (o.TLSCert == "") != (o.TLSKey == "") {
		errs = append(errs, errors.New("--tls-cert and --tls-key: give both (or neither)"))
	}
	for _, t := range []struct {
		flag string
		d    time.Duration
	}{{"--http-read-timeout", o.HTTPReadTimeout}, {"--http-write-timeout", o.HTTPWriteTimeout}, {"--http-idle-timeout", o.HTTPIdleTimeout}} {
		if t.d < time.Second || t.d > time.Hour {
			errs = append(errs, fmt.Errorf("%s %s: must be between 1s and 1h", t.flag, t.d))
		}
	}
	for _, q := range []struct {
		flag string
		n    int
	}{{"--max-endpoints-per-tenant", o.MaxEndpointsPerTenant}, {"--max-maintenance-per-tenant", o.MaxMaintenancePerTenant}, {"--max-status-pages-per-tenant", o.MaxStatusPagesPerTenant}, {"--max-agents-per-tenant", o.MaxAgentsPerTenant}, {"--rate-burst", o.RateBurst}, {"--max-in-flight-per-tenant", o.MaxInFlightPerTenant}} {
		if q.n < 0 {
			errs = append(errs, fmt.Errorf("%s %d: must be 0 (no limit) or more", q.flag, q.n))
		}
	}
	if o.RateLimit < 0 || o.RateLimit > 1e6 {
		errs = append(errs, fmt.Errorf("--rate-limit %g: must be between 0 (no limit) and 1000000 requests per second", o.RateLimit))
	}
	if _, err := netguard.ParseNetworks(o.AllowTargetNetworks); err != nil {
		errs = append(errs, fmt.Errorf("--allow-target-networks: %w", err))
	}
	if err := validRegions(o.Regions); err != nil {
		errs = append(errs, err)
	}
	if o.SecretsKey != "" && o.SecretsKeyFile != "" {
		errs = append(errs, fmt.Errorf("--secrets-key-file and %s are both set: give one", EnvSecretsKey))
	}
	switch o.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		errs = append(errs, fmt.Errorf("--log-level %q: want debug, info, warn or error", o.LogLevel))
	}
	if len(errs) > 0 {
		return errs[0] // one line: the first problem
	}
	return nil
}

// checkAPIHost accepts a host name, an IP literal ([::1] for IPv6), or
// either with a port: what a client puts in its Host header.
func checkAPIHost(h string) error {
	if strings.ContainsAny(h, "/@ ") || strings.Contains(h, "://") {
		return errors.New("want a host name or host:port, not a URL")
	}
	host := h
	if hp, port, err := net.SplitHostPort(h); err == nil {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return errors.New("port must be between 1 and 65535")
		}
		host = hp
	} else if strings.Count(h, ":") > 1 && !strings.HasPrefix(h, "[") {
		return errors.New("write an IPv6 address in brackets, e.g. [::1] or [::1]:8080")
	}
	host = strings.Trim(host, "[]")
	if host == "" {
		return errors.New("empty host")
	}
	return nil
}

// loopbackListen reports whether a --listen address binds only loopback: an
// empty host or 0.0.0.0 listens on every interface.
func loopbackListen(listen string) bool {
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// TargetNetworks are AllowTargetNetworks parsed (Validate has refused any
// that does not parse).
func (o Options) TargetNetworks() []netip.Prefix {
	nets, _ := netguard.ParseNetworks(o.AllowTargetNetworks)
	return nets
}
