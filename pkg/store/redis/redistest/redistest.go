// Package redistest opens a Redis store for a test: on the shared test
// redis-server (pkg/testpeers finds it, or skips), under a key prefix of the
// test's own, closed and emptied when the test ends. It is the one opener the
// packages whose tests run on both store backends share.
package redistest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"testing"

	goredis "github.com/redis/go-redis/v9"

	"github.com/mcpmon/mcpmon/pkg/store/redis"
	"github.com/mcpmon/mcpmon/pkg/testpeers"
)

// Open returns a store on the test Redis. An empty opts.Prefix gets a random
// one, so tests (and their parallel subtests) never see each other's keys.
func Open(tb testing.TB, opts redis.Options) *redis.Store {
	tb.Helper()
	url := testpeers.RedisURL(tb)
	if opts.Prefix == "" {
		opts.Prefix = RandomPrefix()
	}
	s, err := redis.New(context.Background(), url, opts)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		_ = s.Close()
		Flush(tb, url, opts.Prefix)
	})
	return s
}

// RandomPrefix gives a test its own key space in the shared test Redis.
func RandomPrefix() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return "mcpmontest:" + hex.EncodeToString(b) + ":"
}

// Flush deletes only the keys under prefix (never FLUSHDB: other packages'
// tests share this Redis).
func Flush(tb testing.TB, url, prefix string) {
	o, err := goredis.ParseURL(url)
	if err != nil {
		tb.Error(err)
		return
	}
	c := goredis.NewClient(o)
	defer c.Close()
	ctx := context.Background()
	iter := c.Scan(ctx, 0, prefix+"*", 500).Iterator()
	for iter.Next(ctx) {
		c.Del(ctx, iter.Val())
	}
	if err := iter.Err(); err != nil {
		tb.Errorf("flush %s*: %v", prefix, err)
	}
}
