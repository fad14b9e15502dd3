package redis_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/mcpmon/mcpmon/pkg/clock"
	"github.com/mcpmon/mcpmon/pkg/store"
	"github.com/mcpmon/mcpmon/pkg/store/redis"
	"github.com/mcpmon/mcpmon/pkg/store/redis/redistest"
	"github.com/mcpmon/mcpmon/pkg/testpeers"
	"github.com/mcpmon/mcpmon/pkg/writehealth"
)

// TestDiskWriteErrorIsAnOutage: a Redis that cannot write its snapshot
// (a full or broken disk) refuses writes with MISCONF while it still
// answers PING and reads. The store treats that as an outage
// (store.ErrUnavailable: consumers keep their messages in flight instead
// of walking them to a DLQ, as for an unreachable Redis), and writes
// succeed again once Redis can save.
func TestDiskWriteErrorIsAnOutage(t *testing.T) {
	rs := testpeers.NewRedisServer(t)
	rs.StartWith("--enable-protected-configs", "yes") // CONFIG SET dir below
	o, _ := goredis.ParseURL(rs.URL())
	rc := goredis.NewClient(o)
	t.Cleanup(func() { _ = rc.Close() })
	clk := clock.NewFake(time.Now())
	s, err := redis.New(t.Context(), rs.URL(), redis.Options{Prefix: redistest.RandomPrefix(), Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	ctx := t.Context()
	if err := s.PutObject(ctx, store.KindAgentSeen, "before", []byte(`{}`)); err != nil {
		t.Fatal(err)
	}

	// A snapshot directory that stops being one: the next save fails, as
	// on a full or read-only disk (root ignores permissions, not this).
	dir := filepath.Join(t.TempDir(), "snapshots")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(rc.ConfigSet(ctx, "dir", dir).Err())
	must(rc.ConfigSet(ctx, "save", "3600 1").Err()) // writes stop while the last save failed
	must(os.Remove(dir))
	must(os.WriteFile(dir, nil, 0o644))
	bgsave := func(want string) {
		t.Helper()
		must(rc.BgSave(ctx).Err())
		testpeers.Eventually(t, 10*time.Second, "the background save to end "+want, func() error {
			info, err := rc.Info(ctx, "persistence").Result()
			if err != nil {
				return err
			}
			if !strings.Contains(info, "rdb_bgsave_in_progress:0") || !strings.Contains(info, "rdb_last_bgsave_status:"+want) {
				return errors.New("still saving, or " + want + " not reported yet")
			}
			return nil
		})
	}
	bgsave("err")

	err = s.PutObject(ctx, store.KindAgentSeen, "during", []byte(`{}`))
	if !errors.Is(err, store.ErrUnavailable) || !strings.Contains(err.Error(), "MISCONF") {
		t.Fatalf("a write while Redis cannot save: %v, want store.ErrUnavailable naming MISCONF", err)
	}
	// The same for a write inside a script (the send-once ledger's claim).
	if _, err := s.Claim(ctx, "alert-during", "a", time.Minute); !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("a ledger claim while Redis cannot save: %v, want store.ErrUnavailable", err)
	}
	if _, err := s.GetObject(ctx, store.KindAgentSeen, "before"); err != nil {
		t.Errorf("a read while Redis cannot save: %v, want the record", err)
	}
	// Redis answers PING all along: readiness is the refused writes.
	if err := s.Ping(ctx); err == nil || !strings.Contains(err.Error(), "MISCONF") {
		t.Errorf("Ping while Redis refuses writes: %v, want not ready, naming MISCONF", err)
	}
	if n := s.CommitFailures(); n < 2 {
		t.Errorf("CommitFailures = %d after a refused write and a refused claim, want at least 2", n)
	}

	must(os.Remove(dir))
	must(os.Mkdir(dir, 0o755))
	must(rc.ConfigSet(ctx, "dir", dir).Err()) // Redis works in its dir: the new one
	bgsave("ok")
	if err := s.PutObject(ctx, store.KindAgentSeen, "after", []byte(`{}`)); err != nil {
		t.Fatalf("a write once Redis saves again: %v", err)
	}
	if s.Ping(ctx) == nil {
		t.Errorf("Ping right after the refused writes is nil, want it held for %s (readiness does not flap)", writehealth.Hold)
	}
	clk.Advance(writehealth.Hold)
	if err := s.Ping(ctx); err != nil {
		t.Errorf("Ping %s after the last refused write: %v, want ready", writehealth.Hold, err)
	}
}
