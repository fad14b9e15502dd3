package redis

import goredis "github.com/redis/go-redis/v9"

// ClientOf is s's client, for tests that watch which keys a read touches.
func ClientOf(s *Store) goredis.UniversalClient { return s.rdb }

// ShardTag is shard sh's hash tag in the sharded layout.
func ShardTag(sh int) string { return shardTags[sh] }
