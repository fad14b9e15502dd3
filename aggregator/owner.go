package aggregator

import (
	"context"
	"slices"
	"strconv"
	"time"

	"github.com/mcpmon/mcpmon/pkg/store"
)

// Partitioning verdict decisions across replicas.
//
// Each aggregator replica heartbeats its membership in the store
// (pkg/membership) and decides only the windows of the shards it owns: an
// endpoint belongs to shard store.ShardOf(id), and the owner of a shard is
// the live member with the highest rendezvous weight for it (Owner over
// shardKey). Every replica still folds every result (Handle is the queue's
// to spread), but each lists only its own shards' open windows every tick
// (store OpenWindowsIn: on a Redis Cluster one sorted set, one slot, per
// shard) and decides only those — reads, a publish and a commit per
// window — so verdicts/s grows with replicas instead of being repeated by
// each, and so does the listing.
//
// The rules, in the order they apply to a window of endpoint e:
//
//   - No view (Members nil: one process with the embedded store; or no
//     listing of the heartbeats ever succeeded; or nobody's heartbeat is
//     live, not even this replica's): this replica owns every shard and
//     lists every window. It must not go silent because it cannot see the
//     others, and deciding a window twice is safe (the dedup ID and
//     RecordVerdict's idempotence collapse the copies): that is how every
//     replica behaved before partitioning.
//   - A view: the members listed live, plus this replica itself (it is
//     alive whatever its last write did). This replica owns e's shard when
//     Owner(members, shardKey(shard)) is itself. On a membership change
//     the shard's new owner lists its windows from its next tick on, the
//     old owner's undecided ones included. Two replicas whose views differ
//     (one has not listed a newcomer yet) can both own a shard — a
//     duplicate, safe — but a window has no owner only if its shard's
//     owner in every view is dead:
//   - Takeover: a window still open Takeover after its decision time is
//     decided by any replica, owner or not. Each tick a replica also lists
//     the other shards' windows that are that old (a bound that lists
//     nothing while their owners keep up). Takeover is the members' TTL
//     plus two ticks: by then a live owner has had two ticks to decide it,
//     and a killed owner's heartbeat has expired, so the survivors own its
//     shards from their next listing on. Until then takeover covers the
//     open windows that came due while it was dying, so no result is left
//     undecided; the copies a takeover races with a slow owner collapse by
//     dedup ID.
//   - no_data is decided by the owner only. Once per window the no_data
//     pass lists the endpoints of this replica's own shards
//     (ListEndpointsIn, skipping a shard whose endpoints stamp stood since
//     it last listed it) and never reads another shard's endpoints or
//     windows. A killed replica's shards are listed by their new owners
//     from the first window listed after its heartbeat expired; the no_data
//     of its silent endpoints in the windows before — which it listed and
//     did not live to decide — is not decided by anyone. A candidate whose
//     shard moved to another replica between its listing and its due time
//     is decided at due plus Takeover, after checking that no verdict for
//     the window (or a later one) was recorded meanwhile.
//
// Which replica decides also settles the race of two replicas publishing
// different bodies (no_data and down) under one dedup ID: with a shared
// view only the owner decides a window until Takeover has passed.

// Members reports the live aggregator replicas (pkg/membership). ok is
// false when it cannot tell.
type Members interface {
	Live(ctx context.Context) (ids []string, ok bool)
}

// DefaultMemberTTL is the member TTL assumed when Options.MemberTTL is unset.
const DefaultMemberTTL = 30 * time.Second

// Owner returns the member that owns endpointID: the one with the highest
// rendezvous (highest-random-weight) weight for it, ties to the smaller ID.
// Adding a member moves to it only the endpoints it now wins (about 1/N);
// removing one moves only the endpoints it owned. "" when members is empty.
func Owner(members []string, endpointID string) string {
	var best string
	var bestW uint64
	for _, m := range members {
		w := weight(m, endpointID)
		if best == "" || w > bestW || (w == bestW && m < best) {
			best, bestW = m, w
		}
	}
	return best
}

// weight is the rendezvous weight of member for endpoint: FNV-1a over both
// (with a separator, so "ab"+"c" and "a"+"bc" differ), finished with
// murmur3's 64-bit mixer so that weights of similar IDs are independent.
// Every replica must compute the same weights: no per-process seed.
func weight(member, endpoint string) uint64 {
	const prime = 1099511628211
	x := uint64(14695981039346656037) // FNV-1a, inlined: no allocation
	for i := 0; i < len(member); i++ {
		x = (x ^ uint64(member[i])) * prime
	}
	x *= prime // the separator, a zero byte
	for i := 0; i < len(endpoint); i++ {
		x = (x ^ uint64(endpoint[i])) * prime
	}
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return x
}

// OwnerOf returns the member that owns endpointID's shard: the replica
// that decides its windows.
func OwnerOf(members []string, endpointID string) string {
	return Owner(members, shardKey(store.ShardOf(endpointID)))
}

// shardKey is the name a shard is weighed under in Owner.
func shardKey(shard int) string { return "shard-" + strconv.Itoa(shard) }

// ownership is one tick's answer to "does this replica own e?".
type ownership struct {
	self    string
	members []string // nil: owns everything
	// mine[sh]: this replica owns shard sh (unused when members is nil).
	mine [store.ShardCount]bool
}

func newOwnership(self string, members []string) ownership {
	o := ownership{self: self, members: members}
	for sh := range store.ShardCount {
		o.mine[sh] = Owner(members, shardKey(sh)) == self
	}
	return o
}

// all reports whether the replica owns every shard without a view.
func (o ownership) all() bool { return o.members == nil }

// owns reports whether the replica owns endpoint id's shard.
func (o ownership) owns(id string) bool {
	return o.members == nil || o.mine[store.ShardOf(id)]
}

// shards returns the shards this replica owns and the others' (both
// unused when it owns everything without a view).
func (o ownership) shards() (mine, others []int) {
	for sh, m := range o.mine {
		if m {
			mine = append(mine, sh)
		} else {
			others = append(others, sh)
		}
	}
	return mine, others
}

// ownershipView reads the members (at most once per their interval, the
// reader's business) into this tick's ownership, and sets the members
// gauge.
func (a *Aggregator) ownershipView(ctx context.Context) ownership {
	if a.opts.Members == nil {
		return ownership{}
	}
	live, ok := a.opts.Members.Live(ctx)
	if !ok || len(live) == 0 {
		a.m.Members.Set(0)
		return ownership{}
	}
	if !slices.Contains(live, a.opts.Replica) {
		live = append(slices.Clone(live), a.opts.Replica)
	}
	a.m.Members.Set(float64(len(live)))
	return newOwnership(a.opts.Replica, live)
}
