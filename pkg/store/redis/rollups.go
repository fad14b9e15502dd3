// Rollups (hashes rollup:h:<ep>:<hour> and rollup:d:<ep>:<day>, unix
// seconds): one hash per endpoint and bucket, folded by RecordVerdict's
// script when the verdict applies (see pkg/store rollups.go for why).
//
// A hash holds the seconds per state (fields up, degraded, regional, down,
// no_data, maintenance), the verdict count (verdicts) and the latency
// sketches as bin counts: t:<index> for the total phase, i:<index> for
// initialize, indexed by model.SketchIndex. Lua cannot decode or merge the
// sketch's binary encoding, but it can increment its bins; Rollups rebuilds
// the sketch from them with the same mapping, so both backends answer the
// same quantiles. A bucket's key expires (PX, garbage collection only) when
// it leaves the retention; reads filter by the injected clock.

package redis

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/msg"
)

// foldRollupsLua runs after recordVerdictLua applied the verdict (it
// returns 0 earlier otherwise). KEYS[6], KEYS[7]: the hour and day hashes.
// ARGV[5]: the counter; ARGV[6]: the window seconds; ARGV[7], ARGV[8]: the
// hour and day keys' PX (<= 0: the bucket is past its retention, skip it);
// ARGV[9..]: one sketch bin field per latency value.
const foldRollupsLua = `
local function fold(key, px)
  if tonumber(px) <= 0 then return end
  redis.call('HINCRBY', key, ARGV[5], ARGV[6])
  redis.call('HINCRBY', key, 'verdicts', 1)
  for i = 9, #ARGV do redis.call('HINCRBY', key, ARGV[i], 1) end
  redis.call('PEXPIRE', key, px)
end
fold(KEYS[6], ARGV[7])
fold(KEYS[7], ARGV[8])
`

func (s *Store) rollupKey(endpointID string, size time.Duration, start time.Time) string {
	res := "h"
	if size == model.Daily {
		res = "d"
	}
	return s.ke(endpointID, "rollup", res, endpointID, strconv.FormatInt(start.Unix(), 10))
}

// rollupTTL is how long the bucket of size at start is still kept at now
// (<= 0: no longer).
func rollupTTL(start time.Time, size time.Duration, now time.Time) time.Duration {
	n := model.HourlyBuckets
	if size == model.Daily {
		n = model.DailyBuckets
	}
	return start.Add(time.Duration(n) * size).Sub(now)
}

// rollupArgs returns the extra KEYS and ARGV of recordVerdict for v.
func (s *Store) rollupArgs(v msg.Verdict, now time.Time) ([]string, []any) {
	hour, day := model.RollupBuckets(v.Window)
	args := []any{
		model.VerdictField(v), v.WindowSecs,
		rollupTTL(hour, model.Hourly, now).Milliseconds(), rollupTTL(day, model.Daily, now).Milliseconds(),
	}
	total, initialize := model.VerdictLatencies(v)
	for _, x := range total {
		args = append(args, "t:"+strconv.Itoa(model.SketchIndex(x)))
	}
	for _, x := range initialize {
		args = append(args, "i:"+strconv.Itoa(model.SketchIndex(x)))
	}
	return []string{s.rollupKey(v.EndpointID, model.Hourly, hour), s.rollupKey(v.EndpointID, model.Daily, day)}, args
}

// Rollups returns the endpoint's kept buckets of size with start in
// [from, to), oldest first; see store.Rollups.
func (s *Store) Rollups(ctx context.Context, endpointID string, size time.Duration, from, to time.Time) ([]model.Rollup, error) {
	if size != model.Hourly && size != model.Daily {
		return nil, fmt.Errorf("redis store: rollups of %s: unknown size %s", endpointID, size)
	}
	now := s.clk.Now()
	first := from.UTC().Truncate(size)
	if first.Before(from) {
		first = first.Add(size)
	}
	first = later(first, model.RollupOldest(size, now))
	last := now.UTC().Truncate(size) // no bucket after now's
	var starts []time.Time
	for t := first; t.Before(to) && !t.After(last); t = t.Add(size) {
		starts = append(starts, t)
	}
	out := []model.Rollup{}
	if len(starts) == 0 {
		return out, nil
	}
	cmds := make([]*goredis.MapStringStringCmd, len(starts))
	_, err := s.rdb.Pipelined(ctx, func(p goredis.Pipeliner) error {
		for i, t := range starts {
			cmds[i] = p.HGetAll(ctx, s.rollupKey(endpointID, size, t))
		}
		return nil
	})
	if err := s.done("read rollups of "+endpointID, err); err != nil {
		return nil, err
	}
	for i, cmd := range cmds {
		h, err := cmd.Result()
		if err != nil && !errors.Is(err, goredis.Nil) {
			return nil, fmt.Errorf("redis store: rollups of %s: %w", endpointID, err)
		}
		if len(h) == 0 {
			continue
		}
		r, err := rollupOf(h, starts[i], size)
		if err != nil {
			return nil, fmt.Errorf("redis store: rollup of %s at %s: %w", endpointID, starts[i].Format(time.RFC3339), err)
		}
		out = append(out, r)
	}
	return out, nil
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func rollupOf(h map[string]string, start time.Time, size time.Duration) (model.Rollup, error) {
	r := model.Rollup{Start: start, Size: size}
	total, initialize := map[int]float64{}, map[int]float64{}
	for f, raw := range h {
		n, err := strconv.ParseInt(raw, 10, 64)
		if err != nil {
			return r, fmt.Errorf("field %s: %w", f, err)
		}
		switch f {
		case string(msg.StateUp):
			r.Up = n
		case string(msg.StateDegraded):
			r.Degraded = n
		case string(msg.StateRegional):
			r.Regional = n
		case string(msg.StateDown):
			r.Down = n
		case string(msg.StateNoData):
			r.NoData = n
		case "maintenance":
			r.Maintenance = n
		case "verdicts":
			r.Verdicts = n
		default:
			bins := total
			idx, ok := strings.CutPrefix(f, "t:")
			if !ok {
				if idx, ok = strings.CutPrefix(f, "i:"); !ok {
					continue // a field a later version added
				}
				bins = initialize
			}
			i, err := strconv.Atoi(idx)
			if err != nil {
				return r, fmt.Errorf("field %s: %w", f, err)
			}
			bins[i] = float64(n)
		}
	}
	r.Total, r.Initialize = model.SketchFromBins(total), model.SketchFromBins(initialize)
	return r, nil
}
