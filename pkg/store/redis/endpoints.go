package redis

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"

	goredis "github.com/redis/go-redis/v9"

	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/store"
)

// The per-tenant index: "endpoint_tenants" maps each endpoint ID to its
// tenant, "tenant_endpoints:<tenant>" is the set of the tenant's IDs and
// "tenant_endpoint_ids:<tenant>" the same IDs as a sorted set, all scored
// 0, so ZRANGEBYLEX pages them by ID. Every script that adds or removes an
// endpoint keeps all three in the same script, so a tenant's list is
// SMEMBERS + HMGET of its own size, a page is ZRANGEBYLEX + HMGET of the
// page's, and the quota count is SCARD. "endpoint_ids_indexed" counts the
// endpoints the sorted sets hold (indexTenantIDs).

// createEndpoint: 0 the ID exists, -1 the tenant is at its limit (ARGV[4],
// 0 = none), 1 written. KEYS[8] and ARGV[5] are the shard's stamp
// (shardStampKey).
var createEndpoint = goredis.NewScript(`
if redis.call('HEXISTS', KEYS[2], ARGV[1]) == 1 then return 0 end
local limit = tonumber(ARGV[4])
if limit > 0 and redis.call('SCARD', KEYS[4]) >= limit then return -1 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('HSET', KEYS[2], ARGV[1], 1)
if redis.call('HSET', KEYS[3], ARGV[1], ARGV[3]) == 1 then
  redis.call('INCR', KEYS[6])
end
redis.call('SADD', KEYS[4], ARGV[1])
redis.call('ZADD', KEYS[5], 0, ARGV[1])
redis.call('INCR', KEYS[7])
if ARGV[5] ~= '' then redis.call('HINCRBY', KEYS[8], ARGV[5], 1) end
return 1`)

// indexTenantIDs fills the sorted sets from "endpoint_tenants" when the
// count of endpoints they hold (KEYS[2], kept by the create and delete
// scripts) differs from the endpoints indexed by tenant: the first start
// after an upgrade, or after a replica of an older version created
// endpoints. ZADD is idempotent, so a rerun only costs time. An older
// replica's delete leaves its ID in the sorted set: a page skips IDs
// without a record, so that costs a slot of a page, never a wrong answer.
// The sorted sets' keys are ARGV[1]..tenant: the prefix carries any
// cluster hash tag, so they share the slot of KEYS.
var indexTenantIDs = goredis.NewScript(`
local have = tonumber(redis.call('GET', KEYS[2]) or '-1')
if have == redis.call('HLEN', KEYS[1]) then return 0 end
local kv = redis.call('HGETALL', KEYS[1])
local n = 0
for i = 1, #kv, 2 do
  n = n + redis.call('ZADD', ARGV[1] .. kv[i+1], 0, kv[i])
end
redis.call('SET', KEYS[2], #kv / 2)
return n`)

// indexTenants lists the endpoints written before tenants (or by a replica
// of an older version) in DefaultTenant's set. Equal hash lengths mean
// every endpoint is indexed: then it costs two HLENs.
var indexTenants = goredis.NewScript(`
if redis.call('HLEN', KEYS[1]) == redis.call('HLEN', KEYS[2]) then return 0 end
local n = 0
for _, id in ipairs(redis.call('HKEYS', KEYS[1])) do
  if redis.call('HSETNX', KEYS[2], id, ARGV[1]) == 1 then
    redis.call('SADD', KEYS[3], id)
    n = n + 1
  end
end
return n`)

// tenantSet and tenantIDs are shard sh's part of the tenant's index.
func (s *Store) tenantSet(sh int, tenant string) string {
	return s.ks(sh, "tenant_endpoints", model.TenantOf(tenant))
}

func (s *Store) tenantIDs(sh int, tenant string) string {
	return s.ks(sh, "tenant_endpoint_ids", model.TenantOf(tenant))
}

// IndexTenants puts every endpoint missing from the per-tenant index into
// DefaultTenant's (records from before tenants carry no tenant) and returns
// how many it added. New runs it; it is idempotent and cheap once done.
func (s *Store) IndexTenants(ctx context.Context) (int, error) {
	n, err := indexTenants.Run(ctx, s.rdb, []string{s.k("endpoints"), s.k("endpoint_tenants"), s.tenantSet(0, model.DefaultTenant)},
		model.DefaultTenant).Int()
	if err := s.done("index endpoints by tenant", err); err != nil {
		return n, err
	}
	m, err := indexTenantIDs.Run(ctx, s.rdb, []string{s.k("endpoint_tenants"), s.k("endpoint_ids_indexed")},
		s.k("tenant_endpoint_ids")+":").Int()
	if err := s.done("index endpoint IDs by tenant", err); err != nil {
		return n, err
	}
	if m > 0 {
		s.log.Info("endpoints listed in the per-tenant sorted index", "endpoints", m)
	}
	return n, nil
}

// updateEndpoint: -1 absent, 0 version conflict, 1 written. KEYS[4] and
// ARGV[5] are the shard's stamp (shardStampKey).
var updateEndpoint = goredis.NewScript(`
local v = redis.call('HGET', KEYS[2], ARGV[1])
if not v then return -1 end
if v ~= ARGV[2] then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
redis.call('HSET', KEYS[2], ARGV[1], ARGV[4])
redis.call('INCR', KEYS[3])
if ARGV[5] ~= '' then redis.call('HINCRBY', KEYS[4], ARGV[5], 1) end
return 1`)

// CreateEndpoint stores a new endpoint with Version 1; ErrConflict if the ID
// exists.
func (s *Store) CreateEndpoint(ctx context.Context, e model.Endpoint) (model.Endpoint, error) {
	return s.CreateEndpointWithin(ctx, e, 0)
}

// CreateEndpointWithin is CreateEndpoint refusing with ErrQuota when e's
// tenant already has limit endpoints (limit <= 0: none). The count (SCARD)
// and the write are one script: every replica's creates are serialised by
// Redis, so the limit holds across replicas.
func (s *Store) CreateEndpointWithin(ctx context.Context, e model.Endpoint, limit int) (model.Endpoint, error) {
	e, err := store.FirstEndpointVersion(e, s.clk.Now())
	if err != nil {
		return model.Endpoint{}, fmt.Errorf("redis store: %w", err)
	}
	raw, err := encode(e)
	if err != nil {
		return model.Endpoint{}, err
	}
	if s.sharded {
		return e, s.createSharded(ctx, e, raw, limit)
	}
	n, err := s.runCreateEndpoint(ctx, e, raw, limit)
	if err != nil {
		return model.Endpoint{}, err
	}
	if err := createResult(n, e, limit); err != nil {
		return model.Endpoint{}, err
	}
	return e, nil
}

// runCreateEndpoint runs createEndpoint in e's shard; limit is checked
// against the shard's part of the tenant's index (the whole index when
// unsharded).
func (s *Store) runCreateEndpoint(ctx context.Context, e model.Endpoint, raw string, limit int) (int, error) {
	sh := s.shard(e.ID)
	stampKey, stampField := s.shardStampKey(e.ID)
	n, err := createEndpoint.Run(ctx, s.rdb, []string{s.ks(sh, "endpoints"), s.ks(sh, "endpoint_versions"), s.ks(sh, "endpoint_tenants"), s.tenantSet(sh, e.Tenant),
		s.tenantIDs(sh, e.Tenant), s.ks(sh, "endpoint_ids_indexed"), s.ks(sh, "endpoints_stamp"), stampKey},
		e.ID, raw, e.Tenant, max(limit, 0), stampField).Int()
	return n, s.done("create endpoint "+e.ID, err)
}

// createResult turns createEndpoint's answer into CreateEndpointWithin's error.
func createResult(n int, e model.Endpoint, limit int) error {
	switch n {
	case 0:
		return fmt.Errorf("create endpoint %s: already exists: %w", e.ID, store.ErrConflict)
	case -1:
		return fmt.Errorf("create endpoint %s: tenant %q has %d endpoints: %w", e.ID, e.Tenant, limit, store.ErrQuota)
	}
	return nil
}

// UpdateEndpoint replaces the endpoint if e.Version matches the stored one.
func (s *Store) UpdateEndpoint(ctx context.Context, e model.Endpoint) (model.Endpoint, error) {
	cur, err := s.GetEndpoint(ctx, e.ID)
	if err != nil {
		return model.Endpoint{}, fmt.Errorf("update endpoint: %w", err)
	}
	if e, err = store.NextEndpointVersion(cur, e, s.clk.Now()); err != nil {
		return model.Endpoint{}, err
	}
	raw, err := encode(e)
	if err != nil {
		return model.Endpoint{}, err
	}
	stampKey, stampField := s.shardStampKey(e.ID)
	n, err := updateEndpoint.Run(ctx, s.rdb, []string{s.ke(e.ID, "endpoints"), s.ke(e.ID, "endpoint_versions"), s.ke(e.ID, "endpoints_stamp"), stampKey},
		e.ID, cur.Version, raw, e.Version, stampField).Int()
	if err := s.done("update endpoint "+e.ID, err); err != nil {
		return model.Endpoint{}, err
	}
	switch n {
	case -1:
		return model.Endpoint{}, fmt.Errorf("update endpoint %s: %w", e.ID, model.ErrNotFound)
	case 0:
		return model.Endpoint{}, fmt.Errorf("update endpoint %s: changed concurrently: %w", e.ID, store.ErrConflict)
	}
	return e, nil
}

// EndpointsStamp returns a number that changes whenever an endpoint is
// created, updated or deleted (a counter per shard the three scripts
// increment, summed: each only grows), so a reader that lists every
// endpoint periodically can skip a listing while it stays the same.
func (s *Store) EndpointsStamp(ctx context.Context) (uint64, error) {
	return s.shardStamp(ctx, "endpoints_stamp", "read the endpoints stamp")
}

// shardStamp sums a counter kept per shard under key (each only grows, so
// the sum changes whenever one does); a shard without one counts 0.
func (s *Store) shardStamp(ctx context.Context, key, what string) (uint64, error) {
	cmds, err := perShard(ctx, s, what, func(p goredis.Pipeliner, sh int) *goredis.StringCmd {
		return p.Get(ctx, s.ks(sh, key))
	})
	if err != nil {
		return 0, err
	}
	var sum uint64
	for _, c := range cmds {
		n, err := c.Uint64()
		if errors.Is(err, goredis.Nil) {
			continue
		}
		if err := s.done(what, err); err != nil {
			return 0, err
		}
		sum += n
	}
	return sum, nil
}

// shardStampKey is the key and field of the stamp of endpoint id's shard
// that its create, update and delete scripts bump. Sharded, the shard's
// endpoints_stamp is that stamp already (field "": nothing more to bump);
// in the one-slot layout it is field <shard> of "endpoint_shard_stamps".
func (s *Store) shardStampKey(id string) (key, field string) {
	if s.sharded {
		return s.ke(id, "endpoints_stamp"), ""
	}
	return s.k("endpoint_shard_stamps"), strconv.Itoa(shardOf(id))
}

// EndpointsStampsIn returns each shard's endpoints stamp: sharded, a GET
// of the shard's endpoints_stamp per shard (one slot each, in one
// pipeline); in the one-slot layout one HMGET of endpoint_shard_stamps.
// A shard never written (or out of range) reads 0.
func (s *Store) EndpointsStampsIn(ctx context.Context, shards []int) ([]uint64, error) {
	const op = "read the endpoints stamps of shards"
	out := make([]uint64, len(shards))
	var valid []int // indexes into shards
	for i, sh := range shards {
		if sh >= 0 && sh < store.ShardCount {
			valid = append(valid, i)
		}
	}
	if len(valid) == 0 {
		return out, nil
	}
	var vals []any
	if s.sharded {
		in := make([]int, len(valid))
		for j, i := range valid {
			in[j] = shards[i]
		}
		cmds, err := inShards(ctx, s, op, in, func(p goredis.Pipeliner, sh int) *goredis.StringCmd {
			return p.Get(ctx, s.ks(sh, "endpoints_stamp"))
		})
		if err != nil {
			return nil, err
		}
		for _, c := range cmds {
			v, err := c.Result()
			if errors.Is(err, goredis.Nil) {
				vals = append(vals, nil)
				continue
			}
			if err := s.done(op, err); err != nil {
				return nil, err
			}
			vals = append(vals, v)
		}
	} else {
		fields := make([]string, len(valid))
		for j, i := range valid {
			fields[j] = strconv.Itoa(shards[i])
		}
		var err error
		vals, err = s.rdb.HMGet(ctx, s.k("endpoint_shard_stamps"), fields...).Result()
		if err := s.done(op, err); err != nil {
			return nil, err
		}
	}
	for j, v := range vals {
		raw, ok := v.(string)
		if !ok {
			continue // never written
		}
		n, err := strconv.ParseUint(raw, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("redis store: endpoints stamp of shard %d: %w", shards[valid[j]], err)
		}
		out[valid[j]] = n
	}
	return out, nil
}

// GetEndpoint returns the endpoint or ErrNotFound.
// An endpoint unchanged since this replica last read it is not decoded
// again (store.EndpointDecoder compares the record's bytes).
func (s *Store) GetEndpoint(ctx context.Context, id string) (model.Endpoint, error) {
	raw, err := s.rdb.HGet(ctx, s.ke(id, "endpoints"), id).Result()
	if errors.Is(err, goredis.Nil) {
		s.eps.Forget(id)
		return model.Endpoint{}, fmt.Errorf("endpoint %s: %w", id, model.ErrNotFound)
	}
	if err := s.done("get endpoint "+id, err); err != nil {
		return model.Endpoint{}, err
	}
	e, err := s.eps.DecodeString(id, raw)
	if err != nil {
		return model.Endpoint{}, fmt.Errorf("redis store: %w", err)
	}
	return e, nil
}

// ListEndpoints returns every endpoint ordered by ID.
func (s *Store) ListEndpoints(ctx context.Context) ([]model.Endpoint, error) {
	cmds, err := perShard(ctx, s, "list endpoints", func(p goredis.Pipeliner, sh int) *goredis.MapStringStringCmd {
		return p.HGetAll(ctx, s.ks(sh, "endpoints"))
	})
	if err != nil {
		return nil, err
	}
	return decodeEndpoints(cmds, func(string) bool { return true })
}

// decodeEndpoints decodes the endpoints of HGETALL replies whose ID keep
// accepts, ordered by ID.
func decodeEndpoints(cmds []*goredis.MapStringStringCmd, keep func(id string) bool) ([]model.Endpoint, error) {
	out := []model.Endpoint{}
	for _, c := range cmds {
		for id, raw := range c.Val() {
			if !keep(id) {
				continue
			}
			e, err := decode[model.Endpoint]("endpoint "+id, raw)
			if err != nil {
				return nil, err
			}
			out = append(out, e)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// ListEndpointsIn returns the endpoints of shards ordered by ID. Sharded,
// it reads only those shards' hashes (an HGETALL each, one slot each, in
// one pipeline); the one-slot layout keeps every endpoint in one hash, so
// it reads the whole hash and decodes only the shards' records.
func (s *Store) ListEndpointsIn(ctx context.Context, shards []int) ([]model.Endpoint, error) {
	const op = "list endpoints of shards"
	want := store.ShardSet(shards)
	var read []int
	if s.sharded {
		for sh, ok := range want {
			if ok {
				read = append(read, sh)
			}
		}
	} else if slices.Contains(want[:], true) {
		read = []int{0}
	}
	cmds, err := inShards(ctx, s, op, read, func(p goredis.Pipeliner, sh int) *goredis.MapStringStringCmd {
		return p.HGetAll(ctx, s.ks(sh, "endpoints"))
	})
	if err != nil {
		return nil, err
	}
	return decodeEndpoints(cmds, func(id string) bool { return want[shardOf(id)] })
}

// ListEndpointsOf returns the tenant's endpoints ordered by ID: the
// tenant's set, then its records. One deleted between the two reads is
// left out.
func (s *Store) ListEndpointsOf(ctx context.Context, tenant string) ([]model.Endpoint, error) {
	cmds, err := perShard(ctx, s, "list endpoints of tenant", func(p goredis.Pipeliner, sh int) *goredis.StringSliceCmd {
		return p.SMembers(ctx, s.tenantSet(sh, tenant))
	})
	if err != nil {
		return nil, err
	}
	ids := make([]string, 0)
	for _, c := range cmds {
		ids = append(ids, c.Val()...)
	}
	out, err := s.endpointsByID(ctx, ids, "list endpoints of tenant")
	if err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// ListEndpointsPage returns the tenant's endpoints after the ID `after`,
// at most limit: ZRANGEBYLEX of limit+1 IDs from the tenant's sorted set,
// then HMGET of the first limit. An endpoint deleted between the two reads
// is left out; Next still covers it.
func (s *Store) ListEndpointsPage(ctx context.Context, tenant, after string, limit int) (store.EndpointPage, error) {
	page := store.EndpointPage{Endpoints: []model.Endpoint{}}
	if limit <= 0 {
		return page, nil
	}
	from := "-"
	if after != "" {
		from = "(" + after
	}
	cmds, err := perShard(ctx, s, "list endpoints of tenant", func(p goredis.Pipeliner, sh int) *goredis.StringSliceCmd {
		return p.ZRangeByLex(ctx, s.tenantIDs(sh, tenant), &goredis.ZRangeBy{Min: from, Max: "+", Count: int64(limit) + 1})
	})
	if err != nil {
		return page, err
	}
	var ids []string
	for _, c := range cmds {
		ids = append(ids, c.Val()...)
	}
	sort.Strings(ids) // each shard's IDs come sorted; the first limit+1 of their union are the page's
	if len(ids) > limit+1 {
		ids = ids[:limit+1]
	}
	if len(ids) > limit {
		ids = ids[:limit]
		page.Next = ids[limit-1]
	}
	if len(ids) == 0 {
		return page, nil
	}
	page.Endpoints, err = s.endpointsByID(ctx, ids, "list endpoints of tenant")
	if err != nil {
		return page, err
	}
	sort.Slice(page.Endpoints, func(i, j int) bool { return page.Endpoints[i].ID < page.Endpoints[j].ID })
	return page, nil
}

// endpointsByID reads the records of ids, one HMGET per shard they span
// in one pipeline, skipping those gone since the IDs were listed; the
// order is the shards', so callers sort.
func (s *Store) endpointsByID(ctx context.Context, ids []string, op string) ([]model.Endpoint, error) {
	byShard := map[int][]string{}
	for _, id := range ids {
		sh := s.shard(id)
		byShard[sh] = append(byShard[sh], id)
	}
	cmds := map[int]*goredis.SliceCmd{}
	_, err := s.rdb.Pipelined(ctx, func(p goredis.Pipeliner) error {
		for sh, ids := range byShard {
			cmds[sh] = p.HMGet(ctx, s.ks(sh, "endpoints"), ids...)
		}
		return nil
	})
	if err := s.done(op, err); err != nil {
		return nil, err
	}
	out := make([]model.Endpoint, 0, len(ids))
	for sh, c := range cmds {
		for i, r := range c.Val() {
			raw, ok := r.(string)
			if !ok {
				continue
			}
			e, err := decode[model.Endpoint]("endpoint "+byShard[sh][i], raw)
			if err != nil {
				return nil, err
			}
			out = append(out, e)
		}
	}
	return out, nil
}

// deleteEndpoint removes the endpoint, its latest result, every undecided
// window (the per-endpoint results hash and its members of the global
// "windows" set, found from the hash's "<windowMs>|..." fields) and the
// prober's documents of it (tool catalog, server identity, pinned OAuth
// authorization server: KEYS[7], KEYS[8], KEYS[15]), its own and every
// region's (the regions listed in KEYS[14], see PutObject; ARGV[3] is
// store.RegionSeparator). 1: the endpoint existed.
// KEYS[10] is the set of ARGV[2], the tenant the caller read from
// KEYS[9]; -1 if that changed since (the ID was deleted and created again in
// another tenant): the caller reads again. KEYS[16] and ARGV[4] are the
// shard's stamp (shardStampKey).
var deleteEndpoint = goredis.NewScript(`
local t = redis.call('HGET', KEYS[9], ARGV[1])
if t and t ~= ARGV[2] then return -1 end
redis.call('SREM', KEYS[10], ARGV[1])
redis.call('ZREM', KEYS[11], ARGV[1])
if redis.call('HDEL', KEYS[9], ARGV[1]) == 1 then
  redis.call('DECR', KEYS[12])
end
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
redis.call('HDEL', KEYS[15], ARGV[1])
for _, r in ipairs(redis.call('SMEMBERS', KEYS[14])) do
  redis.call('HDEL', KEYS[7], ARGV[1] .. ARGV[3] .. r)
  redis.call('HDEL', KEYS[8], ARGV[1] .. ARGV[3] .. r)
  redis.call('HDEL', KEYS[15], ARGV[1] .. ARGV[3] .. r)
end
redis.call('DEL', KEYS[14])
if n == 1 then
  redis.call('INCR', KEYS[13])
  if ARGV[4] ~= '' then redis.call('HINCRBY', KEYS[16], ARGV[4], 1) end
end
return n`)

// DeleteEndpoint removes the endpoint with its latest probe result, its
// undecided windows and the prober's documents of it (every region's) in
// one script; ErrNotFound if
// absent (the cleanup still runs, so a repeated delete removes what a probe
// in flight at the first one wrote back). Verdict history, the tracker,
// incidents and ledger keys stay: history ages out, incidents are the audit
// trail.
func (s *Store) DeleteEndpoint(ctx context.Context, id string) error {
	var n int
	for range 3 {
		tenant, err := s.rdb.HGet(ctx, s.ke(id, "endpoint_tenants"), id).Result()
		if errors.Is(err, goredis.Nil) {
			tenant, err = model.DefaultTenant, nil
		}
		if err := s.done("delete endpoint "+id, err); err != nil {
			return err
		}
		if err := s.leaveQuota(ctx, tenant, id); err != nil {
			return err
		}
		sh := s.shard(id)
		stampKey, stampField := s.shardStampKey(id)
		n, err = deleteEndpoint.Run(ctx, s.rdb, []string{
			s.ks(sh, "endpoints"), s.ks(sh, "endpoint_versions"), s.ks(sh, "latest"), s.ks(sh, "latest_slot"),
			s.ks(sh, "window_results", id), s.ks(sh, "windows"),
			s.ks(sh, "objects", store.KindCatalog), s.ks(sh, "objects", store.KindServerIdentity),
			s.ks(sh, "endpoint_tenants"), s.tenantSet(sh, tenant), s.tenantIDs(sh, tenant), s.ks(sh, "endpoint_ids_indexed"), s.ks(sh, "endpoints_stamp"),
			s.objectRegions(id), s.ks(sh, "objects", store.KindAuthServer), stampKey,
		}, id, tenant, store.RegionSeparator, stampField).Int()
		if err := s.done("delete endpoint "+id, err); err != nil {
			return err
		}
		if n != -1 {
			if err := s.dropQuota(ctx, tenant, id); err != nil {
				return err
			}
		}
		if n != -1 {
			break
		}
	}
	if n == -1 {
		return fmt.Errorf("delete endpoint %s: its tenant kept changing: %w", id, store.ErrConflict)
	}
	s.eps.Forget(id)
	if n == 0 {
		return fmt.Errorf("delete endpoint %s: %w", id, model.ErrNotFound)
	}
	return nil
}
