// The tenant-scoped reads and indexes of incidents and tenant-owned
// objects (store.TenantKinds), and the start-up pass that indexes records
// written before those indexes existed.
//
// Keys: "incident_tenants" maps each incident ID to its tenant and
// "incidents_by_tenant:<tenant>" is the tenant's incidents scored by
// opening window (both written by the incident scripts in incidents.go).
// For a tenant kind, "object_tenants:<kind>" maps each ID to its tenant,
// "tenant_objects:<kind>:<tenant>" is the tenant's set of IDs and
// "objects_stamp:<kind>:<tenant>" its stamp, all written by the script
// that writes the document.

package redis

import (
	"context"
	"errors"
	"fmt"
	"sort"

	goredis "github.com/redis/go-redis/v9"

	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/store"
)

// getOwned returns record ARGV[1] of hash KEYS[2] only if hash KEYS[1]
// names ARGV[2] as its tenant: a foreign ID and a missing one both cost
// one HGET of the owners hash and answer nil.
var getOwned = goredis.NewScript(`
if redis.call('HGET', KEYS[1], ARGV[1]) ~= ARGV[2] then return false end
return redis.call('HGET', KEYS[2], ARGV[1])`)

func (s *Store) owned(ctx context.Context, owners, records, tenant, id, op string) (string, bool, error) {
	raw, err := getOwned.Run(ctx, s.rdb, []string{owners, records}, id, model.TenantOf(tenant)).Text()
	if errors.Is(err, goredis.Nil) {
		return "", false, nil
	}
	if err := s.done(op, err); err != nil {
		return "", false, err
	}
	return raw, true, nil
}

// GetEndpointOf returns the tenant's endpoint, checked against
// "endpoint_tenants" in the script that reads it.
func (s *Store) GetEndpointOf(ctx context.Context, tenant, id string) (model.Endpoint, error) {
	raw, ok, err := s.owned(ctx, s.ke(id, "endpoint_tenants"), s.ke(id, "endpoints"), tenant, id, "get endpoint "+id)
	if err != nil {
		return model.Endpoint{}, err
	}
	if !ok {
		return model.Endpoint{}, fmt.Errorf("endpoint %s: %w", id, model.ErrNotFound)
	}
	return decode[model.Endpoint]("endpoint "+id, raw)
}

// GetIncidentOf returns the tenant's incident, checked against
// "incident_tenants" in the script that reads it.
func (s *Store) GetIncidentOf(ctx context.Context, tenant, id string) (model.Incident, error) {
	sh, ok, err := s.incidentShard(ctx, id)
	if err != nil {
		return model.Incident{}, err
	}
	if !ok {
		return model.Incident{}, fmt.Errorf("incident %s: %w", id, model.ErrNotFound)
	}
	raw, ok, err := s.owned(ctx, s.ks(sh, "incident_tenants"), s.ks(sh, "incidents"), tenant, id, "get incident "+id)
	if err != nil {
		return model.Incident{}, err
	}
	if !ok {
		return model.Incident{}, fmt.Errorf("incident %s: %w", id, model.ErrNotFound)
	}
	return decode[model.Incident]("incident "+id, raw)
}

func (s *Store) tenantIncidents(sh int, tenant string) string {
	return s.ks(sh, "incidents_by_tenant", model.TenantOf(tenant))
}

func (s *Store) objectOwners(kind string) string { return s.k("object_tenants", kind) }

// tenantObjectsPrefix and objectsStampPrefix end where the tenant goes:
// the scripts append the tenant a document names, or named before.
func (s *Store) tenantObjectsPrefix(kind string) string { return s.k("tenant_objects", kind) + ":" }
func (s *Store) objectsStampPrefix(kind string) string  { return s.k("objects_stamp", kind) + ":" }

// putTenantObject writes document ARGV[2] as ARGV[1] of tenant ARGV[3]:
// it moves the ID from the tenant that held it before (bumping both
// stamps, and the kind's store.AnyTenant stamp '*') and refuses (-1) an ID new to the tenant when the tenant's set
// holds ARGV[4] IDs (0: no limit). KEYS: objects:<kind>,
// object_tenants:<kind>; ARGV[5], ARGV[6]: the set and stamp prefixes.
// With ARGV[7] '1' it writes only while the document is ARGV[8]: -3 when
// it is absent, -2 when it holds something else (SwapObject).
var putTenantObject = goredis.NewScript(`
if ARGV[7] == '1' then
  local cur = redis.call('HGET', KEYS[1], ARGV[1])
  if not cur then return -3 end
  if cur ~= ARGV[8] then return -2 end
end
local old = redis.call('HGET', KEYS[2], ARGV[1])
local set = ARGV[5] .. ARGV[3]
local limit = tonumber(ARGV[4])
if old ~= ARGV[3] and limit > 0 and redis.call('SCARD', set) >= limit then return -1 end
if old and old ~= ARGV[3] then
  redis.call('SREM', ARGV[5] .. old, ARGV[1])
  redis.call('INCR', ARGV[6] .. old)
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('HSET', KEYS[2], ARGV[1], ARGV[3])
redis.call('SADD', set, ARGV[1])
redis.call('INCR', ARGV[6] .. ARGV[3])
redis.call('INCR', ARGV[6] .. '*')
return 1`)

// deleteTenantObject removes ARGV[1] with its index entries; returns 1 if
// the document existed. KEYS and the prefixes as in putTenantObject.
var deleteTenantObject = goredis.NewScript(`
local old = redis.call('HGET', KEYS[2], ARGV[1])
if old then
  redis.call('SREM', ARGV[2] .. old, ARGV[1])
  redis.call('INCR', ARGV[3] .. old)
  redis.call('INCR', ARGV[3] .. '*')
  redis.call('HDEL', KEYS[2], ARGV[1])
end
return redis.call('HDEL', KEYS[1], ARGV[1])`)

// PutObjectWithin is PutObject refusing with ErrQuota a document new to
// its tenant when the tenant holds limit documents of kind: the count
// (SCARD) and the write are one script, so the limit holds across
// replicas.
func (s *Store) PutObjectWithin(ctx context.Context, kind, id string, doc []byte, limit int) error {
	if kind == "" || id == "" {
		return errors.New("redis store: put object: kind and id are required")
	}
	if !store.IsTenantKind(kind) {
		if limit > 0 {
			return fmt.Errorf("redis store: put object %s/%s within a limit: %w", kind, id, store.ErrNotTenantKind)
		}
		return s.PutObject(ctx, kind, id, doc)
	}
	tenant, err := store.ObjectTenant(doc)
	if err != nil {
		return fmt.Errorf("redis store: put object %s/%s: %w", kind, id, err)
	}
	n, err := putTenantObject.Run(ctx, s.rdb, []string{s.k("objects", kind), s.objectOwners(kind)},
		id, doc, tenant, max(limit, 0), s.tenantObjectsPrefix(kind), s.objectsStampPrefix(kind)).Int()
	if err := s.done("put object "+kind+"/"+id, err); err != nil {
		return err
	}
	if n == -1 {
		return fmt.Errorf("put object %s/%s: tenant %q has %d: %w", kind, id, tenant, limit, store.ErrQuota)
	}
	return nil
}

// swapObject writes ARGV[2] as ARGV[1] of hash KEYS[1] only while it is
// ARGV[3] (-3 absent, -2 another document), adding ARGV[4] to the set
// KEYS[2] when given (a prober document's region).
var swapObject = goredis.NewScript(`
local cur = redis.call('HGET', KEYS[1], ARGV[1])
if not cur then return -3 end
if cur ~= ARGV[3] then return -2 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
if KEYS[2] then redis.call('SADD', KEYS[2], ARGV[4]) end
return 1`)

// SwapObject is PutObject while kind/id holds exactly old, compared in the
// script that writes.
func (s *Store) SwapObject(ctx context.Context, kind, id string, old, doc []byte) error {
	if kind == "" || id == "" {
		return errors.New("redis store: swap object: kind and id are required")
	}
	what := "swap object " + kind + "/" + id
	var n int
	var err error
	switch ep, region := store.SplitProberObjectID(id); {
	case store.IsTenantKind(kind):
		tenant, terr := store.ObjectTenant(doc)
		if terr != nil {
			return fmt.Errorf("redis store: %s: %w", what, terr)
		}
		n, err = putTenantObject.Run(ctx, s.rdb, []string{s.k("objects", kind), s.objectOwners(kind)},
			id, doc, tenant, 0, s.tenantObjectsPrefix(kind), s.objectsStampPrefix(kind), "1", old).Int()
	case region != "" && proberKind(kind):
		n, err = swapObject.Run(ctx, s.rdb, []string{s.objects(kind, id), s.objectRegions(ep)}, id, doc, old, region).Int()
	default:
		n, err = swapObject.Run(ctx, s.rdb, []string{s.objects(kind, id)}, id, doc, old).Int()
	}
	if err := s.done(what, err); err != nil {
		return err
	}
	switch n {
	case -3:
		return fmt.Errorf("%s: %w", what, model.ErrNotFound)
	case -2:
		return fmt.Errorf("%s: changed since it was read: %w", what, store.ErrConflict)
	}
	return nil
}

// GetObjectOf returns the tenant's document, checked against the owners
// hash in the script that reads it.
func (s *Store) GetObjectOf(ctx context.Context, kind, tenant, id string) ([]byte, error) {
	if !store.IsTenantKind(kind) {
		return nil, fmt.Errorf("redis store: get object %s/%s: %w", kind, id, store.ErrNotTenantKind)
	}
	raw, ok, err := s.owned(ctx, s.objectOwners(kind), s.k("objects", kind), tenant, id, "get object "+kind+"/"+id)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("object %s/%s: %w", kind, id, model.ErrNotFound)
	}
	return []byte(raw), nil
}

// ListObjectsOf returns the tenant's documents of kind: SMEMBERS of the
// tenant's set, then HMGET of those IDs. One deleted between the two
// reads is left out.
func (s *Store) ListObjectsOf(ctx context.Context, kind, tenant string) (map[string][]byte, error) {
	if !store.IsTenantKind(kind) {
		return nil, fmt.Errorf("redis store: list objects %s: %w", kind, store.ErrNotTenantKind)
	}
	ids, err := s.rdb.SMembers(ctx, s.tenantObjectsPrefix(kind)+model.TenantOf(tenant)).Result()
	if err := s.done("list objects "+kind+" of tenant", err); err != nil {
		return nil, err
	}
	out := make(map[string][]byte, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	sort.Strings(ids)
	docs, err := s.rdb.HMGet(ctx, s.k("objects", kind), ids...).Result()
	if err := s.done("list objects "+kind+" of tenant", err); err != nil {
		return nil, err
	}
	for i, d := range docs {
		if doc, ok := d.(string); ok {
			out[ids[i]] = []byte(doc)
		}
	}
	return out, nil
}

// CountObjectsOf is the size of the tenant's set.
func (s *Store) CountObjectsOf(ctx context.Context, kind, tenant string) (int, error) {
	if !store.IsTenantKind(kind) {
		return 0, fmt.Errorf("redis store: count objects %s: %w", kind, store.ErrNotTenantKind)
	}
	n, err := s.rdb.SCard(ctx, s.tenantObjectsPrefix(kind)+model.TenantOf(tenant)).Result()
	if err := s.done("count objects "+kind+" of tenant", err); err != nil {
		return 0, err
	}
	return int(n), nil
}

// ObjectsStamp reads the tenant's stamp of kind (0 before any write).
func (s *Store) ObjectsStamp(ctx context.Context, kind, tenant string) (uint64, error) {
	if !store.IsTenantKind(kind) {
		return 0, fmt.Errorf("redis store: objects stamp %s: %w", kind, store.ErrNotTenantKind)
	}
	n, err := s.rdb.Get(ctx, s.objectsStampPrefix(kind)+model.TenantOf(tenant)).Uint64()
	if errors.Is(err, goredis.Nil) {
		return 0, nil
	}
	if err := s.done("read the objects stamp of "+kind, err); err != nil {
		return 0, err
	}
	return n, nil
}

// indexObjectTenant lists a document stored before the index (KEYS[1]
// still holds it, KEYS[2] has no tenant for it) in its tenant's set.
var indexObjectTenant = goredis.NewScript(`
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 0 then return 0 end
if redis.call('HSETNX', KEYS[2], ARGV[1], ARGV[2]) == 0 then return 0 end
redis.call('SADD', ARGV[3] .. ARGV[2], ARGV[1])
redis.call('INCR', ARGV[4] .. ARGV[2])
return 1`)

// indexIncidentTenant lists an incident stored before the index in its
// tenant's sorted set. KEYS: incidents, incident_tenants,
// incidents_by_tenant:<tenant>; ARGV: id, tenant, opened ms.
var indexIncidentTenant = goredis.NewScript(`
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 0 then return 0 end
if redis.call('HSETNX', KEYS[2], ARGV[1], ARGV[2]) == 0 then return 0 end
redis.call('ZADD', KEYS[3], ARGV[3], ARGV[1])
return 1`)

// IndexOwners indexes by tenant the incidents and tenant-kind documents
// that are missing from their owners hash (written before the index, or
// by a replica of an older version) and returns how many it added. New
// runs it; when the owners hashes are as long as the data hashes it costs
// two HLENs per hash. The records are read with HSCAN, a page at a time.
func (s *Store) IndexOwners(ctx context.Context) (int, error) {
	added := 0
	pending := func(records, owners string) (bool, error) {
		a, err := s.rdb.HLen(ctx, records).Result()
		if err := s.done("index by tenant", err); err != nil {
			return false, err
		}
		b, err := s.rdb.HLen(ctx, owners).Result()
		if err := s.done("index by tenant", err); err != nil {
			return false, err
		}
		return a != b, nil
	}
	scan := func(records, owners string, each func(id, raw string) error) error {
		var cursor uint64
		for {
			kv, next, err := s.rdb.HScan(ctx, records, cursor, "", 200).Result()
			if err := s.done("index by tenant", err); err != nil {
				return err
			}
			for i := 0; i+1 < len(kv); i += 2 {
				known, err := s.rdb.HExists(ctx, owners, kv[i]).Result()
				if err := s.done("index by tenant", err); err != nil {
					return err
				}
				if !known {
					if err := each(kv[i], kv[i+1]); err != nil {
						return err
					}
				}
			}
			if cursor = next; cursor == 0 {
				return nil
			}
		}
	}
	if ok, err := pending(s.k("incidents"), s.k("incident_tenants")); err != nil || ok {
		if err != nil {
			return added, err
		}
		err := scan(s.k("incidents"), s.k("incident_tenants"), func(id, raw string) error {
			inc, err := decode[model.Incident]("incident "+id, raw)
			if err != nil {
				return err
			}
			n, err := indexIncidentTenant.Run(ctx, s.rdb, []string{s.k("incidents"), s.k("incident_tenants"), s.tenantIncidents(0, inc.Tenant)},
				id, model.TenantOf(inc.Tenant), ms(inc.OpenedWindow)).Int()
			added += n
			return s.done("index incident "+id+" by tenant", err)
		})
		if err != nil {
			return added, err
		}
	}
	for _, kind := range store.TenantKinds() {
		records, owners := s.k("objects", kind), s.objectOwners(kind)
		ok, err := pending(records, owners)
		if err != nil {
			return added, err
		}
		if !ok {
			continue
		}
		err = scan(records, owners, func(id, raw string) error {
			tenant, err := store.ObjectTenant([]byte(raw))
			if err != nil {
				return fmt.Errorf("redis store: index %s/%s by tenant: %w", kind, id, err)
			}
			n, err := indexObjectTenant.Run(ctx, s.rdb, []string{records, owners},
				id, tenant, s.tenantObjectsPrefix(kind), s.objectsStampPrefix(kind)).Int()
			added += n
			return s.done("index "+kind+"/"+id+" by tenant", err)
		})
		if err != nil {
			return added, err
		}
	}
	return added, nil
}
