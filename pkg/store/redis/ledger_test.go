package redis_test

import (
	"context"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/mcpmon/mcpmon/pkg/store/redis"
	"github.com/mcpmon/mcpmon/pkg/store/redis/redistest"
	"github.com/mcpmon/mcpmon/pkg/store/storetest"
	"github.com/mcpmon/mcpmon/pkg/testpeers"
)

// TestLedgerKeysExpireInRedis: Redis itself forgets ledger keys (so the
// ledger does not grow forever): a done key carries a PX of the TTL, a claim
// lease+TTL.
func TestLedgerKeysExpireInRedis(t *testing.T) {
	url := testpeers.RedisURL(t)
	prefix := redistest.RandomPrefix()
	s := open(t, url, redis.Options{Prefix: prefix, LedgerTTL: time.Hour})
	ctx := t.Context()
	if _, err := s.Claim(ctx, "claimed", "a", time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Claim(ctx, "done", "a", time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := s.Complete(ctx, "done", "a"); err != nil {
		t.Fatal(err)
	}
	o, _ := goredis.ParseURL(url)
	c := goredis.NewClient(o)
	defer c.Close()
	for key, want := range map[string]time.Duration{"claimed": time.Hour + time.Minute, "done": time.Hour} {
		ttl, err := c.PTTL(ctx, prefix+"ledger:"+key).Result()
		if err != nil {
			t.Fatal(err)
		}
		if ttl <= want-time.Minute || ttl > want {
			t.Fatalf("PTTL of %s = %s, want just under %s", key, ttl, want)
		}
	}
}

// BenchmarkClaimComplete: one notification's ledger round (claim script +
// complete script) against the test Redis.
func BenchmarkClaimComplete(b *testing.B) {
	url := testpeers.RedisURL(b)
	prefix := redistest.RandomPrefix()
	s, err := redis.New(context.Background(), url, redis.Options{Prefix: prefix})
	if err != nil {
		b.Fatal(err)
	}
	defer redistest.Flush(b, url, prefix)
	defer s.Close()
	storetest.BenchClaimComplete(b, s)
}
