// A ledger key is one string "<state>|<untilMs>|<owner>": state claimed
// (until = lease end) or done (until = expiry). One script per transition
// decides between done, held, and taking over an expired lease or an
// expired done key, with "now" read from the server's clock (or passed in
// under a fake clock; see the package doc). PX is lease+TTL for claims (a
// crashed holder's key is eventually collected) and TTL for done keys.

package redis

import (
	"context"
	"errors"
	"fmt"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/mcpmon/mcpmon/pkg/store"
)

// ledgerNow is the scripts' now: ARGV in ms, or "" for the server's TIME.
// TIME before a write needs effects replication, the default since Redis 5
// and the only mode since 7; older servers are asked for it.
const ledgerNow = `
local function now(arg)
  if arg ~= '' then return tonumber(arg) end
  if redis.replicate_commands then redis.replicate_commands() end
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
`

// claimScript: ARGV owner, now, lease ms, PX ms; returns a store.ClaimState.
var claimScript = goredis.NewScript(ledgerNow + `
local nw = now(ARGV[2])
local v = redis.call('GET', KEYS[1])
if v then
  local st, untl, owner = string.match(v, '^(%a+)|(%-?%d+)|(.*)$')
  if st and tonumber(untl) > nw then
    if st == 'done' then return 2 end
    if owner ~= ARGV[1] then return 3 end
  end
end
redis.call('SET', KEYS[1], 'claimed|' .. string.format('%.0f', nw + tonumber(ARGV[3])) .. '|' .. ARGV[1], 'PX', ARGV[4])
return 1`)

// completeScript: ARGV owner, now, TTL ms; 1 done, 0 claim lost.
var completeScript = goredis.NewScript(ledgerNow + `
local nw = now(ARGV[2])
local v = redis.call('GET', KEYS[1])
if not v then return 0 end
local st, untl, owner = string.match(v, '^(%a+)|(%-?%d+)|(.*)$')
if owner ~= ARGV[1] then return 0 end
if st == 'done' then
  if tonumber(untl) > nw then return 1 end
  return 0
end
redis.call('SET', KEYS[1], 'done|' .. string.format('%.0f', nw + tonumber(ARGV[3])) .. '|' .. ARGV[1], 'PX', ARGV[3])
return 1`)

var releaseScript = goredis.NewScript(`
local v = redis.call('GET', KEYS[1])
if v then
  local st, untl, owner = string.match(v, '^(%a+)|(%-?%d+)|(.*)$')
  if st == 'claimed' and owner == ARGV[1] then redis.call('DEL', KEYS[1]) end
end
return 0`)

// ledgerKey is key's ledger key, in key's own shard: each script touches
// one ledger key, so any slot works and the keys spread.
func (s *Store) ledgerKey(key string) string { return s.ks(s.shard(key), "ledger", key) }

// Claim takes key for owner for lease (store.DefaultLease if <= 0). Absent
// keys, done keys past their TTL and claims past their lease are acquired; a
// live claim by the same owner is re-acquired (lease renewed).
func (s *Store) Claim(ctx context.Context, key, owner string, lease time.Duration) (store.ClaimState, error) {
	if key == "" || owner == "" {
		return 0, errors.New("redis store: claim: key and owner are required")
	}
	if lease <= 0 {
		lease = store.DefaultLease
	}
	px := lease + s.ttl
	n, err := claimScript.Run(ctx, s.rdb, []string{s.ledgerKey(key)}, owner, s.ledgerNow(), lease.Milliseconds(), px.Milliseconds()).Int()
	if err := s.done("claim "+key, err); err != nil {
		return 0, err
	}
	return store.ClaimState(n), nil
}

// ledgerNow is the now the ledger scripts compare deadlines with: "" (the
// server's clock) unless a test injected a *clock.Fake.
func (s *Store) ledgerNow() string {
	if s.serverTime {
		return ""
	}
	return ms(s.clk.Now())
}

// Complete marks owner's claim done for the TTL; see bolt.Store.Complete for
// the exact rules (both backends pass the same suite).
func (s *Store) Complete(ctx context.Context, key, owner string) error {
	n, err := completeScript.Run(ctx, s.rdb, []string{s.ledgerKey(key)},
		owner, s.ledgerNow(), s.ttl.Milliseconds()).Int()
	if err := s.done("complete "+key, err); err != nil {
		return err
	}
	if n != 1 {
		return fmt.Errorf("complete ledger key %s for %s: claim lost: %w", key, owner, store.ErrConflict)
	}
	return nil
}

// Release drops owner's claim; a no-op when owner does not hold key.
func (s *Store) Release(ctx context.Context, key, owner string) error {
	err := releaseScript.Run(ctx, s.rdb, []string{s.ledgerKey(key)}, owner).Err()
	return s.done("release "+key, err)
}
