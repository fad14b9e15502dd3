// Trackers, incidents and the indexes their scripts write in the same step:
// incidents_by_opened, incidents_by_endpoint:<ep>, incident_tenants,
// incidents_by_tenant:<tenant> (tenants.go), incidents_open and
// outboxes_pending.

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

// GetTracker returns the endpoint's tracker, or a zero Tracker (Version 0)
// for the endpoint if none was saved.
func (s *Store) GetTracker(ctx context.Context, endpointID string) (model.Tracker, error) {
	raw, err := s.rdb.HGet(ctx, s.ke(endpointID, "trackers"), endpointID).Result()
	if errors.Is(err, goredis.Nil) {
		return model.Tracker{EndpointID: endpointID}, nil
	}
	if err := s.done("get tracker of "+endpointID, err); err != nil {
		return model.Tracker{}, err
	}
	return decode[model.Tracker]("tracker of "+endpointID, raw)
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
// incidents_by_opened, outboxes_pending, incidents_open, incident_tenants,
// then incidents_by_endpoint:<ep> and incidents_by_tenant:<tenant> per
// incident, then incidents_stamp (bumped when any incident is written).
// ARGV: tracker id, expected version, json, pending (1 or 0), n, then per
// incident id, expected version, json, opened ms, open (1 unless resolved),
// tenant.
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
  local b = 6 + i * 6
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
  local b = 6 + i * 6
  redis.call('HSET', KEYS[3], ARGV[b], ARGV[b + 2])
  redis.call('HSET', KEYS[4], ARGV[b], tonumber(ARGV[b + 1]) + 1)
  redis.call('ZADD', KEYS[5], ARGV[b + 3], ARGV[b])
  redis.call('ZADD', KEYS[9 + 2 * i], ARGV[b + 3], ARGV[b])
  redis.call('ZADD', KEYS[10 + 2 * i], ARGV[b + 3], ARGV[b])
  redis.call('HSET', KEYS[8], ARGV[b], ARGV[b + 5])
  if ARGV[b + 4] == '1' then
    redis.call('SADD', KEYS[7], ARGV[b])
  else
    redis.call('SREM', KEYS[7], ARGV[b])
  end
end
if n > 0 then redis.call('INCR', KEYS[9 + 2 * n]) end
return 0`)

// SaveTracker compare-and-sets the tracker and incidents atomically.
func (s *Store) SaveTracker(ctx context.Context, t model.Tracker, incidents ...model.Incident) error {
	if t.EndpointID == "" {
		return errors.New("redis store: save tracker: EndpointID is required")
	}
	expected := t.Version
	t.Version++
	traw, err := encode(t)
	if err != nil {
		return err
	}
	sh := s.shard(t.EndpointID)
	keys := []string{s.ks(sh, "trackers"), s.ks(sh, "tracker_versions"), s.ks(sh, "incidents"), s.ks(sh, "incident_versions"),
		s.ks(sh, "incidents_by_opened"), s.ks(sh, "outboxes_pending"), s.ks(sh, "incidents_open"), s.ks(sh, "incident_tenants")}
	args := []any{t.EndpointID, expected, traw, flag(t.Pending > 0), len(incidents)}
	for _, inc := range incidents {
		if inc.ID == "" {
			return errors.New("redis store: save tracker: incident ID is required")
		}
		if s.sharded && (!incidentOf(inc.ID, inc.EndpointID) || s.shard(inc.EndpointID) != sh) {
			return fmt.Errorf("redis store: save tracker %s: incident %s must be an incident ID of its endpoint %s in the tracker's shard (sharded cluster layout)", t.EndpointID, inc.ID, inc.EndpointID)
		}
		v := inc.Version
		inc.Version++
		raw, err := encode(inc)
		if err != nil {
			return err
		}
		keys = append(keys, s.ks(sh, "incidents_by_endpoint", inc.EndpointID), s.tenantIncidents(sh, inc.Tenant))
		args = append(args, inc.ID, v, raw, ms(inc.OpenedWindow), flag(inc.Unresolved()), model.TenantOf(inc.Tenant))
	}
	keys = append(keys, s.ks(sh, "incidents_stamp"))
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

// PendingOutboxes lists the endpoints whose tracker holds pending
// notifications, from the set saveTracker keeps.
func (s *Store) PendingOutboxes(ctx context.Context) ([]string, error) {
	cmds, err := perShard(ctx, s, "list pending outboxes", func(p goredis.Pipeliner, sh int) *goredis.StringSliceCmd {
		return p.SMembers(ctx, s.ks(sh, "outboxes_pending"))
	})
	if err != nil {
		return nil, err
	}
	ids := []string{}
	for _, c := range cmds {
		ids = append(ids, c.Val()...)
	}
	sort.Strings(ids)
	return ids, nil
}

// CountOpenIncidents is the size of the open-incident set.
func (s *Store) CountOpenIncidents(ctx context.Context) (int, error) {
	cmds, err := perShard(ctx, s, "count open incidents", func(p goredis.Pipeliner, sh int) *goredis.IntCmd {
		return p.SCard(ctx, s.ks(sh, "incidents_open"))
	})
	if err != nil {
		return 0, err
	}
	n := 0
	for _, c := range cmds {
		n += int(c.Val())
	}
	return n, nil
}

// IncidentsStamp returns a number that changes whenever an incident is
// written (a counter per shard that saveTracker and updateIncident
// increment, summed: each only grows).
func (s *Store) IncidentsStamp(ctx context.Context) (uint64, error) {
	return s.shardStamp(ctx, "incidents_stamp", "read the incidents stamp")
}

// GetIncident returns the incident or ErrNotFound.
func (s *Store) GetIncident(ctx context.Context, id string) (model.Incident, error) {
	sh, ok, err := s.incidentShard(ctx, id)
	if err != nil {
		return model.Incident{}, err
	}
	if !ok {
		return model.Incident{}, fmt.Errorf("incident %s: %w", id, model.ErrNotFound)
	}
	return hgetJSON[model.Incident](ctx, s, s.ks(sh, "incidents"), id, "get incident "+id, "incident "+id)
}

// updateIncident: -1 absent, 0 conflict, 1 written. KEYS: incidents,
// incident_versions, incidents_by_opened, incidents_by_endpoint:<ep>,
// incidents_open, incident_tenants, incidents_by_tenant:<tenant>,
// incidents_stamp. ARGV:
// id, expected version, json, opened ms, open (1 unless resolved), tenant.
var updateIncident = goredis.NewScript(`
local v = redis.call('HGET', KEYS[2], ARGV[1])
if not v then return -1 end
if tonumber(v) ~= tonumber(ARGV[2]) then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
redis.call('HSET', KEYS[2], ARGV[1], tonumber(ARGV[2]) + 1)
redis.call('ZADD', KEYS[3], ARGV[4], ARGV[1])
redis.call('ZADD', KEYS[4], ARGV[4], ARGV[1])
redis.call('ZADD', KEYS[7], ARGV[4], ARGV[1])
redis.call('HSET', KEYS[6], ARGV[1], ARGV[6])
if ARGV[5] == '1' then
  redis.call('SADD', KEYS[5], ARGV[1])
else
  redis.call('SREM', KEYS[5], ARGV[1])
end
redis.call('INCR', KEYS[8])
return 1`)

// UpdateIncident compare-and-sets an existing incident; ErrNotFound if absent.
func (s *Store) UpdateIncident(ctx context.Context, inc model.Incident) (model.Incident, error) {
	expected := inc.Version
	inc.Version++
	raw, err := encode(inc)
	if err != nil {
		return model.Incident{}, err
	}
	n, err := updateIncident.Run(ctx, s.rdb,
		[]string{s.ke(inc.EndpointID, "incidents"), s.ke(inc.EndpointID, "incident_versions"), s.ke(inc.EndpointID, "incidents_by_opened"),
			s.ke(inc.EndpointID, "incidents_by_endpoint", inc.EndpointID), s.ke(inc.EndpointID, "incidents_open"),
			s.ke(inc.EndpointID, "incident_tenants"), s.tenantIncidents(s.shard(inc.EndpointID), inc.Tenant), s.ke(inc.EndpointID, "incidents_stamp")},
		inc.ID, expected, raw, ms(inc.OpenedWindow), flag(inc.Unresolved()), model.TenantOf(inc.Tenant)).Int()
	if err := s.done("update incident "+inc.ID, err); err != nil {
		return model.Incident{}, err
	}
	switch n {
	case -1:
		return model.Incident{}, fmt.Errorf("update incident %s: %w", inc.ID, model.ErrNotFound)
	case 0:
		return model.Incident{}, fmt.Errorf("update incident %s: have version %d: %w", inc.ID, expected, store.ErrConflict)
	}
	return inc, nil
}

// ListIncidents returns matching incidents ordered by OpenedWindow, newest
// first (ties by ID, descending). It walks the per-endpoint index when the
// filter names an endpoint, else the tenant's when it names one, else the
// global one, a page at a time.
func (s *Store) ListIncidents(ctx context.Context, f store.IncidentFilter) ([]model.Incident, error) {
	sh := s.shard(f.EndpointID)
	index := s.ks(sh, "incidents_by_opened")
	switch {
	case f.EndpointID != "":
		index = s.ks(sh, "incidents_by_endpoint", f.EndpointID)
	case s.sharded:
		return s.listIncidentsMerged(ctx, f) // incidents_merge.go
	case f.Tenant != "":
		index = s.tenantIncidents(sh, f.Tenant)
	}
	const page = 200
	out := []model.Incident{}
	// A cursor starts the walk at its window (scores are OpenedWindow in
	// ms; Match drops the ties it already returned), so a later page costs
	// what it reads, not what the pages before it did.
	maxScore := "+inf"
	if f.After != nil {
		maxScore = ms(f.After.OpenedWindow)
	}
	for start := int64(0); ; start += page {
		ids, err := s.rdb.ZRevRangeByScore(ctx, index, &goredis.ZRangeBy{Min: "-inf", Max: maxScore, Offset: start, Count: page}).Result()
		if err := s.done("list incidents", err); err != nil {
			return nil, err
		}
		if len(ids) == 0 {
			return out, nil
		}
		incs, err := hmgetJSON[model.Incident](ctx, s, s.ks(sh, "incidents"), ids, "list incidents", "incident")
		if err != nil {
			return nil, err
		}
		for _, inc := range incs {
			if !f.Match(inc) {
				continue
			}
			out = append(out, inc)
			if f.Full(len(out)) {
				return out, nil
			}
		}
		if len(ids) < page {
			return out, nil
		}
	}
}
