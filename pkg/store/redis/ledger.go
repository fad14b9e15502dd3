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
	"strings"
	"sync/atomic"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/mcpmon/mcpmon/pkg/clock"
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
	n, err := s.ledgerRun(ctx, "claim "+key, claimScript, key, int(store.ClaimAcquired),
		owner, s.ledgerNow(), lease.Milliseconds(), px.Milliseconds())
	if err != nil {
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
	n, err := s.ledgerRun(ctx, "complete "+key, completeScript, key, 1,
		owner, s.ledgerNow(), s.ttl.Milliseconds())
	if err != nil {
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

// replication is the ledger's wait for replicas (Options.LedgerReplicas)
// and what it counted.
type replication struct {
	replicas int
	wait     time.Duration
	// waits counts the WAITs sent; short the waits that ended with
	// fewer replicas than asked (or failed): marks a failover could lose.
	waits, short atomic.Uint64

	// warn paces warnShort's log: once a minute.
	warn clock.Every
}

// ledgerRun runs script on key's ledger key. With Options.LedgerReplicas
// and a script result of wrote (the key was written), it then sends WAIT
// on the same connection: WAIT counts the replicas that have every write
// that connection made, so it must follow the script there — on the
// primary of the key's slot, not on any node the client picks.
func (s *Store) ledgerRun(ctx context.Context, what string, script *goredis.Script, key string, wrote int, args ...any) (int, error) {
	lk := s.ledgerKey(key)
	if s.repl.replicas == 0 {
		n, err := script.Run(ctx, s.rdb, []string{lk}, args...).Int()
		return n, s.done(what, err)
	}
	var node *goredis.Client
	switch c := s.rdb.(type) {
	case *goredis.ClusterClient:
		var err error
		if node, err = c.MasterForKey(ctx, lk); err != nil {
			return 0, s.done(what, err)
		}
	case *goredis.Client:
		node = c
	default:
		return 0, fmt.Errorf("redis store: %s: ledger replicas need a single, Sentinel or Cluster client, not %T", what, s.rdb)
	}
	conn := node.Conn()
	defer conn.Close()
	n, err := script.Run(ctx, conn, []string{lk}, args...).Int()
	if err != nil && movedSlot(err) {
		// The slot moved since the client's last slot map: run it
		// where the cluster client routes it, and count the mark as
		// not waited for (a resharding is rare; the next mark waits).
		n, err = script.Run(ctx, s.rdb, []string{lk}, args...).Int()
		if err == nil && n == wrote {
			s.repl.short.Add(1)
			s.warnShort(what, 0, errors.New("the key's slot moved while it was written"))
		}
		return n, s.done(what, err)
	}
	if err := s.done(what, err); err != nil {
		return 0, err
	}
	if n == wrote {
		s.repl.waits.Add(1)
		acks, err := conn.Wait(ctx, s.repl.replicas, s.repl.wait).Result()
		if err != nil || int(acks) < s.repl.replicas {
			s.repl.short.Add(1)
			s.warnShort(what, int(acks), err)
		}
	}
	return n, nil
}

// movedSlot reports a cluster redirection: the key's slot is served by
// another node than the one asked.
func movedSlot(err error) bool {
	msg := err.Error()
	return strings.HasPrefix(msg, "MOVED ") || strings.HasPrefix(msg, "ASK ")
}

// warnShort logs, at most once a minute, a ledger write that fewer
// replicas than Options.LedgerReplicas acknowledged in time.
func (s *Store) warnShort(what string, acks int, err error) {
	if !s.repl.warn.Due(s.clk.Now()) {
		return
	}
	args := []any{"op", what, "replicas_acked", acks, "replicas_wanted", s.repl.replicas, "waited", s.repl.wait,
		"unreplicated_total", s.repl.short.Load()}
	if err != nil {
		args = append(args, "err", err)
	}
	s.log.Warn("ledger write not on enough replicas in time: it is used anyway, but a failover of its primary now could send an alert twice; check the replicas (INFO replication: master_link_status) or lower --redis-ledger-replicas", args...)
}

// LedgerWaits returns how many ledger writes waited for replicas and how
// many of those fewer replicas than asked acknowledged in time.
func (s *Store) LedgerWaits() (waits, short uint64) {
	return s.repl.waits.Load(), s.repl.short.Load()
}
