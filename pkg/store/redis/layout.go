// Where a key lives. On a single node, on Sentinel and on a cluster whose
// prefix carries its own hash tag, every key is prefix + name (one slot on a
// cluster). On a cluster with an untagged prefix, keys are slotted by
// endpoint: every key about an endpoint, and the endpoint's piece of each
// cross-endpoint index, carries the hash tag of the endpoint's shard, so each
// script still touches one slot while the shards spread over the primaries.
// docs/design/redis-cluster.md has the key → tag table and the cost of the
// reads that fan out over the shards.

package redis

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	goredis "github.com/redis/go-redis/v9"

	"github.com/mcpmon/mcpmon/pkg/store"
)

// shardCount (store.ShardCount) and shardTags are part of the stored
// format of the sharded layout: changing either moves every key.
const shardCount = store.ShardCount

// globalTag is the hash tag of the keys outside any shard.
const globalTag = "g"

// clusterSlots is Redis Cluster's fixed number of hash slots.
const clusterSlots = 16384

// shardTags[i] is the hash tag of shard i: the first "i.j" whose slot falls
// in the i-th 1/shardCount of the slots, so contiguous slot ranges (as
// `redis-cli --cluster create` assigns them) hold equal numbers of shards.
var shardTags = func() [shardCount]string {
	var tags [shardCount]string
	per := clusterSlots / shardCount
	for i := range tags {
		for j := 0; ; j++ {
			tag := strconv.Itoa(i) + "." + strconv.Itoa(j)
			if int(crc16(tag))%clusterSlots/per == i {
				tags[i] = tag
				break
			}
		}
	}
	return tags
}()

// crc16 is Redis Cluster's key hash (CRC-16/XMODEM).
func crc16(s string) uint16 {
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc ^= uint16(s[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}

// shardOf is the shard of an endpoint ID (or of a ledger key).
func shardOf(id string) int { return store.ShardOf(id) }

// shard is the shard of id in this store's layout (0 when unsharded).
func (s *Store) shard(id string) int {
	if !s.sharded {
		return 0
	}
	return shardOf(id)
}

// shards lists every shard of the layout: [0] when unsharded.
func (s *Store) shards() []int {
	n := 1
	if s.sharded {
		n = shardCount
	}
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// ks is the key named by parts in shard sh; s.k when unsharded.
func (s *Store) ks(sh int, parts ...string) string {
	if !s.sharded {
		return s.k(parts...)
	}
	return s.base + "{" + shardTags[sh] + "}:" + strings.Join(parts, ":")
}

// ke is the key named by parts in endpoint id's shard.
func (s *Store) ke(id string, parts ...string) string { return s.ks(s.shard(id), parts...) }

// perShard queues cmd for every shard in one pipeline (go-redis sends it
// as one batch per node) and returns the commands in shard order; a
// missing key (redis.Nil) is left for the caller to read from its command.
func perShard[C goredis.Cmder](ctx context.Context, s *Store, op string, cmd func(p goredis.Pipeliner, sh int) C) ([]C, error) {
	return inShards(ctx, s, op, s.shards(), cmd)
}

// inShards is perShard for the given shards of the layout only.
func inShards[C goredis.Cmder](ctx context.Context, s *Store, op string, shards []int, cmd func(p goredis.Pipeliner, sh int) C) ([]C, error) {
	out := make([]C, len(shards))
	if len(shards) == 0 {
		return out, nil
	}
	_, err := s.rdb.Pipelined(ctx, func(p goredis.Pipeliner) error {
		for i, sh := range shards {
			out[i] = cmd(p, sh)
		}
		return nil
	})
	if errors.Is(err, goredis.Nil) {
		err = nil
	}
	if err := s.done(op, err); err != nil {
		return nil, err
	}
	return out, nil
}

// incidentShards are the shards an incident ID can live in: its
// endpoint's, read from the ID (msg.IncidentID, msg.RegionalIncidentID).
// An ID can name two endpoints ("x-regional-<ts>" is a regional incident of
// x or an incident of "x-regional"), so there may be two; an ID of another
// form names none.
func (s *Store) incidentShards(id string) []int {
	if !s.sharded {
		return []int{0}
	}
	var out []int
	for _, ep := range incidentEndpoints(id) {
		if sh := shardOf(ep); len(out) == 0 || out[0] != sh {
			out = append(out, sh)
		}
	}
	return out
}

// incidentEndpoints returns the endpoint IDs an incident ID can derive from
// (msg.IncidentID's <endpoint>-<stamp>, msg.RegionalIncidentID's
// <endpoint>-regional-<stamp>).
func incidentEndpoints(id string) []string {
	i := strings.LastIndexByte(id, '-')
	if i <= 0 || !isIncidentStamp(id[i+1:]) {
		return nil
	}
	ep := id[:i]
	out := []string{ep}
	if r, ok := strings.CutSuffix(ep, "-regional"); ok && r != "" {
		out = append(out, r)
	}
	return out
}

// isIncidentStamp: the 20060102T150405Z window stamp of an incident ID.
func isIncidentStamp(v string) bool {
	const layout = "20060102T150405Z"
	if len(v) != len(layout) {
		return false
	}
	for i := range len(v) {
		if c := v[i]; layout[i] >= '0' && layout[i] <= '9' {
			if c < '0' || c > '9' {
				return false
			}
		} else if c != layout[i] {
			return false
		}
	}
	return true
}

// incidentOf reports whether id is an incident ID of endpoint ep, the
// sharded layout's condition for storing it in ep's shard.
func incidentOf(id, ep string) bool { return slices.Contains(incidentEndpoints(id), ep) }

// ErrOneSlotData reports a cluster holding endpoints in the one-slot layout
// under the sharded layout's prefix wrapped in a hash tag.
var ErrOneSlotData = errors.New("redis cluster holds data in the one-slot layout")

// refuseOneSlotData fails when the one-slot layout of this prefix ("{p}:",
// what a cluster got before the sharded layout) holds endpoints, unless a
// migration into this prefix finished: starting empty beside them would
// hide every endpoint without a word.
func (s *Store) refuseOneSlotData(ctx context.Context) error {
	old := clusterPrefix(s.base)
	n, err := s.rdb.Exists(ctx, old+"endpoints").Result()
	if err := s.done("look for one-slot data", err); err != nil {
		return err
	}
	if n > 0 {
		state, err := s.rdb.HGet(ctx, s.k(migrateKey), "state").Result()
		if errors.Is(err, goredis.Nil) {
			err = nil
		}
		if err := s.done("look for a finished migration", err); err != nil {
			return err
		}
		if state == "done" {
			return nil // migrated (Migrate); the old copy is the operator's to drop
		}
		return fmt.Errorf("%w under %q: keep it with --redis-prefix '%s' or migrate it to the sharded layout under %q (docs/design/redis-cluster.md)",
			ErrOneSlotData, old, old, s.base)
	}
	return nil
}

// incidentShard finds the shard holding incident id; ok is false when
// none does (or, sharded, the ID names no endpoint). Unsharded it costs
// nothing; sharded, an HEXISTS only when the ID reads two ways.
func (s *Store) incidentShard(ctx context.Context, id string) (sh int, ok bool, err error) {
	shards := s.incidentShards(id)
	if len(shards) == 1 {
		return shards[0], true, nil
	}
	for _, sh := range shards {
		n, err := s.rdb.HExists(ctx, s.ks(sh, "incidents"), id).Result()
		if err := s.done("find incident "+id, err); err != nil {
			return 0, false, err
		}
		if n {
			return sh, true, nil
		}
	}
	return 0, false, nil
}
