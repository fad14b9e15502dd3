package store

import "hash/fnv"

// ShardCount is how many shards endpoints are spread over. A shard is the
// unit of placement and of work: on a Redis Cluster every key of an
// endpoint lives in its shard's slot (pkg/store/redis layout.go), and
// aggregator replicas split the shards among themselves, each listing the
// open windows of its own (Results.OpenWindowsIn). Part of the stored
// format of the Redis sharded layout: changing it moves every key.
const ShardCount = 128

// ShardOf is the shard of an endpoint ID (or of another key that names
// one endpoint): FNV-1a, so every replica and backend computes the same.
func ShardOf(id string) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(id))
	return int(h.Sum32() % ShardCount)
}

// AllShards lists every shard, in order.
func AllShards() []int {
	out := make([]int, ShardCount)
	for i := range out {
		out[i] = i
	}
	return out
}

// ShardSet marks the in-range shards of shards.
func ShardSet(shards []int) [ShardCount]bool {
	var want [ShardCount]bool
	for _, sh := range shards {
		if sh >= 0 && sh < ShardCount {
			want[sh] = true
		}
	}
	return want
}

// InShards keeps the refs whose endpoint is in one of shards, in order:
// OpenWindowsIn for a backend whose index is not split by shard.
func InShards(refs []WindowRef, shards []int) []WindowRef {
	want := ShardSet(shards)
	out := make([]WindowRef, 0, len(refs))
	for _, r := range refs {
		if want[ShardOf(r.EndpointID)] {
			out = append(out, r)
		}
	}
	return out
}
