// Package redis is the distributed implementation of store.Store on Redis
// (github.com/redis/go-redis/v9, through its UniversalClient, so a single
// node, Sentinel or Cluster all work). It is mcpmon's long-horizon memory:
// SQS deduplicates sends for five minutes, while this ledger remembers done
// effects for days, so a DLQ replay, a late retry or a second replica never
// causes a second verdict or alert.
//
// Data enters through the store.Store methods; every multi-key transition is
// one Lua script, executed atomically by Redis, and data leaves through the
// same methods. All keys live under one prefix (default "mcpmon:").
//
// Logical deadlines (lease ends, done-key expiry, verdict retention) are
// absolute milliseconds stored in the values and compared inside the
// scripts; Redis's own key expiry (PX) is set to the same duration
// *relative* to the call, and only garbage-collects. Ledger deadlines are
// read from the Redis server's clock (TIME inside the script), the one clock
// every replica shares: a lease written by one replica and checked by
// another must not depend on how far apart their clocks are, or a replica
// running fast takes over live claims and sends an alert twice. Only under a
// test's *clock.Fake do they come from the injected clock, so the
// conformance suite crosses a 7-day TTL in microseconds without depending on
// the server's wall clock (an absolute PEXPIREAT computed from a fake clock
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
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/mcpmon/mcpmon/pkg/clock"
	"github.com/mcpmon/mcpmon/pkg/msg"
	"github.com/mcpmon/mcpmon/pkg/store"
)

// DefaultPrefix prefixes every key; cluster mode uses DefaultClusterPrefix.
const (
	DefaultPrefix = "mcpmon:"
	// DefaultClusterPrefix carries a hash tag so every key maps to one slot:
	// the Lua scripts touch several keys at once, which Redis Cluster allows
	// only within one slot. Cluster then gives failover, not sharding — the
	// ledger is small (one key per notification for 7 days).
	DefaultClusterPrefix = "{mcpmon}:"
)

// Options configure New. Zero values use the defaults.
type Options struct {
	// Prefix is prepended to every key (default "mcpmon:"). In cluster mode
	// a prefix without a {hash tag} is wrapped in one ("mcpmon:" becomes
	// "{mcpmon}:") so the keys a Lua script touches share a slot.
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
}

// Store is the Redis-backed store.Store.
type Store struct {
	rdb goredis.UniversalClient
	p   string
	clk clock.Clock
	// serverTime: ledger deadlines come from the Redis server's clock
	// (false only under a *clock.Fake).
	serverTime bool
	ttl        time.Duration
	history    time.Duration
	log        *slog.Logger

	mu        sync.Mutex
	downSince time.Time // zero while reachable
}

var _ store.Store = (*Store)(nil)

// ErrURL reports a Redis URL New cannot use.
var ErrURL = errors.New("invalid redis URL")

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
	if opts.Clock == nil {
		opts.Clock = clock.Real{}
	}
	if opts.LedgerTTL <= 0 {
		opts.LedgerTTL = store.DefaultLedgerTTL
	}
	if opts.VerdictHistory <= 0 {
		opts.VerdictHistory = store.DefaultVerdictHistory
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
	rdb, cluster, err := newClient(rawURL, opts)
	if err != nil {
		return nil, err
	}
	if opts.Prefix == "" {
		opts.Prefix = DefaultPrefix
		if cluster {
			opts.Prefix = DefaultClusterPrefix
		}
	}
	if cluster && !hasHashTag(opts.Prefix) {
		tagged := clusterPrefix(opts.Prefix)
		opts.Logger.Info("redis cluster: prefix given a hash tag so the Lua transitions' keys share one slot", "prefix", opts.Prefix, "using", tagged)
		opts.Prefix = tagged
	}
	_, fake := opts.Clock.(*clock.Fake)
	s := &Store{
		rdb:        rdb,
		p:          opts.Prefix,
		clk:        opts.Clock,
		serverTime: !fake,
		ttl:        opts.LedgerTTL,
		history:    opts.VerdictHistory,
		log:        opts.Logger.With("component", "store", "backend", "redis"),
	}
	if err := s.Ping(ctx); err != nil {
		if opts.WaitForServer && errors.Is(err, store.ErrUnavailable) {
			return s, nil // the outage is logged once by done
		}
		_ = rdb.Close()
		return nil, fmt.Errorf("%w (check --redis-url and that Redis is running)", err)
	}
	return s, nil
}

// clusterPrefix wraps a prefix without a hash tag: "mcpmon:" → "{mcpmon}:".
func clusterPrefix(p string) string {
	return "{" + strings.TrimSuffix(p, ":") + "}:"
}

func hasHashTag(p string) bool {
	i := strings.IndexByte(p, '{')
	return i >= 0 && strings.IndexByte(p[i+1:], '}') > 0
}

// newClient builds the go-redis client for the URL's scheme.
func newClient(rawURL string, opts Options) (goredis.UniversalClient, bool, error) {
	scheme, rest, ok := strings.Cut(rawURL, "://")
	if !ok {
		return nil, false, fmt.Errorf("%w: no scheme (want redis://, rediss://, redis+sentinel:// or redis+cluster://)", ErrURL)
	}
	base, mode, _ := strings.Cut(scheme, "+")
	if base != "redis" && base != "rediss" {
		return nil, false, fmt.Errorf("%w: scheme %q (want redis, rediss, redis+sentinel, redis+cluster)", ErrURL, scheme)
	}
	maint := &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
	switch mode {
	case "":
		if authority, _, _ := strings.Cut(rest, "/"); strings.Contains(authority, ",") {
			// redis://h1:6379,h2:6379 — comma-separated seed nodes mean Cluster.
			return newClient(base+"+cluster://"+rest, opts)
		}
		o, err := goredis.ParseURL(base + "://" + rest)
		if err != nil {
			return nil, false, fmt.Errorf("%w: %s", ErrURL, redactErr(err))
		}
		applyTimeouts(&o.DialTimeout, &o.ReadTimeout, &o.WriteTimeout, opts)
		o.DialerRetries, o.MaxRetries = 1, 2
		o.MaintNotificationsConfig = maint
		return goredis.NewClient(o), false, nil
	case "sentinel", "cluster":
		u, err := multiHostURL(base, rest)
		if err != nil {
			return nil, false, err
		}
		if mode == "sentinel" {
			o, err := goredis.ParseFailoverURL(u)
			if err != nil {
				return nil, false, fmt.Errorf("%w: %s", ErrURL, redactErr(err))
			}
			if o.MasterName == "" {
				return nil, false, fmt.Errorf("%w: redis+sentinel needs ?master_name=", ErrURL)
			}
			applyTimeouts(&o.DialTimeout, &o.ReadTimeout, &o.WriteTimeout, opts)
			o.DialerRetries, o.MaxRetries = 1, 2
			return goredis.NewFailoverClient(o), false, nil
		}
		o, err := goredis.ParseClusterURL(u)
		if err != nil {
			return nil, false, fmt.Errorf("%w: %s", ErrURL, redactErr(err))
		}
		if base == "rediss" && o.TLSConfig != nil {
			o.TLSConfig.MinVersion = tls.VersionTLS12
		}
		applyTimeouts(&o.DialTimeout, &o.ReadTimeout, &o.WriteTimeout, opts)
		o.DialerRetries, o.MaxRetries = 1, 2
		o.MaintNotificationsConfig = maint
		return goredis.NewClusterClient(o), true, nil
	}
	return nil, false, fmt.Errorf("%w: scheme %q (want redis, rediss, redis+sentinel, redis+cluster)", ErrURL, scheme)
}

// multiHostURL turns base://[userinfo@]h1,h2,h3[/path][?query] into the
// single-host form go-redis parses, with the other hosts as addr= params.
func multiHostURL(base, rest string) (string, error) {
	authority, tail := rest, ""
	if i := strings.IndexAny(rest, "/?"); i >= 0 {
		authority, tail = rest[:i], rest[i:]
	}
	userinfo := ""
	if i := strings.LastIndexByte(authority, '@'); i >= 0 {
		userinfo, authority = authority[:i+1], authority[i+1:]
	}
	hosts := strings.Split(authority, ",")
	if hosts[0] == "" {
		return "", fmt.Errorf("%w: no host", ErrURL)
	}
	path, query, _ := strings.Cut(tail, "?")
	var extra []string
	for _, h := range hosts[1:] {
		if h == "" {
			continue
		}
		extra = append(extra, "addr="+h)
	}
	if query != "" {
		extra = append(extra, query)
	}
	u := base + "://" + userinfo + hosts[0] + path
	if len(extra) > 0 {
		u += "?" + strings.Join(extra, "&")
	}
	return u, nil
}

// redactErr keeps go-redis's parse message but never the URL, which may
// hold a password: url.Parse errors quote the whole URL, so those are reduced
// to their cause.
func redactErr(err error) string {
	var uerr *url.Error
	if errors.As(err, &uerr) {
		return uerr.Err.Error()
	}
	return err.Error()
}

func applyTimeouts(dial, read, write *time.Duration, opts Options) {
	if *dial == 0 {
		*dial = opts.DialTimeout
	}
	if *read == 0 {
		*read = opts.ReadTimeout
	}
	if *write == 0 {
		*write = opts.WriteTimeout
	}
}

// Close closes the connection pool.
func (s *Store) Close() error { return s.rdb.Close() }

// Ping reports whether Redis answers (readiness).
func (s *Store) Ping(ctx context.Context) error {
	return s.done("ping", s.rdb.Ping(ctx).Err())
}

// ---- errors and the outage log

// done classifies err and keeps the once-per-outage log: the first
// connectivity failure logs a warning, the next success logs recovery.
func (s *Store) done(op string, err error) error {
	if err == nil || errors.Is(err, goredis.Nil) {
		s.recovered()
		return err
	}
	if !unavailable(err) {
		// The server answered (a script or type error): reachable.
		s.recovered()
		return fmt.Errorf("redis store: %s: %w", op, err)
	}
	s.mu.Lock()
	first := s.downSince.IsZero()
	if first {
		s.downSince = s.clk.Now()
	}
	s.mu.Unlock()
	if first {
		s.log.Warn("redis unreachable: store operations fail with ErrUnavailable until it returns; messages stay queued", "op", op, "err", err)
	}
	return fmt.Errorf("redis store: %s: %w: %w", op, store.ErrUnavailable, err)
}

func (s *Store) recovered() {
	s.mu.Lock()
	since := s.downSince
	s.downSince = time.Time{}
	s.mu.Unlock()
	if !since.IsZero() {
		s.log.Info("redis reachable again", "down_for", s.clk.Now().Sub(since).String())
	}
}

// unavailable reports whether err means "Redis cannot serve right now" (the
// caller should retry later) rather than a bad request.
func unavailable(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, goredis.ErrClosed) {
		return false
	}
	var rerr goredis.Error
	if errors.As(err, &rerr) {
		// Server replies that mean "not now": loading the AOF after a
		// restart, a replica during failover, cluster reconfiguring.
		for _, p := range []string{"LOADING", "READONLY", "MASTERDOWN", "CLUSTERDOWN", "TRYAGAIN", "BUSY", "NOREPLICAS"} {
			if strings.HasPrefix(rerr.Error(), p) {
				return true
			}
		}
		return false
	}
	// Not a server reply: dial and I/O errors, timeouts (including the
	// caller's deadline while Redis does not answer), a full pool.
	return true
}

// ---- keys

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

func encode(v any) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("redis store: encode %T: %w", v, err)
	}
	return string(b), nil
}

// ---- Endpoints

var createEndpoint = goredis.NewScript(`
if redis.call('HEXISTS', KEYS[2], ARGV[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('HSET', KEYS[2], ARGV[1], 1)
return 1`)

// updateEndpoint: -1 absent, 0 version conflict, 1 written.
var updateEndpoint = goredis.NewScript(`
local v = redis.call('HGET', KEYS[2], ARGV[1])
if not v then return -1 end
if v ~= ARGV[2] then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
redis.call('HSET', KEYS[2], ARGV[1], ARGV[4])
return 1`)

// CreateEndpoint stores a new endpoint with Version 1; ErrConflict if the ID
// exists.
func (s *Store) CreateEndpoint(ctx context.Context, e store.Endpoint) (store.Endpoint, error) {
	if e.ID == "" {
		return store.Endpoint{}, errors.New("redis store: create endpoint: ID is required")
	}
	if e.CreatedAt.IsZero() {
		e.CreatedAt = s.clk.Now().UTC()
	}
	e.UpdatedAt = e.CreatedAt
	e.Version = 1
	raw, err := encode(e)
	if err != nil {
		return store.Endpoint{}, err
	}
	n, err := createEndpoint.Run(ctx, s.rdb, []string{s.k("endpoints"), s.k("endpoint_versions")}, e.ID, raw).Int()
	if err := s.done("create endpoint "+e.ID, err); err != nil {
		return store.Endpoint{}, err
	}
	if n == 0 {
		return store.Endpoint{}, fmt.Errorf("create endpoint %s: already exists: %w", e.ID, store.ErrConflict)
	}
	return e, nil
}

// UpdateEndpoint replaces the endpoint if e.Version matches the stored one.
func (s *Store) UpdateEndpoint(ctx context.Context, e store.Endpoint) (store.Endpoint, error) {
	cur, err := s.GetEndpoint(ctx, e.ID)
	if err != nil {
		return store.Endpoint{}, fmt.Errorf("update endpoint: %w", err)
	}
	if cur.Version != e.Version {
		return store.Endpoint{}, fmt.Errorf("update endpoint %s: have version %d, stored %d: %w", e.ID, e.Version, cur.Version, store.ErrConflict)
	}
	e.CreatedAt = cur.CreatedAt
	e.UpdatedAt = s.clk.Now().UTC()
	e.Version = cur.Version + 1
	raw, err := encode(e)
	if err != nil {
		return store.Endpoint{}, err
	}
	n, err := updateEndpoint.Run(ctx, s.rdb, []string{s.k("endpoints"), s.k("endpoint_versions")},
		e.ID, cur.Version, raw, e.Version).Int()
	if err := s.done("update endpoint "+e.ID, err); err != nil {
		return store.Endpoint{}, err
	}
	switch n {
	case -1:
		return store.Endpoint{}, fmt.Errorf("update endpoint %s: %w", e.ID, store.ErrNotFound)
	case 0:
		return store.Endpoint{}, fmt.Errorf("update endpoint %s: changed concurrently: %w", e.ID, store.ErrConflict)
	}
	return e, nil
}

// GetEndpoint returns the endpoint or ErrNotFound.
func (s *Store) GetEndpoint(ctx context.Context, id string) (store.Endpoint, error) {
	raw, err := s.rdb.HGet(ctx, s.k("endpoints"), id).Result()
	if errors.Is(err, goredis.Nil) {
		return store.Endpoint{}, fmt.Errorf("endpoint %s: %w", id, store.ErrNotFound)
	}
	if err := s.done("get endpoint "+id, err); err != nil {
		return store.Endpoint{}, err
	}
	return decode[store.Endpoint]("endpoint "+id, raw)
}

// ListEndpoints returns every endpoint ordered by ID.
func (s *Store) ListEndpoints(ctx context.Context) ([]store.Endpoint, error) {
	all, err := s.rdb.HGetAll(ctx, s.k("endpoints")).Result()
	if err := s.done("list endpoints", err); err != nil {
		return nil, err
	}
	out := make([]store.Endpoint, 0, len(all))
	for id, raw := range all {
		e, err := decode[store.Endpoint]("endpoint "+id, raw)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// deleteEndpoint removes the endpoint, its latest result, every undecided
// window (the per-endpoint results hash and its members of the global
// "windows" set, found from the hash's "<windowMs>|..." fields) and the
// prober's documents of it (tool catalog, server identity). 1: the endpoint
// existed.
var deleteEndpoint = goredis.NewScript(`
local n = redis.call('HDEL', KEYS[1], ARGV[1])
redis.call('HDEL', KEYS[2], ARGV[1])
redis.call('HDEL', KEYS[3], ARGV[1])
redis.call('HDEL', KEYS[4], ARGV[1])
local seen = {}
for _, f in ipairs(redis.call('HKEYS', KEYS[5])) do
  local fw = string.match(f, '^(%-?%d+)|')
  if fw and not seen[fw] then
    seen[fw] = true
    redis.call('ZREM', KEYS[6], fw .. '|' .. ARGV[1])
  end
end
redis.call('DEL', KEYS[5])
redis.call('HDEL', KEYS[7], ARGV[1])
redis.call('HDEL', KEYS[8], ARGV[1])
return n`)

// DeleteEndpoint removes the endpoint with its latest probe result, its
// undecided windows and its tool catalog in one script; ErrNotFound if
// absent (the cleanup still runs, so a repeated delete removes what a probe
// in flight at the first one wrote back). Verdict history, the tracker,
// incidents and ledger keys stay: history ages out, incidents are the audit
// trail.
func (s *Store) DeleteEndpoint(ctx context.Context, id string) error {
	n, err := deleteEndpoint.Run(ctx, s.rdb, []string{
		s.k("endpoints"), s.k("endpoint_versions"), s.k("latest"), s.k("latest_slot"),
		s.k("window_results", id), s.k("windows"),
		s.k("objects", store.KindCatalog), s.k("objects", store.KindServerIdentity),
	}, id).Int()
	if err := s.done("delete endpoint "+id, err); err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("delete endpoint %s: %w", id, store.ErrNotFound)
	}
	return nil
}

// ---- Results

var putLatest = goredis.NewScript(`
local cur = redis.call('HGET', KEYS[2], ARGV[1])
if cur and tonumber(cur) > tonumber(ARGV[2]) then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
return 1`)

// PutLatestResult stores r unless a result for a later slot is stored.
func (s *Store) PutLatestResult(ctx context.Context, r msg.ProbeResult) error {
	raw, err := encode(r)
	if err != nil {
		return err
	}
	err = putLatest.Run(ctx, s.rdb, []string{s.k("latest"), s.k("latest_slot")}, r.EndpointID, ms(r.Slot), raw).Err()
	return s.done("put latest result of "+r.EndpointID, err)
}

// LatestResult returns the endpoint's latest probe result or ErrNotFound.
func (s *Store) LatestResult(ctx context.Context, endpointID string) (msg.ProbeResult, error) {
	raw, err := s.rdb.HGet(ctx, s.k("latest"), endpointID).Result()
	if errors.Is(err, goredis.Nil) {
		return msg.ProbeResult{}, fmt.Errorf("latest result of %s: %w", endpointID, store.ErrNotFound)
	}
	if err := s.done("get latest result of "+endpointID, err); err != nil {
		return msg.ProbeResult{}, err
	}
	return decode[msg.ProbeResult]("latest result of "+endpointID, raw)
}

// Window results of one endpoint live in one hash, field
// "<windowMs>|<probeRunId>|<region>", so the verdict script can drop every
// decided window without touching undeclared keys. The global sorted set
// "windows" (member "<windowMs>|<endpointId>", score windowMs) answers
// OpenWindows.
var addWindowResult = goredis.NewScript(`
local lw = redis.call('HGET', KEYS[1], ARGV[1])
if lw and tonumber(lw) >= tonumber(ARGV[2]) then return -1 end
local added = redis.call('HSETNX', KEYS[2], ARGV[3], ARGV[4])
if added == 1 then redis.call('ZADD', KEYS[3], ARGV[2], ARGV[2] .. '|' .. ARGV[1]) end
return added`)

// AddWindowResult adds r to its endpoint's window, idempotently by
// (ProbeRunID, Region).
func (s *Store) AddWindowResult(ctx context.Context, window time.Time, r msg.ProbeResult) (bool, error) {
	raw, err := encode(r)
	if err != nil {
		return false, err
	}
	w := ms(window)
	n, err := addWindowResult.Run(ctx, s.rdb,
		[]string{s.k("last_verdict_window"), s.k("window_results", r.EndpointID), s.k("windows")},
		r.EndpointID, w, w+"|"+r.ProbeRunID+"|"+r.Region, raw).Int()
	if err := s.done("add result "+r.ProbeRunID+" of "+r.EndpointID, err); err != nil {
		return false, err
	}
	if n < 0 {
		return false, fmt.Errorf("result %s for window %s of %s: %w", r.ProbeRunID, window.UTC().Format(time.RFC3339), r.EndpointID, store.ErrWindowDecided)
	}
	return n == 1, nil
}

// WindowResults returns the window's results ordered by (Region, ProbeRunID).
func (s *Store) WindowResults(ctx context.Context, ref store.WindowRef) ([]msg.ProbeResult, error) {
	all, err := s.rdb.HGetAll(ctx, s.k("window_results", ref.EndpointID)).Result()
	if err := s.done("window results of "+ref.EndpointID, err); err != nil {
		return nil, err
	}
	prefix := ms(ref.Window) + "|"
	out := []msg.ProbeResult{}
	for f, raw := range all {
		if !strings.HasPrefix(f, prefix) {
			continue
		}
		r, err := decode[msg.ProbeResult]("window result of "+ref.EndpointID, raw)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Region != out[j].Region {
			return out[i].Region < out[j].Region
		}
		return out[i].ProbeRunID < out[j].ProbeRunID
	})
	return out, nil
}

// OpenWindows lists undecided windows starting before `before`, ordered by
// window then endpoint ID.
func (s *Store) OpenWindows(ctx context.Context, before time.Time) ([]store.WindowRef, error) {
	members, err := s.rdb.ZRangeByScore(ctx, s.k("windows"), &goredis.ZRangeBy{Min: "-inf", Max: "(" + ms(before)}).Result()
	if err := s.done("open windows", err); err != nil {
		return nil, err
	}
	out := make([]store.WindowRef, 0, len(members))
	for _, m := range members {
		w, id, ok := strings.Cut(m, "|")
		t, err := fromMS(w)
		if !ok || err != nil {
			return nil, fmt.Errorf("redis store: malformed window member %q", m)
		}
		out = append(out, store.WindowRef{EndpointID: id, Window: t})
	}
	return out, nil
}

// ---- Verdicts

// recordVerdict applies a verdict only if it is newer than the last one,
// then trims the history by age and drops the results of every window up to
// and including the verdict's (earlier ones can no longer be decided).
var recordVerdict = goredis.NewScript(`
local lw = redis.call('HGET', KEYS[2], ARGV[1])
local w = tonumber(ARGV[2])
if lw and tonumber(lw) >= w then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
redis.call('ZADD', KEYS[3], ARGV[2], ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', '(' .. ARGV[4])
local seen = {}
for _, f in ipairs(redis.call('HKEYS', KEYS[4])) do
  local fw = string.match(f, '^(%-?%d+)|')
  if fw and tonumber(fw) <= w then
    redis.call('HDEL', KEYS[4], f)
    if not seen[fw] then
      seen[fw] = true
      redis.call('ZREM', KEYS[5], fw .. '|' .. ARGV[1])
    end
  end
end
return 1`)

// RecordVerdict applies v if its window is after the endpoint's last
// verdict; see store.Verdicts.
func (s *Store) RecordVerdict(ctx context.Context, v msg.Verdict) (bool, error) {
	raw, err := encode(v)
	if err != nil {
		return false, err
	}
	cutoff := s.clk.Now().Add(-s.history)
	n, err := recordVerdict.Run(ctx, s.rdb,
		[]string{s.k("last_verdict"), s.k("last_verdict_window"), s.k("verdicts", v.EndpointID), s.k("window_results", v.EndpointID), s.k("windows")},
		v.EndpointID, ms(v.Window), raw, ms(cutoff)).Int()
	if err := s.done("record verdict of "+v.EndpointID, err); err != nil {
		return false, err
	}
	return n == 1, nil
}

// LastVerdict returns the endpoint's newest verdict or ErrNotFound.
func (s *Store) LastVerdict(ctx context.Context, endpointID string) (msg.Verdict, error) {
	raw, err := s.rdb.HGet(ctx, s.k("last_verdict"), endpointID).Result()
	if errors.Is(err, goredis.Nil) {
		return msg.Verdict{}, fmt.Errorf("last verdict of %s: %w", endpointID, store.ErrNotFound)
	}
	if err := s.done("last verdict of "+endpointID, err); err != nil {
		return msg.Verdict{}, err
	}
	return decode[msg.Verdict]("last verdict of "+endpointID, raw)
}

// ListVerdicts returns up to limit verdicts (all if limit <= 0), newest
// first, within the retention.
func (s *Store) ListVerdicts(ctx context.Context, endpointID string, limit int) ([]msg.Verdict, error) {
	by := &goredis.ZRangeBy{Min: ms(s.clk.Now().Add(-s.history)), Max: "+inf"}
	if limit > 0 {
		by.Count = int64(limit)
	}
	raws, err := s.rdb.ZRevRangeByScore(ctx, s.k("verdicts", endpointID), by).Result()
	if err := s.done("list verdicts of "+endpointID, err); err != nil {
		return nil, err
	}
	out := make([]msg.Verdict, 0, len(raws))
	for _, raw := range raws {
		v, err := decode[msg.Verdict]("verdict of "+endpointID, raw)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// ---- Incidents

// GetTracker returns the endpoint's tracker, or a zero Tracker (Version 0)
// for the endpoint if none was saved.
func (s *Store) GetTracker(ctx context.Context, endpointID string) (store.Tracker, error) {
	raw, err := s.rdb.HGet(ctx, s.k("trackers"), endpointID).Result()
	if errors.Is(err, goredis.Nil) {
		return store.Tracker{EndpointID: endpointID}, nil
	}
	if err := s.done("get tracker of "+endpointID, err); err != nil {
		return store.Tracker{}, err
	}
	return decode[store.Tracker]("tracker of "+endpointID, raw)
}

// saveTracker checks every version first and writes only if all match, so a
// conflict leaves nothing half-written. Lua rather than WATCH/MULTI: the
// check-then-write runs inside Redis in one step, with no optimistic retry
// loop, no extra round trips per key and no connection pinned between WATCH
// and EXEC — which matters with two alerters racing on the same endpoint.
// The pending-outbox and open-incident sets are written by the same script,
// so they never disagree with the tracker and incidents they index.
//
// KEYS: trackers, tracker_versions, incidents, incident_versions,
// incidents_by_opened, outboxes_pending, incidents_open, then
// incidents_by_endpoint:<ep> per incident.
// ARGV: tracker id, expected version, json, pending (1 or 0), n, then per
// incident id, expected version, json, opened ms, open (1 unless resolved).
// Returns 0 on success, 1 for a tracker conflict, 1+i for incident i.
var saveTracker = goredis.NewScript(`
local function ver(h, id)
  local v = redis.call('HGET', h, id)
  if v then return tonumber(v) end
  return 0
end
if ver(KEYS[2], ARGV[1]) ~= tonumber(ARGV[2]) then return 1 end
local n = tonumber(ARGV[5])
for i = 0, n - 1 do
  local b = 6 + i * 5
  if ver(KEYS[4], ARGV[b]) ~= tonumber(ARGV[b + 1]) then return 2 + i end
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
redis.call('HSET', KEYS[2], ARGV[1], tonumber(ARGV[2]) + 1)
if ARGV[4] == '1' then
  redis.call('SADD', KEYS[6], ARGV[1])
else
  redis.call('SREM', KEYS[6], ARGV[1])
end
for i = 0, n - 1 do
  local b = 6 + i * 5
  redis.call('HSET', KEYS[3], ARGV[b], ARGV[b + 2])
  redis.call('HSET', KEYS[4], ARGV[b], tonumber(ARGV[b + 1]) + 1)
  redis.call('ZADD', KEYS[5], ARGV[b + 3], ARGV[b])
  redis.call('ZADD', KEYS[8 + i], ARGV[b + 3], ARGV[b])
  if ARGV[b + 4] == '1' then
    redis.call('SADD', KEYS[7], ARGV[b])
  else
    redis.call('SREM', KEYS[7], ARGV[b])
  end
end
return 0`)

// SaveTracker compare-and-sets the tracker and incidents atomically.
func (s *Store) SaveTracker(ctx context.Context, t store.Tracker, incidents ...store.Incident) error {
	if t.EndpointID == "" {
		return errors.New("redis store: save tracker: EndpointID is required")
	}
	expected := t.Version
	t.Version++
	traw, err := encode(t)
	if err != nil {
		return err
	}
	keys := []string{s.k("trackers"), s.k("tracker_versions"), s.k("incidents"), s.k("incident_versions"),
		s.k("incidents_by_opened"), s.k("outboxes_pending"), s.k("incidents_open")}
	args := []any{t.EndpointID, expected, traw, flag(t.Pending > 0), len(incidents)}
	for _, inc := range incidents {
		if inc.ID == "" {
			return errors.New("redis store: save tracker: incident ID is required")
		}
		v := inc.Version
		inc.Version++
		raw, err := encode(inc)
		if err != nil {
			return err
		}
		keys = append(keys, s.k("incidents_by_endpoint", inc.EndpointID))
		args = append(args, inc.ID, v, raw, ms(inc.OpenedWindow), flag(inc.State != store.IncidentResolved))
	}
	n, err := saveTracker.Run(ctx, s.rdb, keys, args...).Int()
	if err := s.done("save tracker of "+t.EndpointID, err); err != nil {
		return err
	}
	switch {
	case n == 1:
		return fmt.Errorf("save tracker %s: have version %d: %w", t.EndpointID, expected, store.ErrConflict)
	case n > 1:
		inc := incidents[n-2]
		return fmt.Errorf("save tracker %s: incident %s: have version %d: %w", t.EndpointID, inc.ID, inc.Version, store.ErrConflict)
	}
	return nil
}

// flag is a script argument for a boolean.
func flag(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// PendingOutboxes lists the endpoints whose tracker holds pending
// notifications, from the set saveTracker keeps.
func (s *Store) PendingOutboxes(ctx context.Context) ([]string, error) {
	ids, err := s.rdb.SMembers(ctx, s.k("outboxes_pending")).Result()
	if err := s.done("list pending outboxes", err); err != nil {
		return nil, err
	}
	if ids == nil {
		ids = []string{}
	}
	sort.Strings(ids)
	return ids, nil
}

// CountOpenIncidents is the size of the open-incident set.
func (s *Store) CountOpenIncidents(ctx context.Context) (int, error) {
	n, err := s.rdb.SCard(ctx, s.k("incidents_open")).Result()
	if err := s.done("count open incidents", err); err != nil {
		return 0, err
	}
	return int(n), nil
}

// GetIncident returns the incident or ErrNotFound.
func (s *Store) GetIncident(ctx context.Context, id string) (store.Incident, error) {
	raw, err := s.rdb.HGet(ctx, s.k("incidents"), id).Result()
	if errors.Is(err, goredis.Nil) {
		return store.Incident{}, fmt.Errorf("incident %s: %w", id, store.ErrNotFound)
	}
	if err := s.done("get incident "+id, err); err != nil {
		return store.Incident{}, err
	}
	return decode[store.Incident]("incident "+id, raw)
}

// updateIncident: -1 absent, 0 conflict, 1 written. KEYS: incidents,
// incident_versions, incidents_by_opened, incidents_by_endpoint:<ep>,
// incidents_open. ARGV: id, expected version, json, opened ms, open (1
// unless resolved).
var updateIncident = goredis.NewScript(`
local v = redis.call('HGET', KEYS[2], ARGV[1])
if not v then return -1 end
if tonumber(v) ~= tonumber(ARGV[2]) then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
redis.call('HSET', KEYS[2], ARGV[1], tonumber(ARGV[2]) + 1)
redis.call('ZADD', KEYS[3], ARGV[4], ARGV[1])
redis.call('ZADD', KEYS[4], ARGV[4], ARGV[1])
if ARGV[5] == '1' then
  redis.call('SADD', KEYS[5], ARGV[1])
else
  redis.call('SREM', KEYS[5], ARGV[1])
end
return 1`)

// UpdateIncident compare-and-sets an existing incident; ErrNotFound if absent.
func (s *Store) UpdateIncident(ctx context.Context, inc store.Incident) (store.Incident, error) {
	expected := inc.Version
	inc.Version++
	raw, err := encode(inc)
	if err != nil {
		return store.Incident{}, err
	}
	n, err := updateIncident.Run(ctx, s.rdb,
		[]string{s.k("incidents"), s.k("incident_versions"), s.k("incidents_by_opened"), s.k("incidents_by_endpoint", inc.EndpointID), s.k("incidents_open")},
		inc.ID, expected, raw, ms(inc.OpenedWindow), flag(inc.State != store.IncidentResolved)).Int()
	if err := s.done("update incident "+inc.ID, err); err != nil {
		return store.Incident{}, err
	}
	switch n {
	case -1:
		return store.Incident{}, fmt.Errorf("update incident %s: %w", inc.ID, store.ErrNotFound)
	case 0:
		return store.Incident{}, fmt.Errorf("update incident %s: have version %d: %w", inc.ID, expected, store.ErrConflict)
	}
	return inc, nil
}

// ListIncidents returns matching incidents ordered by OpenedWindow, newest
// first (ties by ID, descending). It walks the per-endpoint index when the
// filter names an endpoint, the global one otherwise, a page at a time.
func (s *Store) ListIncidents(ctx context.Context, f store.IncidentFilter) ([]store.Incident, error) {
	index := s.k("incidents_by_opened")
	if f.EndpointID != "" {
		index = s.k("incidents_by_endpoint", f.EndpointID)
	}
	const page = 200
	out := []store.Incident{}
	for start := int64(0); ; start += page {
		ids, err := s.rdb.ZRevRange(ctx, index, start, start+page-1).Result()
		if err := s.done("list incidents", err); err != nil {
			return nil, err
		}
		if len(ids) == 0 {
			return out, nil
		}
		raws, err := s.rdb.HMGet(ctx, s.k("incidents"), ids...).Result()
		if err := s.done("list incidents", err); err != nil {
			return nil, err
		}
		for i, r := range raws {
			raw, ok := r.(string)
			if !ok {
				continue
			}
			inc, err := decode[store.Incident]("incident "+ids[i], raw)
			if err != nil {
				return nil, err
			}
			if (f.EndpointID != "" && inc.EndpointID != f.EndpointID) || (f.State != "" && inc.State != f.State) {
				continue
			}
			out = append(out, inc)
			if f.Limit > 0 && len(out) >= f.Limit {
				return out, nil
			}
		}
		if len(ids) < page {
			return out, nil
		}
	}
}

// ---- Ledger
//
// A ledger key is one string "<state>|<untilMs>|<owner>": state claimed
// (until = lease end) or done (until = expiry). One script per transition
// decides between done, held, and taking over an expired lease or an
// expired done key, with "now" read from the server's clock (or passed in
// under a fake clock; see the package doc). PX is lease+TTL for claims (a
// crashed holder's key is eventually collected) and TTL for done keys.

// ledgerNow is the scripts' now: ARGV in ms, or "" for the server's TIME.
// TIME before a write needs effects replication, the default since Redis 5
// and the only mode since 7; older servers are asked for it.
const ledgerNow = `
local function now(arg)
  if arg ~= '' then return tonumber(arg) end
  if redis.replicate_commands then redis.replicate_commands() end
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
`

// claimScript: ARGV owner, now, lease ms, PX ms; returns a store.ClaimState.
var claimScript = goredis.NewScript(ledgerNow + `
local nw = now(ARGV[2])
local v = redis.call('GET', KEYS[1])
if v then
  local st, untl, owner = string.match(v, '^(%a+)|(%-?%d+)|(.*)$')
  if st and tonumber(untl) > nw then
    if st == 'done' then return 2 end
    if owner ~= ARGV[1] then return 3 end
  end
end
redis.call('SET', KEYS[1], 'claimed|' .. string.format('%.0f', nw + tonumber(ARGV[3])) .. '|' .. ARGV[1], 'PX', ARGV[4])
return 1`)

// completeScript: ARGV owner, now, TTL ms; 1 done, 0 claim lost.
var completeScript = goredis.NewScript(ledgerNow + `
local nw = now(ARGV[2])
local v = redis.call('GET', KEYS[1])
if not v then return 0 end
local st, untl, owner = string.match(v, '^(%a+)|(%-?%d+)|(.*)$')
if owner ~= ARGV[1] then return 0 end
if st == 'done' then
  if tonumber(untl) > nw then return 1 end
  return 0
end
redis.call('SET', KEYS[1], 'done|' .. string.format('%.0f', nw + tonumber(ARGV[3])) .. '|' .. ARGV[1], 'PX', ARGV[3])
return 1`)

var releaseScript = goredis.NewScript(`
local v = redis.call('GET', KEYS[1])
if v then
  local st, untl, owner = string.match(v, '^(%a+)|(%-?%d+)|(.*)$')
  if st == 'claimed' and owner == ARGV[1] then redis.call('DEL', KEYS[1]) end
end
return 0`)

// Claim takes key for owner for lease (store.DefaultLease if <= 0). Absent
// keys, done keys past their TTL and claims past their lease are acquired; a
// live claim by the same owner is re-acquired (lease renewed).
func (s *Store) Claim(ctx context.Context, key, owner string, lease time.Duration) (store.ClaimState, error) {
	if key == "" || owner == "" {
		return 0, errors.New("redis store: claim: key and owner are required")
	}
	if lease <= 0 {
		lease = store.DefaultLease
	}
	px := lease + s.ttl
	n, err := claimScript.Run(ctx, s.rdb, []string{s.k("ledger", key)}, owner, s.ledgerNow(), lease.Milliseconds(), px.Milliseconds()).Int()
	if err := s.done("claim "+key, err); err != nil {
		return 0, err
	}
	return store.ClaimState(n), nil
}

// ledgerNow is the now the ledger scripts compare deadlines with: "" (the
// server's clock) unless a test injected a *clock.Fake.
func (s *Store) ledgerNow() string {
	if s.serverTime {
		return ""
	}
	return ms(s.clk.Now())
}

// Complete marks owner's claim done for the TTL; see bolt.Store.Complete for
// the exact rules (both backends pass the same suite).
func (s *Store) Complete(ctx context.Context, key, owner string) error {
	n, err := completeScript.Run(ctx, s.rdb, []string{s.k("ledger", key)},
		owner, s.ledgerNow(), s.ttl.Milliseconds()).Int()
	if err := s.done("complete "+key, err); err != nil {
		return err
	}
	if n != 1 {
		return fmt.Errorf("complete ledger key %s for %s: claim lost: %w", key, owner, store.ErrConflict)
	}
	return nil
}

// Release drops owner's claim; a no-op when owner does not hold key.
func (s *Store) Release(ctx context.Context, key, owner string) error {
	err := releaseScript.Run(ctx, s.rdb, []string{s.k("ledger", key)}, owner).Err()
	return s.done("release "+key, err)
}

// ---- Deliveries
//
// One hash per incident, deliveries:<incident>, field kind:sink, value the
// JSON record. The merge (store.MergeDelivery) runs here in Go, shared with
// bolt, and is written back with a compare-and-set on the field's previous
// value; a lost race (two replicas recording the same kind and sink, which
// the ledger makes rare) re-reads and merges again.

// casDelivery: KEYS incidents, deliveries:<id>; ARGV incident id, field,
// expected value ("" for absent), new value. -1 no incident, 0 the field
// changed, 1 written.
var casDelivery = goredis.NewScript(`
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 0 then return -1 end
local cur = redis.call('HGET', KEYS[2], ARGV[2])
if (cur or '') ~= ARGV[3] then return 0 end
redis.call('HSET', KEYS[2], ARGV[2], ARGV[4])
return 1`)

// maxDeliveryCAS bounds the merge retries; each loser saw a new record, so
// running out means a writer storm, not a slow one.
const maxDeliveryCAS = 32

// RecordDelivery merges d into the incident's record, compare-and-set.
func (s *Store) RecordDelivery(ctx context.Context, incidentID string, d store.Delivery) error {
	if err := store.ValidDelivery(incidentID, d); err != nil {
		return fmt.Errorf("redis store: %w", err)
	}
	key, field := s.k("deliveries", incidentID), store.DeliveryField(d)
	op := "record delivery " + field + " of incident " + incidentID
	for range maxDeliveryCAS {
		raw, err := s.rdb.HGet(ctx, key, field).Result()
		if errors.Is(err, goredis.Nil) {
			raw, err = "", nil
		}
		if err := s.done(op, err); err != nil {
			return err
		}
		var cur store.Delivery
		if raw != "" {
			if cur, err = decode[store.Delivery]("delivery "+field, raw); err != nil {
				return err
			}
		}
		next, err := encode(store.MergeDelivery(cur, d))
		if err != nil {
			return err
		}
		n, err := casDelivery.Run(ctx, s.rdb, []string{s.k("incidents"), key}, incidentID, field, raw, next).Int()
		if err := s.done(op, err); err != nil {
			return err
		}
		switch n {
		case -1:
			return fmt.Errorf("%s: %w", op, store.ErrNotFound)
		case 1:
			return nil
		}
	}
	return fmt.Errorf("%s: %w", op, store.ErrConflict)
}

// Deliveries returns the incident's records in store.SortDeliveries order.
func (s *Store) Deliveries(ctx context.Context, incidentID string) ([]store.Delivery, error) {
	all, err := s.rdb.HGetAll(ctx, s.k("deliveries", incidentID)).Result()
	if err := s.done("deliveries of incident "+incidentID, err); err != nil {
		return nil, err
	}
	out := make([]store.Delivery, 0, len(all))
	for field, raw := range all {
		d, err := decode[store.Delivery]("delivery "+field, raw)
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	store.SortDeliveries(out)
	return out, nil
}

// ---- Objects

// PutObject stores doc under kind/id.
func (s *Store) PutObject(ctx context.Context, kind, id string, doc []byte) error {
	if kind == "" || id == "" {
		return errors.New("redis store: put object: kind and id are required")
	}
	return s.done("put object "+kind+"/"+id, s.rdb.HSet(ctx, s.k("objects", kind), id, doc).Err())
}

// GetObject returns the document or ErrNotFound.
func (s *Store) GetObject(ctx context.Context, kind, id string) ([]byte, error) {
	doc, err := s.rdb.HGet(ctx, s.k("objects", kind), id).Bytes()
	if errors.Is(err, goredis.Nil) {
		return nil, fmt.Errorf("object %s/%s: %w", kind, id, store.ErrNotFound)
	}
	if err := s.done("get object "+kind+"/"+id, err); err != nil {
		return nil, err
	}
	return doc, nil
}

// ListObjects returns every document of kind by ID (empty map if none).
func (s *Store) ListObjects(ctx context.Context, kind string) (map[string][]byte, error) {
	all, err := s.rdb.HGetAll(ctx, s.k("objects", kind)).Result()
	if err := s.done("list objects "+kind, err); err != nil {
		return nil, err
	}
	out := make(map[string][]byte, len(all))
	for id, doc := range all {
		out[id] = []byte(doc)
	}
	return out, nil
}

// DeleteObject removes the document; ErrNotFound if absent.
func (s *Store) DeleteObject(ctx context.Context, kind, id string) error {
	n, err := s.rdb.HDel(ctx, s.k("objects", kind), id).Result()
	if err := s.done("delete object "+kind+"/"+id, err); err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("delete object %s/%s: %w", kind, id, store.ErrNotFound)
	}
	return nil
}

// RouteDriverLogs sends go-redis's own log lines (one per failed dial, which
// during an outage means many) to l at Debug level instead of stderr, so the
// store's once-per-outage warning is what operators see. go-redis keeps its
// logger in a package variable, so this affects every go-redis client in the
// process: call it once from main, not from libraries or parallel tests.
func RouteDriverLogs(l *slog.Logger) {
	goredis.SetLogger(driverLog{l.With("component", "go-redis")})
}

type driverLog struct{ l *slog.Logger }

func (d driverLog) Printf(ctx context.Context, format string, v ...any) {
	d.l.DebugContext(ctx, fmt.Sprintf(format, v...))
}
