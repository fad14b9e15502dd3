package redis_test

import (
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/clock"
	"github.com/mcpmon/mcpmon/pkg/store"
	"github.com/mcpmon/mcpmon/pkg/store/redis"
	"github.com/mcpmon/mcpmon/pkg/store/redis/redistest"
	"github.com/mcpmon/mcpmon/pkg/testpeers"
)

// hostClock is the wall clock of a host whose time is off by skew: what
// clock.Real reads on a replica with a drifted or unsynchronised clock.
type hostClock struct{ skew time.Duration }

func (c hostClock) Now() time.Time { return time.Now().Add(c.skew) }

// TestLedgerLeaseIgnoresReplicaClockSkew: two alerter replicas share
// one Redis ledger, one with a clock three minutes fast. Lease deadlines were
// computed from each replica's own clock and compared with the other's, so
// the fast replica saw every live 2-minute claim of the other as expired,
// took it over and sent the alert a second time while the first was still
// sending it. Deadlines now come from the one clock every replica shares,
// the Redis server's.
func TestLedgerLeaseIgnoresReplicaClockSkew(t *testing.T) {
	url := testpeers.RedisURL(t)
	prefix := redistest.RandomPrefix()
	for _, skew := range []time.Duration{3 * time.Minute, -3 * time.Minute} {
		t.Run(skew.String(), func(t *testing.T) {
			ctx := t.Context()
			onTime := open(t, url, redis.Options{Prefix: prefix, Clock: clock.Real{}})
			skewed := open(t, url, redis.Options{Prefix: prefix, Clock: hostClock{skew: skew}})
			key := "alert-ep-inc:open:hook:" + skew.String()

			claimWant(t, onTime, key, "on-time", 2*time.Minute, store.ClaimAcquired)
			claimWant(t, skewed, key, "skewed", 2*time.Minute, store.ClaimHeld)
			if err := onTime.Complete(ctx, key, "on-time"); err != nil {
				t.Fatal(err)
			}
			claimWant(t, skewed, key, "skewed", 2*time.Minute, store.ClaimDone)

			// And the other way round: the skewed replica's live claim holds.
			key2 := key + ":2"
			claimWant(t, skewed, key2, "skewed", 2*time.Minute, store.ClaimAcquired)
			claimWant(t, onTime, key2, "on-time", 2*time.Minute, store.ClaimHeld)
			if err := skewed.Complete(ctx, key2, "skewed"); err != nil {
				t.Fatal(err)
			}
			claimWant(t, onTime, key2, "on-time", 2*time.Minute, store.ClaimDone)
		})
	}
}

func claimWant(t *testing.T, s store.Ledger, key, owner string, lease time.Duration, want store.ClaimState) {
	t.Helper()
	got, err := s.Claim(t.Context(), key, owner, lease)
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Fatalf("%s claims %s: %s, want %s", owner, key, got, want)
	}
}
