package redis

import (
	"context"
	"fmt"
	"sort"

	goredis "github.com/redis/go-redis/v9"

	"github.com/mcpmon/mcpmon/pkg/store"
)

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
	e, err := store.FirstEndpointVersion(e, s.clk.Now())
	if err != nil {
		return store.Endpoint{}, fmt.Errorf("redis store: %w", err)
	}
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
	if e, err = store.NextEndpointVersion(cur, e, s.clk.Now()); err != nil {
		return store.Endpoint{}, err
	}
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
	return hgetJSON[store.Endpoint](ctx, s, s.k("endpoints"), id, "get endpoint "+id, "endpoint "+id)
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
