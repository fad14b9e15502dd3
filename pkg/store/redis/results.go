// Latest results (hash latest, with the slot in latest_slot) and the results
// of undecided windows (hash window_results:<ep>, sorted set windows).

package redis

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/mcpmon/mcpmon/pkg/msg"
	"github.com/mcpmon/mcpmon/pkg/store"
)

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
	err = putLatest.Run(ctx, s.rdb, []string{s.ke(r.EndpointID, "latest"), s.ke(r.EndpointID, "latest_slot")}, r.EndpointID, ms(r.Slot), raw).Err()
	return s.done("put latest result of "+r.EndpointID, err)
}

// LatestResult returns the endpoint's latest probe result or ErrNotFound.
func (s *Store) LatestResult(ctx context.Context, endpointID string) (msg.ProbeResult, error) {
	return hgetJSON[msg.ProbeResult](ctx, s, s.ke(endpointID, "latest"), endpointID, "get latest result of "+endpointID, "latest result of "+endpointID)
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
		[]string{s.ke(r.EndpointID, "last_verdict_window"), s.ke(r.EndpointID, "window_results", r.EndpointID), s.ke(r.EndpointID, "windows")},
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
	all, err := s.rdb.HGetAll(ctx, s.ke(ref.EndpointID, "window_results", ref.EndpointID)).Result()
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
	store.SortResults(out)
	return out, nil
}

// OpenWindows lists undecided windows starting before `before`, ordered by
// window then endpoint ID.
func (s *Store) OpenWindows(ctx context.Context, before time.Time) ([]store.WindowRef, error) {
	return s.openWindows(ctx, before, s.shards())
}

// OpenWindowsIn is OpenWindows for the endpoints of shards. In the sharded
// layout each shard's sorted set is read (one slot each, pipelined per
// node), so a replica reads its shards' windows only; unsharded, the one
// set is read and filtered.
func (s *Store) OpenWindowsIn(ctx context.Context, before time.Time, shards []int) ([]store.WindowRef, error) {
	if len(shards) == 0 {
		return []store.WindowRef{}, nil
	}
	if !s.sharded {
		refs, err := s.openWindows(ctx, before, s.shards())
		if err != nil {
			return nil, err
		}
		return store.InShards(refs, shards), nil
	}
	seen := make(map[int]bool, len(shards))
	var layout []int
	for _, sh := range shards {
		if sh >= 0 && sh < shardCount && !seen[sh] {
			seen[sh] = true
			layout = append(layout, sh)
		}
	}
	return s.openWindows(ctx, before, layout)
}

// openWindows reads the windows sets of the layout's shards.
func (s *Store) openWindows(ctx context.Context, before time.Time, shards []int) ([]store.WindowRef, error) {
	cmds, err := inShards(ctx, s, "open windows", shards, func(p goredis.Pipeliner, sh int) *goredis.StringSliceCmd {
		return p.ZRangeByScore(ctx, s.ks(sh, "windows"), &goredis.ZRangeBy{Min: "-inf", Max: "(" + ms(before)})
	})
	if err != nil {
		return nil, err
	}
	var members []string
	for _, c := range cmds {
		members = append(members, c.Val()...)
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
	slices.SortFunc(out, func(a, b store.WindowRef) int { // the shards' lists, merged
		return cmp.Or(a.Window.Compare(b.Window), strings.Compare(a.EndpointID, b.EndpointID))
	})
	return out, nil
}
