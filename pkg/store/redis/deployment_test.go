package redis_test

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/mcpmon/mcpmon/pkg/clock"
	"github.com/mcpmon/mcpmon/pkg/store"
	"github.com/mcpmon/mcpmon/pkg/store/redis"
	"github.com/mcpmon/mcpmon/pkg/store/redis/redistest"
	"github.com/mcpmon/mcpmon/pkg/testpeers"
)

// TestDataLossIsReported: Redis loses every key of the deployment (a
// restart without persistence, an empty replica promoted) while mcpmon
// runs. It still answers PING and reads; Ping (readiness) now fails with
// ErrDataLost naming the marker and what to do, logs it once per 30 s,
// and never writes the marker again, so the loss stays reported. Another
// deployment's marker in its place is reported too. A store that does not
// watch (store migrate's source) writes no marker.
func TestDataLossIsReported(t *testing.T) {
	url := testpeers.RedisURL(t)
	ctx := t.Context()
	prefix := redistest.RandomPrefix()
	t.Cleanup(func() { redistest.Flush(t, url, prefix) })
	clk := clock.NewFake(time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC))
	var logs bytes.Buffer
	s, err := redis.New(ctx, url, redis.Options{Prefix: prefix, Clock: clk, WatchDeployment: true,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	if err := s.PutObject(ctx, store.KindAgentSeen, "a", []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	if err := s.Ping(ctx); err != nil {
		t.Fatalf("Ping on the data it started on: %v", err)
	}
	if got := s.Created(); !got.Equal(clk.Now()) {
		t.Fatalf("Created = %v, want when the marker was written, %v", got, clk.Now())
	}

	o, _ := goredis.ParseURL(url)
	rc := goredis.NewClient(o)
	t.Cleanup(func() { _ = rc.Close() })
	redistest.Flush(t, url, prefix) // every key of the deployment gone
	for range 3 {
		err = s.Ping(ctx)
		clk.Advance(10 * time.Second)
	}
	if !errors.Is(err, redis.ErrDataLost) || !strings.Contains(err.Error(), prefix+"deployment") ||
		!strings.Contains(err.Error(), "2026-12-07T12:00:00Z") || !strings.Contains(err.Error(), "Restore Redis") {
		t.Fatalf("Ping after Redis lost the data: %v, want ErrDataLost naming the marker, when it was written and what to do", err)
	}
	if n := strings.Count(logs.String(), "level=ERROR"); n != 1 {
		t.Errorf("%d error lines for three checks within 30 s, want 1:\n%s", n, logs.String())
	}
	if n, _ := rc.Exists(ctx, prefix+"deployment").Result(); n != 0 {
		t.Fatal("the store wrote its marker again, which would hide the loss from the next check")
	}

	// Another deployment started on the empty Redis: its marker is not ours.
	other, err := redis.New(ctx, url, redis.Options{Prefix: prefix, Clock: clk, WatchDeployment: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = other.Close() })
	if err := other.Ping(ctx); err != nil {
		t.Fatalf("Ping of a store started on the empty Redis: %v, want ready (a new deployment)", err)
	}
	if err := s.Ping(ctx); !errors.Is(err, redis.ErrDataLost) || !strings.Contains(err.Error(), "changed") {
		t.Fatalf("Ping with another deployment's marker: %v, want ErrDataLost saying it changed", err)
	}
	// What tells the operator of a loss no running process saw
	// (mcpmon_store_created_timestamp_seconds): the new deployment was
	// created later; the process that saw the loss still reports its own.
	if o, c := other.Created(), s.Created(); !o.After(c) {
		t.Fatalf("Created of the store started on the emptied Redis = %v, want after the lost one's %v", o, c)
	}

	// A store that does not watch writes nothing.
	quiet := redistest.RandomPrefix()
	q, err := redis.New(ctx, url, redis.Options{Prefix: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = q.Close() })
	if err := q.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	if n, _ := rc.Exists(ctx, quiet+"deployment").Result(); n != 0 {
		t.Fatal("a store without WatchDeployment wrote a deployment marker")
	}
}
