// Package redis is the distributed implementation of store.Store on Redis
// (github.com/redis/go-redis/v9, through its UniversalClient, so a single
// node, Sentinel or Cluster all work). It is mcpmon's long-horizon memory:
// SQS deduplicates sends for five minutes, while this ledger remembers done
// effects for days, so a DLQ replay, a late retry or a second replica never
// causes a second verdict or alert.
//
// Data enters through the store.Store methods; every multi-key transition is
// one Lua script, executed atomically by Redis, and data leaves through the
// same methods. All keys live under one prefix (default "mcpmon:"); on a
// Redis Cluster they are slotted by endpoint (layout.go).
//
// Logical deadlines (lease ends, done-key expiry, verdict retention) are
// absolute milliseconds stored in the values and compared inside the
// scripts; Redis's own key expiry (PX) is set to the same duration
// *relative* to the call, and only garbage-collects. Ledger deadlines are
// read from the Redis server's clock (TIME inside the script), the one clock
// every replica shares: a lease written by one replica and checked by
// another must not depend on how far apart their clocks are, or a replica
// running fast takes over live claims and sends an alert twice. Only with
// Options.LeasesOnClock (tests advancing a fake clock) do they come from the
// injected clock, so the conformance suite crosses a 7-day TTL in
// microseconds without depending on the server's wall clock (an absolute PEXPIREAT computed from a fake clock
// would be in the server's past or far future and delete keys at once or
// never). Everything else reads the injected clock.
//
// Connectivity failures come back wrapped with store.ErrUnavailable so a
// consumer leaves its message in the queue and reports not-ready. The store
// logs once per outage — a warning when the first operation fails, an info
// line when one succeeds again — so consumers should not log ErrUnavailable
// per message (Debug at most).
package redis

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/mcpmon/mcpmon/pkg/clock"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/store"
	"github.com/mcpmon/mcpmon/pkg/writehealth"
)

// DefaultPrefix prefixes every key.
const (
	DefaultPrefix = "mcpmon:"
	// DefaultClusterPrefix is the prefix of the one-slot cluster layout:
	// with a hash tag in the prefix every key maps to one slot, so the
	// cluster gives failover, not sharding. Without one (DefaultPrefix) a
	// cluster gets the sharded layout (layout.go).
	DefaultClusterPrefix = "{mcpmon}:"
)

// Options configure New. Zero values use the defaults.
type Options struct {
	// Prefix is prepended to every key (default "mcpmon:"). In cluster mode
	// a prefix without a {hash tag} gets the sharded layout, keys slotted
	// by endpoint (docs/design/redis-cluster.md); one with a tag keeps
	// every key in that tag's slot.
	Prefix string
	// LedgerTTL is how long a done ledger key is remembered. Default
	// store.DefaultLedgerTTL (7 days): SQS dedups for only 5 minutes and
	// retains messages up to 14 days (4 by default); a DLQ redriven within a
	// week, a consumer replaying an old batch or a stuck replica coming back
	// must still find the key. Longer costs memory for no practical gain.
	LedgerTTL time.Duration
	// VerdictHistory is how far back verdict history is kept per endpoint
	// (default store.DefaultVerdictHistory).
	VerdictHistory time.Duration
	// AuditTTL is how long audit entries are kept per tenant (default
	// store.DefaultAuditTTL).
	AuditTTL time.Duration
	// Clock is the time source (default: real).
	Clock clock.Clock
	// Logger receives the once-per-outage lines.
	Logger *slog.Logger
	// DialTimeout bounds each connection attempt (default 2s) and
	// ReadTimeout/WriteTimeout each command (default 3s), so an outage turns
	// into ErrUnavailable within seconds. A dial_timeout/read_timeout/
	// write_timeout query parameter in the URL wins.
	DialTimeout  time.Duration
	ReadTimeout  time.Duration
	WriteTimeout time.Duration
	// WaitForServer makes New return the store when the server does not
	// answer yet: every call fails with store.ErrUnavailable until it does,
	// as in any later outage. Without it New fails. A URL that does not
	// parse or a server that refuses the credentials fails either way.
	WaitForServer bool
	// LeasesOnClock measures ledger leases and TTLs on Clock instead of the
	// Redis server's TIME. Only for tests that advance a fake clock:
	// replicas' clocks differ, and the server's is the one they share.
	LeasesOnClock bool
	// LedgerReplicas, when above 0, makes every ledger claim and done mark
	// wait (WAIT, on the connection that wrote it) until that many replicas
	// of the key's primary hold it, for at most LedgerWait. Redis
	// replicates asynchronously: without it, a primary that dies right
	// after acknowledging a mark can be failed over to a replica that never
	// got it, and the alert is sent again. A mark that times out is still
	// used (the alert is not held back); it is counted in
	// mcpmon_store_ledger_unreplicated_total and logged. Set it to the
	// replicas each primary has (1 for a primary with one replica); 0, the
	// default, does not wait, right for a Redis without replicas.
	LedgerReplicas int
	// LedgerWait bounds each wait of LedgerReplicas (default 1s).
	LedgerWait time.Duration
	// WatchDeployment makes Ping fail, and log, once Redis no longer holds
	// the data the store started on (deployment.go): for a process that
	// serves from it, not for a tool that reads it once (store migrate).
	WatchDeployment bool
}

// Store is the Redis-backed store.Store.
type Store struct {
	rdb goredis.UniversalClient
	p   string
	// sharded: keys are slotted by endpoint under base (layout.go); p is
	// then base plus the global keys' tag.
	sharded bool
	base    string
	clk     clock.Clock
	// serverTime: ledger deadlines come from the Redis server's clock
	// (false only with Options.LeasesOnClock).
	serverTime bool
	ttl        time.Duration
	history    time.Duration
	auditTTL   time.Duration
	log        *slog.Logger
	eps        *store.EndpointDecoder // GetEndpoint
	repl       replication            // ledger.go

	mu        sync.Mutex
	downSince time.Time // zero while reachable
	// refused counts the writes Redis refuses with MISCONF (outage.go),
	// logs them at most every writehealth.Hold and fails Ping until Hold
	// after the last: reads still succeed then, so the outage log's
	// warning-and-recovery pair would repeat with every read.
	refused *writehealth.Health
	// watchDeployment is Options.WatchDeployment; deployment is the
	// marker read (deployment.go, under mu), lost paces its log.
	watchDeployment bool
	deployment      string
	lost            clock.Every
}

var _ store.Store = (*Store)(nil)

// New connects to the Redis at rawURL and checks it answers PING.
//
// URL forms (user, password and query parameters as in go-redis's ParseURL,
// e.g. ?dial_timeout=1s&pool_size=20):
//
//	redis://[user:pass@]host:port[/db]            single node
//	rediss://...                                  single node over TLS
//	redis+sentinel://[user:pass@]h1:26379,h2:26379[/db]?master_name=NAME
//	rediss+sentinel://...                         (user:pass are Sentinel's; add password=... for the master)
//	redis+cluster://[user:pass@]h1:6379,h2:6379   Redis Cluster (seed nodes)
//	redis://h1:6379,h2:6379                       same: two or more hosts mean Cluster
//	rediss+cluster://...
//
// Errors never contain the URL (it may hold a password). An unreachable
// Redis fails with an error wrapping store.ErrUnavailable.
func New(ctx context.Context, rawURL string, opts Options) (*Store, error) {
	return open(ctx, rawURL, opts, true)
}

// open is New; refuseOld false skips the one-slot data check (Migrate
// opens its target beside the data it moves).
func open(ctx context.Context, rawURL string, opts Options, refuseOld bool) (*Store, error) {
	if opts.Clock == nil {
		opts.Clock = clock.Real{}
	}
	if opts.LedgerTTL <= 0 {
		opts.LedgerTTL = store.DefaultLedgerTTL
	}
	if opts.VerdictHistory <= 0 {
		opts.VerdictHistory = store.DefaultVerdictHistory
	}
	if opts.AuditTTL <= 0 {
		opts.AuditTTL = store.DefaultAuditTTL
	}
	if opts.DialTimeout <= 0 {
		opts.DialTimeout = 2 * time.Second
	}
	if opts.ReadTimeout <= 0 {
		opts.ReadTimeout = 3 * time.Second
	}
	if opts.WriteTimeout <= 0 {
		opts.WriteTimeout = 3 * time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.LedgerReplicas < 0 {
		return nil, fmt.Errorf("redis store: ledger replicas %d: must be 0 (do not wait) or more", opts.LedgerReplicas)
	}
	if opts.LedgerWait <= 0 {
		opts.LedgerWait = time.Second
	}
	rdb, cluster, err := newClient(rawURL, opts)
	if err != nil {
		return nil, err
	}
	if opts.Prefix == "" {
		opts.Prefix = DefaultPrefix
	}
	sharded := cluster && !hasHashTag(opts.Prefix)
	p := opts.Prefix
	if sharded {
		p = opts.Prefix + "{" + globalTag + "}:"
	}
	s := &Store{
		rdb:        rdb,
		p:          p,
		sharded:    sharded,
		base:       opts.Prefix,
		clk:        opts.Clock,
		serverTime: !opts.LeasesOnClock,
		ttl:        opts.LedgerTTL,
		history:    opts.VerdictHistory,
		auditTTL:   opts.AuditTTL,
		log:        opts.Logger.With("component", "store", "backend", "redis"),
		eps:        store.NewEndpointDecoder(),
		repl:       replication{replicas: opts.LedgerReplicas, wait: opts.LedgerWait, warn: clock.Every{Interval: time.Minute}},

		lost: clock.Every{Interval: deploymentLogEvery},
	}
	s.refused = writehealth.New(writehealth.Options{What: "Redis", Now: opts.Clock.Now, Log: s.log,
		Fix: "it cannot persist (MISCONF: a full or failing disk under its snapshots or AOF); free space on Redis's disk or fix what its log names. Store writes fail with ErrUnavailable and are retried"})
	if err := s.Ping(ctx); err != nil {
		if opts.WaitForServer && errors.Is(err, store.ErrUnavailable) {
			// The outage is logged once by done; the first Ping that
			// reaches Redis holds the deployment marker.
			s.watchDeployment = opts.WatchDeployment
			return s, nil
		}
		_ = rdb.Close()
		return nil, fmt.Errorf("%w (check --redis-url and that Redis is running)", err)
	}
	if sharded && refuseOld {
		if err := s.refuseOneSlotData(ctx); err != nil {
			_ = rdb.Close()
			return nil, err
		}
	}
	// Only a store that opened holds the marker: one refused above
	// leaves nothing under the prefix.
	if s.watchDeployment = opts.WatchDeployment; s.watchDeployment {
		if err := s.holdDeployment(ctx); err != nil && !(opts.WaitForServer && errors.Is(err, store.ErrUnavailable)) {
			_ = rdb.Close()
			return nil, err
		}
	}
	if sharded {
		// The sharded layout is younger than every index, so no record
		// predates one: the passes below have nothing to do.
		return s, nil
	}
	// Endpoints from before tenants join the default tenant's index; a
	// failure here only delays that to the next start.
	if n, err := s.IndexTenants(ctx); err != nil {
		s.log.Warn("indexing endpoints by tenant failed; retried at the next start", "err", err)
	} else if n > 0 {
		s.log.Info("endpoints from before tenants listed in the default tenant", "endpoints", n)
	}
	// Incidents and maintenance windows from before their tenant index
	// join it; a failure here only delays that to the next start (until
	// then a tenant does not see them).
	if n, err := s.IndexOwners(ctx); err != nil {
		s.log.Warn("indexing incidents and maintenance windows by tenant failed; retried at the next start", "err", err)
	} else if n > 0 {
		s.log.Info("incidents and maintenance windows listed in their tenant's index", "records", n)
	}
	return s, nil
}

// Close closes the connection pool.
func (s *Store) Close() error { return s.rdb.Close() }

// Ping reports whether Redis answers, still holds the data the store
// started on (Options.WatchDeployment) and takes writes (readiness): an
// error while it refused a write in the last writehealth.Hold, though it
// still answers PING then.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.done("ping", s.rdb.Ping(ctx).Err()); err != nil {
		return err
	}
	if err := s.checkDeployment(ctx); err != nil {
		return err
	}
	return s.refused.Check()
}

// CommitFailures is how many writes Redis refused because it could not
// persist them (MISCONF) since the store was opened
// (mcpmon_store_commit_failures_total).
func (s *Store) CommitFailures() uint64 { return s.refused.Failures() }

// ---- keys and values

func (s *Store) k(parts ...string) string { return s.p + strings.Join(parts, ":") }

func ms(t time.Time) string { return strconv.FormatInt(t.UnixMilli(), 10) }

func fromMS(v string) (time.Time, error) {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return time.Time{}, err
	}
	return time.UnixMilli(n).UTC(), nil
}

func decode[T any](what, raw string) (T, error) {
	var v T
	if err := json.Unmarshal([]byte(raw), &v); err != nil {
		return v, fmt.Errorf("redis store: decode %s: %w", what, err)
	}
	return v, nil
}

// hgetJSON reads and decodes the JSON record in field of hash key; what
// names it in errors (ErrNotFound when absent), op in the outage log.
func hgetJSON[T any](ctx context.Context, s *Store, key, field, op, what string) (T, error) {
	var zero T
	raw, err := s.rdb.HGet(ctx, key, field).Result()
	if errors.Is(err, goredis.Nil) {
		return zero, fmt.Errorf("%s: %w", what, model.ErrNotFound)
	}
	if err := s.done(op, err); err != nil {
		return zero, err
	}
	return decode[T](what, raw)
}

// hmgetJSON reads the records ids of hash key in one HMGET, in ids' order,
// skipping those gone since the IDs were listed; kind names a record in
// decode errors ("endpoint <id>").
func hmgetJSON[T any](ctx context.Context, s *Store, key string, ids []string, op, kind string) ([]T, error) {
	raws, err := s.rdb.HMGet(ctx, key, ids...).Result()
	if err := s.done(op, err); err != nil {
		return nil, err
	}
	out := make([]T, 0, len(ids))
	for i, r := range raws {
		raw, ok := r.(string)
		if !ok {
			continue
		}
		v, err := decode[T](kind+" "+ids[i], raw)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

func encode(v any) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("redis store: encode %T: %w", v, err)
	}
	return string(b), nil
}

// flag is a script argument for a boolean.
func flag(b bool) string {
	if b {
		return "1"
	}
	return "0"
}
