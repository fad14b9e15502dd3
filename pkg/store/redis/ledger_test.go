package redis_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	goredis "github.com/redis/go-redis/v9"

	"github.com/mcpmon/mcpmon/pkg/store"
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

// TestLedgerWaitsForItsReplica: with LedgerReplicas a claim and a done
// mark return once the primary's replica holds them (read from the replica
// right after), and a replica that acknowledges nothing (paused) costs each
// write the wait, is counted, and still lets the write through: an alert is
// never held back for a replica.
func TestLedgerWaitsForItsReplica(t *testing.T) {
	primary := testpeers.NewRedisServer(t)
	primary.Start()
	replica := testpeers.NewRedisServer(t)
	replica.StartReplicaOf(primary)
	// Right after its first sync a replica may acknowledge only at its
	// next once-a-second report; wait until it acknowledges a write at once.
	po, _ := goredis.ParseURL(primary.URL())
	pc := goredis.NewClient(po)
	t.Cleanup(func() { _ = pc.Close() })
	testpeers.Eventually(t, 10*time.Second, "the replica to acknowledge writes", func() error {
		conn := pc.Conn()
		defer conn.Close()
		if err := conn.Set(t.Context(), "ready", "1", 0).Err(); err != nil {
			return err
		}
		n, err := conn.Wait(t.Context(), 1, 100*time.Millisecond).Result()
		if err == nil && n != 1 {
			err = errors.New("no replica acknowledged a write within 100ms")
		}
		return err
	})
	prefix := redistest.RandomPrefix()
	s, err := redis.New(t.Context(), primary.URL(), redis.Options{Prefix: prefix, LedgerReplicas: 1, LedgerWait: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	ctx := t.Context()
	o, _ := goredis.ParseURL(replica.URL())
	rc := goredis.NewClient(o)
	t.Cleanup(func() { _ = rc.Close() })
	onReplica := func(key string) string {
		t.Helper()
		v, err := rc.Get(ctx, prefix+"ledger:"+key).Result()
		if err != nil {
			w, sh := s.LedgerWaits()
			t.Fatalf("ledger key %s on the replica: %v (%d waits, %d short)", key, err, w, sh)
		}
		return v
	}

	if st, err := s.Claim(ctx, "k1", "a", time.Minute); err != nil || st != store.ClaimAcquired {
		t.Fatalf("claim k1: %v, %v", st, err)
	}
	if v := onReplica("k1"); !strings.HasPrefix(v, "claimed|") {
		t.Fatalf("k1 on the replica after the claim returned: %q", v)
	}
	if err := s.Complete(ctx, "k1", "a"); err != nil {
		t.Fatal(err)
	}
	if v := onReplica("k1"); !strings.HasPrefix(v, "done|") {
		t.Fatalf("k1 on the replica after the done mark returned: %q", v)
	}
	// A claim that finds the key done writes nothing and waits for nothing.
	if st, err := s.Claim(ctx, "k1", "b", time.Minute); err != nil || st != store.ClaimDone {
		t.Fatalf("claim of a done key: %v, %v", st, err)
	}
	if waits, short := s.LedgerWaits(); waits != 2 || short != 0 {
		t.Fatalf("after two replicated writes: %d waits, %d short; want 2, 0", waits, short)
	}

	replica.Pause()
	if st, err := s.Claim(ctx, "k2", "a", time.Minute); err != nil || st != store.ClaimAcquired {
		t.Fatalf("claim k2 with the replica paused: %v, %v", st, err)
	}
	if err := s.Complete(ctx, "k2", "a"); err != nil {
		t.Fatalf("done mark with the replica paused: %v", err)
	}
	replica.Resume()
	if waits, short := s.LedgerWaits(); waits != 4 || short != 2 {
		t.Fatalf("after two writes the paused replica did not acknowledge: %d waits, %d short; want 4, 2", waits, short)
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(redis.NewLedgerCollector(s))
	if n, err := testutil.GatherAndCount(reg, "mcpmon_store_ledger_unreplicated_total"); err != nil || n != 1 {
		t.Fatalf("collector: %d series, %v", n, err)
	}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(`# HELP mcpmon_store_ledger_unreplicated_total Alert-ledger writes fewer replicas than --redis-ledger-replicas acknowledged in time: a failover of their primary could lose them and send an alert twice.
# TYPE mcpmon_store_ledger_unreplicated_total counter
mcpmon_store_ledger_unreplicated_total 2
`), "mcpmon_store_ledger_unreplicated_total"); err != nil {
		t.Fatal(err)
	}
}

// TestLedgerReplicasRefusesANegativeCount: a bad option fails New.
func TestLedgerReplicasRefusesANegativeCount(t *testing.T) {
	if _, err := redis.New(t.Context(), "redis://127.0.0.1:1/0", redis.Options{LedgerReplicas: -1}); err == nil || !strings.Contains(err.Error(), "ledger replicas -1") {
		t.Fatalf("LedgerReplicas -1: %v", err)
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
