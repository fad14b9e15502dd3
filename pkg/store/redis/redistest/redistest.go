// Package redistest opens a Redis store for a test: on the shared test
// redis-server or Redis Cluster (pkg/testpeers finds them, or skips), under a
// key prefix of the test's own, closed and emptied when the test ends. It is
// the one opener the packages whose tests run on both store backends share.
package redistest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strings"
	"testing"

	goredis "github.com/redis/go-redis/v9"

	"github.com/mcpmon/mcpmon/pkg/store/redis"
	"github.com/mcpmon/mcpmon/pkg/testpeers"
)

// Open returns a store on the test Redis. An empty opts.Prefix gets a random
// one, so tests (and their parallel subtests) never see each other's keys.
func Open(tb testing.TB, opts redis.Options) *redis.Store {
	tb.Helper()
	return OpenURL(tb, testpeers.RedisURL(tb), opts)
}

// OpenCluster is Open on the test Redis Cluster.
func OpenCluster(tb testing.TB, opts redis.Options) *redis.Store {
	tb.Helper()
	return OpenURL(tb, testpeers.RedisClusterURL(tb), opts)
}

// OpenURL is Open on the Redis or Redis Cluster at url.
func OpenURL(tb testing.TB, url string, opts redis.Options) *redis.Store {
	tb.Helper()
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
// tests share this Redis). On a cluster URL it scans every primary.
func Flush(tb testing.TB, url, prefix string) {
	ctx := context.Background()
	if hosts, ok := ClusterAddrs(url); ok {
		c := goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: hosts})
		defer c.Close()
		err := c.ForEachMaster(ctx, func(ctx context.Context, node *goredis.Client) error {
			return flush(ctx, node, prefix+"*")
		})
		if err != nil {
			tb.Errorf("flush %s* on the cluster: %v", prefix, err)
		}
		return
	}
	o, err := goredis.ParseURL(url)
	if err != nil {
		tb.Error(err)
		return
	}
	c := goredis.NewClient(o)
	defer c.Close()
	if err := flush(ctx, c, prefix+"*"); err != nil {
		tb.Errorf("flush %s*: %v", prefix, err)
	}
}

func flush(ctx context.Context, c *goredis.Client, pattern string) error {
	iter := c.Scan(ctx, 0, pattern, 500).Iterator()
	for iter.Next(ctx) {
		c.Del(ctx, iter.Val())
	}
	return iter.Err()
}

// ClusterAddrs returns the seed addresses of a redis+cluster://h1,h2,... URL
// without credentials or options (the test cluster has neither); ok is false
// for any other URL.
func ClusterAddrs(url string) (addrs []string, ok bool) {
	rest, ok := strings.CutPrefix(url, "redis+cluster://")
	if !ok {
		return nil, false
	}
	hosts, _, _ := strings.Cut(rest, "/")
	hosts, _, _ = strings.Cut(hosts, "?")
	return strings.Split(hosts, ","), true
}
