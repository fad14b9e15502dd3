// The tenant endpoint quota of the sharded layout: a tenant's endpoints
// span shards, so the count a limit is checked against is the sorted set
// tenant_quota:<tenant> in the global slot, member the endpoint ID, score
// 0 once its endpoint exists or the time of a step in flight (a create's
// reservation, a delete's mark). docs/design/redis-cluster.md has the
// steps and what a crash between them costs.

package redis

import (
	"context"
	"errors"
	"fmt"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/mcpmon/mcpmon/pkg/model"
)

// quotaStale is how old a member in flight must be before a full set
// checks whether its endpoint exists: longer than any create or delete
// takes between its steps.
const quotaStale = time.Minute

// reserveQuota: ARGV id, limit (0: none), now ms. 2 the ID is a member
// already, -1 the set holds limit IDs, 1 reserved.
var reserveQuota = goredis.NewScript(`
if redis.call('ZSCORE', KEYS[1], ARGV[1]) then return 2 end
local limit = tonumber(ARGV[2])
if limit > 0 and redis.call('ZCARD', KEYS[1]) >= limit then return -1 end
redis.call('ZADD', KEYS[1], ARGV[3], ARGV[1])
return 1`)

// dropStaleQuota removes member ARGV[1] if its score is still ARGV[2].
var dropStaleQuota = goredis.NewScript(`
if redis.call('ZSCORE', KEYS[1], ARGV[1]) == ARGV[2] then redis.call('ZREM', KEYS[1], ARGV[1]) end
return 0`)

func (s *Store) quotaSet(tenant string) string { return s.k("tenant_quota", model.TenantOf(tenant)) }

// createSharded is CreateEndpointWithin in the sharded layout: reserve a
// place in the tenant's set, create in the endpoint's shard, confirm.
func (s *Store) createSharded(ctx context.Context, e model.Endpoint, raw string, limit int) error {
	op := "create endpoint " + e.ID
	r, err := s.reserve(ctx, e, limit)
	if err != nil {
		return err
	}
	if r == -1 {
		if err := s.pruneQuota(ctx, e.Tenant); err != nil {
			return err
		}
		if r, err = s.reserve(ctx, e, limit); err != nil {
			return err
		}
	}
	if r == -1 {
		return createResult(-1, e, limit)
	}
	n, err := s.runCreateEndpoint(ctx, e, raw, 0)
	if err != nil {
		return err // the reservation ages out unless the create landed
	}
	if n == 0 {
		if r == 1 {
			if err := s.unreserve(ctx, e.Tenant, e.ID, op); err != nil {
				return err
			}
		}
		return createResult(0, e, limit)
	}
	return s.done(op, s.rdb.ZAddXX(ctx, s.quotaSet(e.Tenant), goredis.Z{Score: 0, Member: e.ID}).Err())
}

func (s *Store) reserve(ctx context.Context, e model.Endpoint, limit int) (int, error) {
	r, err := reserveQuota.Run(ctx, s.rdb, []string{s.quotaSet(e.Tenant)}, e.ID, max(limit, 0), ms(s.clk.Now())).Int()
	return r, s.done("reserve a place for endpoint "+e.ID, err)
}

// unreserve drops the reservation of an ID that exists already, unless it
// exists in this tenant (another create of the same ID won, and its
// member is the one just reserved).
func (s *Store) unreserve(ctx context.Context, tenant, id, op string) error {
	owner, err := s.endpointOwner(ctx, id, op)
	if err != nil {
		return err
	}
	if owner == model.TenantOf(tenant) {
		return nil
	}
	return s.done(op, s.rdb.ZRem(ctx, s.quotaSet(tenant), id).Err())
}

// endpointOwner is the tenant of endpoint id, "" if there is none.
func (s *Store) endpointOwner(ctx context.Context, id, op string) (string, error) {
	owner, err := s.rdb.HGet(ctx, s.ke(id, "endpoint_tenants"), id).Result()
	if errors.Is(err, goredis.Nil) {
		return "", nil
	}
	return owner, s.done(op, err)
}

// pruneQuota settles the tenant's members in flight for longer than
// quotaStale: confirmed if their endpoint exists in the tenant, removed
// if not (a create or delete that stopped between its steps).
func (s *Store) pruneQuota(ctx context.Context, tenant string) error {
	op := "settle the endpoint quota of tenant " + model.TenantOf(tenant)
	key := s.quotaSet(tenant)
	stale, err := s.rdb.ZRangeByScoreWithScores(ctx, key, &goredis.ZRangeBy{Min: "(0", Max: ms(s.clk.Now().Add(-quotaStale))}).Result()
	if err := s.done(op, err); err != nil {
		return err
	}
	for _, z := range stale {
		id, _ := z.Member.(string)
		owner, err := s.endpointOwner(ctx, id, op)
		if err != nil {
			return err
		}
		if owner == model.TenantOf(tenant) {
			err = s.rdb.ZAddXX(ctx, key, goredis.Z{Score: 0, Member: id}).Err()
		} else {
			err = dropStaleQuota.Run(ctx, s.rdb, []string{key}, id, fmt.Sprintf("%.0f", z.Score)).Err()
		}
		if err := s.done(op, err); err != nil {
			return err
		}
	}
	return nil
}

// leaveQuota marks the tenant's member id in flight before its endpoint
// is deleted, so a delete that stops after it is settled by pruneQuota.
func (s *Store) leaveQuota(ctx context.Context, tenant, id string) error {
	if !s.sharded {
		return nil
	}
	err := s.rdb.ZAddXX(ctx, s.quotaSet(tenant), goredis.Z{Score: float64(s.clk.Now().UnixMilli()), Member: id}).Err()
	return s.done("delete endpoint "+id, err)
}

// dropQuota removes id from the tenant's set once its endpoint is gone.
func (s *Store) dropQuota(ctx context.Context, tenant, id string) error {
	if !s.sharded {
		return nil
	}
	return s.done("delete endpoint "+id, s.rdb.ZRem(ctx, s.quotaSet(tenant), id).Err())
}
