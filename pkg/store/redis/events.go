// The change-event history, per endpoint: a sorted set events:<ep> whose
// members are the event IDs, all scored 0 so they sort by bytes — and an ID
// sorts like (observation time, sequence) — a hash event:<ep> of ID →
// event JSON (without its ID), a hash event_fp:<ep> of fingerprint → ID
// (the idempotency index) and the counter events_seq:<ep>. The sorted set
// events_pending holds "<ID>|<ep>" for every event the alerter still owes,
// oldest first across endpoints. One script appends an event with all its
// indexes and prunes the endpoint's events past the retention with theirs,
// so replicas appending the same change race inside Redis, not between
// round trips. Retention is decided on the injected clock; PEXPIRE only
// collects the keys of an endpoint that stopped changing.

package redis

import (
	"context"
	"fmt"
	"slices"
	"strings"

	goredis "github.com/redis/go-redis/v9"

	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/store"
)

// appendEvent: KEYS events:<ep>, event:<ep>, event_fp:<ep>, events_seq:<ep>,
// events_pending; ARGV cutoff ID (older IDs are pruned), endpoint ID,
// fingerprint, EventID(observedAt, 0), event JSON, PX ms. Returns the new
// ID, or "" for a known fingerprint or an event already past the
// retention.
var appendEvent = goredis.NewScript(`
local old = redis.call('ZRANGEBYLEX', KEYS[1], '-', '(' .. ARGV[1])
for _, id in ipairs(old) do
  local raw = redis.call('HGET', KEYS[2], id)
  if raw then
    local ok, e = pcall(cjson.decode, raw)
    if ok and type(e) == 'table' and type(e.fingerprint) == 'string' and redis.call('HGET', KEYS[3], e.fingerprint) == id then
      redis.call('HDEL', KEYS[3], e.fingerprint)
    end
  end
  redis.call('HDEL', KEYS[2], id)
  redis.call('ZREM', KEYS[5], id .. '|' .. ARGV[2])
end
if #old > 0 then redis.call('ZREMRANGEBYLEX', KEYS[1], '-', '(' .. ARGV[1]) end
if redis.call('HEXISTS', KEYS[3], ARGV[3]) == 1 or ARGV[4] < ARGV[1] then return '' end
local seq = redis.call('INCR', KEYS[4])
local id = string.sub(ARGV[4], 1, 16) .. string.format('%016x', seq)
redis.call('ZADD', KEYS[1], 0, id)
redis.call('HSET', KEYS[2], id, ARGV[5])
redis.call('HSET', KEYS[3], ARGV[3], id)
redis.call('ZADD', KEYS[5], 0, id .. '|' .. ARGV[2])
for i = 1, 4 do redis.call('PEXPIRE', KEYS[i], ARGV[6]) end
return id`)

func (s *Store) eventKeys(endpointID string) []string {
	return []string{s.ke(endpointID, "events", endpointID), s.ke(endpointID, "event", endpointID), s.ke(endpointID, "event_fp", endpointID),
		s.ke(endpointID, "events_seq", endpointID), s.ke(endpointID, "events_pending")}
}

// AppendEvents stores the events not yet known by fingerprint; see
// store.Events.
func (s *Store) AppendEvents(ctx context.Context, evs ...model.ChangeEvent) ([]model.ChangeEvent, error) {
	for _, e := range evs {
		if err := model.ValidEvent(e); err != nil {
			return nil, fmt.Errorf("redis store: %w", err)
		}
	}
	now := s.clk.Now()
	cutoff := store.EventID(store.EventCutoff(now, s.history), 0)
	// Keys outlive the newest event by the retention, plus a day for
	// clock skew between replicas.
	px := (s.history + 24*60*60*1e9).Milliseconds()
	var added []model.ChangeEvent
	for _, e := range evs {
		e.ObservedAt, e.RecordedAt, e.ID = e.ObservedAt.UTC(), now.UTC(), ""
		raw, err := encode(e)
		if err != nil {
			return added, err
		}
		id, err := appendEvent.Run(ctx, s.rdb, s.eventKeys(e.EndpointID),
			cutoff, e.EndpointID, e.Fingerprint, store.EventID(e.ObservedAt, 0), raw, px).Text()
		if err := s.done("append event of endpoint "+e.EndpointID, err); err != nil {
			return added, err
		}
		if id != "" {
			e.ID = id
			added = append(added, e)
		}
	}
	return added, nil
}

// ListEvents returns the endpoint's events newest first; see store.Events.
func (s *Store) ListEvents(ctx context.Context, endpointID string, f store.EventFilter) ([]model.ChangeEvent, error) {
	out := []model.ChangeEvent{}
	limit := store.EventLimit(f)
	op := "list events of endpoint " + endpointID
	lo := "[" + store.EventID(store.EventCutoff(s.clk.Now(), s.history), 0)
	hi := "+"
	if f.Before != "" {
		hi = "(" + f.Before
	}
	for len(out) < limit {
		ids, err := s.rdb.ZRevRangeByLex(ctx, s.ke(endpointID, "events", endpointID), &goredis.ZRangeBy{Min: lo, Max: hi, Count: int64(limit)}).Result()
		if err := s.done(op, err); err != nil {
			return nil, err
		}
		if len(ids) == 0 {
			break
		}
		raws, err := s.rdb.HMGet(ctx, s.ke(endpointID, "event", endpointID), ids...).Result()
		if err := s.done(op, err); err != nil {
			return nil, err
		}
		for i, r := range raws {
			str, ok := r.(string)
			if !ok {
				continue // pruned between the two reads
			}
			e, err := decode[model.ChangeEvent]("event "+ids[i]+" of endpoint "+endpointID, str)
			if err != nil {
				return nil, err
			}
			e.ID = ids[i]
			if f.Match(e) && len(out) < limit {
				out = append(out, e)
			}
		}
		if len(ids) < limit {
			break
		}
		hi = "(" + ids[len(ids)-1]
	}
	return out, nil
}

// PendingEvents returns listed events oldest first; see store.Events.
func (s *Store) PendingEvents(ctx context.Context, limit int) ([]model.ChangeEvent, error) {
	out := []model.ChangeEvent{}
	by := &goredis.ZRangeBy{Min: "-", Max: "+"}
	if limit > 0 {
		by.Count = int64(limit)
	}
	cmds, err := perShard(ctx, s, "pending events", func(p goredis.Pipeliner, sh int) *goredis.StringSliceCmd {
		return p.ZRangeByLex(ctx, s.ks(sh, "events_pending"), by)
	})
	if err != nil {
		return nil, err
	}
	// Members start with the event ID, which sorts by time: the first
	// limit of the shards' merged lists are the oldest limit.
	type member struct {
		m  string
		sh int
	}
	var members []member
	for i, c := range cmds {
		for _, m := range c.Val() {
			members = append(members, member{m, s.shards()[i]})
		}
	}
	slices.SortFunc(members, func(a, b member) int { return strings.Compare(a.m, b.m) })
	if limit > 0 && len(members) > limit {
		members = members[:limit]
	}
	stale := map[int][]any{}
	cutoff := store.EventCutoff(s.clk.Now(), s.history)
	for _, mb := range members {
		m := mb.m
		id, ep, ok := strings.Cut(m, "|")
		if !ok {
			stale[mb.sh] = append(stale[mb.sh], m)
			continue
		}
		raw, err := s.rdb.HGet(ctx, s.ke(ep, "event", ep), id).Result()
		if err == goredis.Nil {
			stale[mb.sh] = append(stale[mb.sh], m)
			continue
		}
		if err := s.done("pending event "+id+" of endpoint "+ep, err); err != nil {
			return nil, err
		}
		e, err := decode[model.ChangeEvent]("event "+id+" of endpoint "+ep, raw)
		if err != nil {
			return nil, err
		}
		if e.ObservedAt.Before(cutoff) {
			stale[mb.sh] = append(stale[mb.sh], m)
			continue
		}
		e.ID = id
		out = append(out, e)
	}
	for sh, ms := range stale {
		if err := s.done("unlist aged pending events", s.rdb.ZRem(ctx, s.ks(sh, "events_pending"), ms...).Err()); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// SettleEvent unlists an event from the pending index; see store.Events.
func (s *Store) SettleEvent(ctx context.Context, ref store.EventRef) error {
	err := s.rdb.ZRem(ctx, s.ke(ref.EndpointID, "events_pending"), ref.ID+"|"+ref.EndpointID).Err()
	return s.done("settle event "+ref.ID+" of endpoint "+ref.EndpointID, err)
}
