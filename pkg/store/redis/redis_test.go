package redis_test

import (
	"errors"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/mcpmon/mcpmon/pkg/clock"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/store"
	"github.com/mcpmon/mcpmon/pkg/store/redis"
	"github.com/mcpmon/mcpmon/pkg/store/redis/redistest"
	"github.com/mcpmon/mcpmon/pkg/store/storetest"
	"github.com/mcpmon/mcpmon/pkg/testpeers"
)

func TestMain(m *testing.M) {
	// The restart test dials a stopped Redis on purpose; keep go-redis's
	// per-dial log lines out of the test output.
	redis.RouteDriverLogs(slog.New(slog.DiscardHandler))
	os.Exit(m.Run())
}

// open connects a store on its own prefix and removes the prefix's keys
// when the test ends.
func open(t *testing.T, url string, opts redis.Options) *redis.Store {
	t.Helper()
	if opts.Prefix == "" {
		opts.Prefix = redistest.RandomPrefix()
	}
	s, err := redis.New(t.Context(), url, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = s.Close()
		redistest.Flush(t, url, opts.Prefix)
	})
	return s
}

// TestConformance runs the shared suite on Redis. TTL expiry is checked on
// the injected fake clock, like on bolt: the scripts compare deadlines
// stored in the values with the clock's now, so crossing the 7-day TTL takes
// no real time; TestLedgerKeysExpireInRedis checks the Redis-side expiry
// that only collects garbage.
func TestConformance(t *testing.T) {
	url := testpeers.RedisURL(t)
	storetest.Run(t, func(t *testing.T, clk *clock.Fake) store.Store {
		return open(t, url, redis.Options{Clock: clk, LeasesOnClock: true, LedgerReplicas: 1})
	})
}

// TestKeysUnderPrefix: nothing is written outside the configured prefix.
func TestKeysUnderPrefix(t *testing.T) {
	url := testpeers.RedisURL(t)
	prefix := redistest.RandomPrefix()
	s := open(t, url, redis.Options{Prefix: prefix})
	ctx := t.Context()
	if _, err := s.CreateEndpoint(ctx, model.Endpoint{ID: "ep"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Claim(ctx, "k", "a", time.Minute); err != nil {
		t.Fatal(err)
	}
	o, _ := goredis.ParseURL(url)
	c := goredis.NewClient(o)
	defer c.Close()
	keys, err := c.Keys(ctx, prefix+"*").Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) < 3 {
		t.Fatalf("keys under %s: %v, want endpoint, version and ledger keys", prefix, keys)
	}
}

func TestBadURL(t *testing.T) {
	for _, u := range []string{
		"127.0.0.1:6379",
		"http://127.0.0.1:6379",
		"redis+sentinel://127.0.0.1:1,127.0.0.1:2/0", // no master_name
		"redis://user:s3cret@127.0.0.1:6379/notadb",
	} {
		_, err := redis.New(t.Context(), u, redis.Options{})
		if err == nil {
			t.Fatalf("New(%q) succeeded", u)
		}
		if !errors.Is(err, redis.ErrURL) {
			t.Fatalf("New(%q) = %v, want ErrURL", u, err)
		}
		if strings.Contains(err.Error(), "s3cret") {
			t.Fatalf("error leaks the password: %v", err)
		}
	}
}

// TestConformanceOnCluster runs the shared suite on a real 3-primary Redis
// Cluster, where every script must keep its keys in one slot, with ledger
// writes waiting for their primary's replica (--redis-ledger-replicas 1).
func TestConformanceOnCluster(t *testing.T) {
	url := testpeers.RedisClusterURL(t)
	storetest.Run(t, func(t *testing.T, clk *clock.Fake) store.Store {
		return open(t, url, redis.Options{Clock: clk, LeasesOnClock: true})
	})
}
