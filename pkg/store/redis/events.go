// The change-event history, per endpoint: a sorted set events:<ep> whose
// members are the event IDs, all scored 0 so they sort by bytes — and an ID
// sorts like (observation time, sequence) — a hash event:<ep> of ID →
// event JSON (without its ID), a hash event_fp:<ep> of fingerprint → ID
// (the idempotency index), the counter events_seq:<ep> and the string
// events_flap:<ep>, the endpoint's flapping period (store.EventFlap JSON).
// The sorted set events_pending holds "<ID>|<ep>" for every event the
// alerter still owes, oldest first across endpoints. One script reads what
// store.DecideEventAppend needs, Go decides, and one script applies the
// decision with all its indexes — and prunes the endpoint's events past
// the retention with theirs — only if the endpoint's sequence, which every
// applied decision moves, is the one read: replicas appending to one
// endpoint race inside Redis, and the loser decides again. Retention is decided on the injected clock; PEXPIRE only
// collects the keys of an endpoint that stopped changing.

package redis

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/store"
)

// readEvents: KEYS events:<ep>, event_fp:<ep>, events_seq:<ep>,
// events_flap:<ep>; ARGV cutoff ID, fingerprint, the hour's and the day's
// first ID (none before the cutoff). Returns what DecideEventAppend needs
// but the marker: {known 0|1, events in the hour, in the day, the
// sequence, the flapping period JSON or ""}, read at one instant.
var readEvents = goredis.NewScript(`
local id = redis.call('HGET', KEYS[2], ARGV[2])
local known = 0
if id and id >= ARGV[1] then known = 1 end
return {known, redis.call('ZLEXCOUNT', KEYS[1], '[' .. ARGV[3], '+'), redis.call('ZLEXCOUNT', KEYS[1], '[' .. ARGV[4], '+'),
  redis.call('GET', KEYS[3]) or '0', redis.call('GET', KEYS[4]) or ''}`)

// applyEvent: KEYS events:<ep>, event:<ep>, event_fp:<ep>, events_seq:<ep>,
// events_pending, events_flap:<ep>; ARGV cutoff ID (older IDs are pruned),
// endpoint ID, the sequence read, action ("store" or "count"), event ID,
// fingerprint, event JSON, flapping period JSON ("" deletes it), PX ms.
// Applies a decision made over readEvents unless the sequence moved
// (every applied decision moves it, a count on a marker too) or the marker
// to count on aged out: then it returns 0 and the caller reads again.
var applyEvent = goredis.NewScript(`
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
if (redis.call('GET', KEYS[4]) or '0') ~= ARGV[3] then return 0 end
if ARGV[4] == 'store' then
  redis.call('ZADD', KEYS[1], 0, ARGV[5])
  redis.call('HSET', KEYS[3], ARGV[6], ARGV[5])
  redis.call('ZADD', KEYS[5], 0, ARGV[5] .. '|' .. ARGV[2])
elseif redis.call('HEXISTS', KEYS[2], ARGV[5]) == 0 then
  return 0
end
redis.call('INCR', KEYS[4])
redis.call('HSET', KEYS[2], ARGV[5], ARGV[7])
if ARGV[8] == '' then redis.call('DEL', KEYS[6]) else redis.call('SET', KEYS[6], ARGV[8]) end
for _, i in ipairs({1, 2, 3, 4, 6}) do redis.call('PEXPIRE', KEYS[i], ARGV[9]) end
return 1`)

// maxEventRounds bounds the read-decide-apply rounds of one event: each
// lost round is another replica's append to the same endpoint applied, so
// a round is lost only as often as replicas append to it at once.
const maxEventRounds = 64

func (s *Store) eventKeys(endpointID string) []string {
	return []string{s.ke(endpointID, "events", endpointID), s.ke(endpointID, "event", endpointID), s.ke(endpointID, "event_fp", endpointID),
		s.ke(endpointID, "events_seq", endpointID), s.ke(endpointID, "events_pending"), s.ke(endpointID, "events_flap", endpointID)}
}

// AppendEvents stores the events not yet known by fingerprint, within the
// endpoint's event budget; see store.Events. Each event is read, decided
// (store.DecideEventAppend) and applied by a script that refuses a
// decision made over a state another append changed since; the event is
// then read and decided again.
func (s *Store) AppendEvents(ctx context.Context, evs ...model.ChangeEvent) ([]model.ChangeEvent, error) {
	for _, e := range evs {
		if err := model.ValidEvent(e); err != nil {
			return nil, fmt.Errorf("redis store: %w", err)
		}
	}
	now := s.clk.Now()
	cutoff := store.EventCutoff(now, s.history)
	// Keys outlive the newest event by the retention, plus a day for
	// clock skew between replicas.
	px := (s.history + 24*60*60*1e9).Milliseconds()
	var added []model.ChangeEvent
	for _, e := range evs {
		e.ObservedAt, e.RecordedAt, e.ID = e.ObservedAt.UTC(), now.UTC(), ""
		stored, err := s.appendEvent(ctx, e, cutoff, px)
		if err != nil {
			return added, err
		}
		if stored != nil {
			added = append(added, *stored)
		}
	}
	return added, nil
}

// appendEvent decides and applies one event; it returns the event stored,
// if one was.
func (s *Store) appendEvent(ctx context.Context, e model.ChangeEvent, cutoff time.Time, px int64) (*model.ChangeEvent, error) {
	op := "append event of endpoint " + e.EndpointID
	keys := s.eventKeys(e.EndpointID)
	cutoffID := store.EventID(cutoff, 0)
	from := func(d time.Duration) string { return max(store.EventID(e.ObservedAt.Add(-d), 0), cutoffID) }
	for range maxEventRounds {
		res, err := readEvents.Run(ctx, s.rdb, []string{keys[0], keys[2], keys[3], keys[5]},
			cutoffID, e.Fingerprint, from(time.Hour), from(24*time.Hour)).Slice()
		if err := s.done(op, err); err != nil {
			return nil, err
		}
		held, seq, err := s.heldEvents(ctx, e, res)
		if err != nil {
			return nil, fmt.Errorf("redis store: %s: %w", op, err)
		}
		d := store.DecideEventAppend(e, held, cutoff)
		if d.Action == store.EventSkip {
			return nil, nil
		}
		action := "store"
		if d.Action == store.EventCount {
			action = "count"
		}
		stored := d.Event
		stored.ID = ""
		raw, err := encode(stored)
		if err != nil {
			return nil, err
		}
		flap := ""
		if d.Flap != nil {
			if flap, err = encode(d.Flap); err != nil {
				return nil, err
			}
		}
		ok, err := applyEvent.Run(ctx, s.rdb, keys, cutoffID, e.EndpointID, seq, action, d.Event.ID, d.Event.Fingerprint, raw, flap, px).Int()
		if err := s.done(op, err); err != nil {
			return nil, err
		}
		if ok == 1 {
			if d.Action == store.EventStore {
				return &d.Event, nil
			}
			return nil, nil
		}
	}
	return nil, fmt.Errorf("redis store: %s: %d rounds lost to concurrent appends: %w", op, maxEventRounds, store.ErrConflict)
}

// heldEvents turns readEvents' answer into what DecideEventAppend takes,
// reading the flapping period's marker of e's kind; seq is the sequence
// the answer was read at.
func (s *Store) heldEvents(ctx context.Context, e model.ChangeEvent, res []any) (held store.EventHeld, seq string, err error) {
	if len(res) != 5 {
		return held, "", fmt.Errorf("read events: %d values, want 5", len(res))
	}
	known, _ := res[0].(int64)
	hour, _ := res[1].(int64)
	day, _ := res[2].(int64)
	seq, _ = res[3].(string)
	flap, _ := res[4].(string)
	n, err := strconv.ParseUint(seq, 10, 64)
	if err != nil {
		return held, "", fmt.Errorf("event sequence %q: %w", seq, err)
	}
	held = store.EventHeld{Known: known == 1, LastHour: int(hour), LastDay: int(day), NextID: store.EventID(e.ObservedAt, n+1)}
	if flap == "" {
		return held, seq, nil
	}
	f, err := decode[store.EventFlap]("flapping period of endpoint "+e.EndpointID, flap)
	if err != nil {
		return held, "", err
	}
	held.Flap = &f
	id := f.Markers[e.Kind]
	if id == "" {
		return held, seq, nil
	}
	raw, err := s.rdb.HGet(ctx, s.ke(e.EndpointID, "event", e.EndpointID), id).Result()
	if err == goredis.Nil {
		return held, seq, nil // aged out
	}
	if err := s.done("flapping marker "+id+" of endpoint "+e.EndpointID, err); err != nil {
		return held, "", err
	}
	m, err := decode[model.ChangeEvent]("flapping marker "+id+" of endpoint "+e.EndpointID, raw)
	if err != nil {
		return held, "", err
	}
	m.ID = id
	held.Marker = &m
	return held, seq, nil
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
