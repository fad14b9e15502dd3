// The last verdict per endpoint (hashes last_verdict, last_verdict_window)
// and the verdict history (sorted set verdicts:<ep>, scored by window).

package redis

import (
	"context"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/mcpmon/mcpmon/pkg/msg"
)

// recordVerdict applies a verdict only if it is newer than the last one,
// then trims the history by age and drops the results of every window up to
// and including the verdict's (earlier ones can no longer be decided), and
// folds it into its rollups (foldRollupsLua, rollups.go).
var recordVerdict = goredis.NewScript(recordVerdictLua + foldRollupsLua + "return 1")

const recordVerdictLua = `
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
`

// RecordVerdict applies v if its window is after the endpoint's last
// verdict; see store.Verdicts.
func (s *Store) RecordVerdict(ctx context.Context, v msg.Verdict) (bool, error) {
	raw, err := encode(v)
	if err != nil {
		return false, err
	}
	now := s.clk.Now()
	cutoff := now.Add(-s.history)
	rkeys, rargs := s.rollupArgs(v, now) // rollups.go
	n, err := recordVerdict.Run(ctx, s.rdb,
		append([]string{s.ke(v.EndpointID, "last_verdict"), s.ke(v.EndpointID, "last_verdict_window"), s.ke(v.EndpointID, "verdicts", v.EndpointID),
			s.ke(v.EndpointID, "window_results", v.EndpointID), s.ke(v.EndpointID, "windows")}, rkeys...),
		append([]any{v.EndpointID, ms(v.Window), raw, ms(cutoff)}, rargs...)...).Int()
	if err := s.done("record verdict of "+v.EndpointID, err); err != nil {
		return false, err
	}
	return n == 1, nil
}

// LastVerdict returns the endpoint's newest verdict or ErrNotFound.
func (s *Store) LastVerdict(ctx context.Context, endpointID string) (msg.Verdict, error) {
	return hgetJSON[msg.Verdict](ctx, s, s.ke(endpointID, "last_verdict"), endpointID, "last verdict of "+endpointID, "last verdict of "+endpointID)
}

// ListVerdicts returns up to limit verdicts (all if limit <= 0), newest
// first, within the retention.
func (s *Store) ListVerdicts(ctx context.Context, endpointID string, limit int) ([]msg.Verdict, error) {
	return s.ListVerdictsBefore(ctx, endpointID, time.Time{}, limit)
}

// ListVerdictsBefore is ListVerdicts from the newest verdict whose window
// is before `before` (zero: the newest): an exclusive score bound.
func (s *Store) ListVerdictsBefore(ctx context.Context, endpointID string, before time.Time, limit int) ([]msg.Verdict, error) {
	by := &goredis.ZRangeBy{Min: ms(s.clk.Now().Add(-s.history)), Max: "+inf"}
	if !before.IsZero() {
		by.Max = "(" + ms(before)
	}
	if limit > 0 {
		by.Count = int64(limit)
	}
	raws, err := s.rdb.ZRevRangeByScore(ctx, s.ke(endpointID, "verdicts", endpointID), by).Result()
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
