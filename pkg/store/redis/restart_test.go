package redis_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/clock"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/msg"
	"github.com/mcpmon/mcpmon/pkg/store"
	"github.com/mcpmon/mcpmon/pkg/store/redis"
	"github.com/mcpmon/mcpmon/pkg/store/storetest"
	"github.com/mcpmon/mcpmon/pkg/testpeers"
)

// logRecorder keeps the messages the store logs.
type logRecorder struct {
	mu   sync.Mutex
	msgs []string
}

func (r *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (r *logRecorder) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	r.msgs = append(r.msgs, rec.Message)
	r.mu.Unlock()
	return nil
}
func (r *logRecorder) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r *logRecorder) WithGroup(string) slog.Handler      { return r }

func (r *logRecorder) count(prefix string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, m := range r.msgs {
		if strings.HasPrefix(m, prefix) {
			n++
		}
	}
	return n
}

// TestRestartLosesNothing crashes Redis (SIGKILL, AOF on) after the store
// wrote an endpoint, an open incident with its tracker, a verdict and ledger
// keys; while Redis is down every operation fails promptly with
// store.ErrUnavailable (and the outage is logged once); after Redis restarts
// on the same AOF the same Store works again and every record is there.
func TestRestartLosesNothing(t *testing.T) {
	srv := testpeers.NewRedisServer(t)
	srv.Start()
	ctx := t.Context()
	clk := clock.NewFake(storetest.Start)
	logs := &logRecorder{}
	s, err := redis.New(ctx, srv.URL(), redis.Options{Clock: clk, LeasesOnClock: true, Logger: slog.New(logs), DialTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	// Before: state a running pipeline would have.
	if _, err := s.CreateEndpoint(ctx, model.Endpoint{ID: "ep", URL: "https://ep.example/mcp", Schedule: "@every 1m"}); err != nil {
		t.Fatal(err)
	}
	inc := model.Incident{ID: msg.IncidentID("ep", storetest.Start), EndpointID: "ep", State: model.IncidentOpen, OpenedWindow: storetest.Start}
	if err := s.SaveTracker(ctx, model.Tracker{EndpointID: "ep", OpenIncidentID: inc.ID}, inc); err != nil {
		t.Fatal(err)
	}
	if _, err := s.RecordVerdict(ctx, msg.Verdict{EndpointID: "ep", Window: storetest.Start, State: msg.StateDown}); err != nil {
		t.Fatal(err)
	}
	openKey := msg.LedgerKey("ep", inc.ID, "open", "webhook")
	resolveKey := msg.LedgerKey("ep", inc.ID, "resolve", "webhook")
	for _, k := range []string{openKey, resolveKey} {
		if st, err := s.Claim(ctx, k, "alerter-1", time.Hour); err != nil || st != store.ClaimAcquired {
			t.Fatalf("claim %s = %v, %v", k, st, err)
		}
	}
	if err := s.Complete(ctx, openKey, "alerter-1"); err != nil {
		t.Fatal(err)
	}

	srv.Kill()

	// Down: prompt ErrUnavailable from reads, writes and scripts alike.
	ops := map[string]func() error{
		"ping":         func() error { return s.Ping(ctx) },
		"get incident": func() error { _, err := s.GetIncident(ctx, inc.ID); return err },
		"claim":        func() error { _, err := s.Claim(ctx, "other", "alerter-2", time.Minute); return err },
		"save tracker": func() error { return s.SaveTracker(ctx, model.Tracker{EndpointID: "ep2"}) },
		"verdict": func() error {
			_, err := s.RecordVerdict(ctx, msg.Verdict{EndpointID: "ep2", Window: storetest.Start})
			return err
		},
	}
	for name, op := range ops {
		began := time.Now()
		err := op()
		took := time.Since(began)
		if !errors.Is(err, store.ErrUnavailable) {
			t.Fatalf("%s with Redis down: err = %v, want store.ErrUnavailable", name, err)
		}
		if took > 3*time.Second {
			t.Fatalf("%s with Redis down took %s: dial and retry budgets are not bounded", name, took)
		}
	}
	if n := logs.count("redis unreachable"); n != 1 {
		t.Fatalf("outage logged %d times over %d failing operations, want once", n, len(ops))
	}

	srv.Start()
	if !strings.Contains(srv.Output(), "append only file") {
		t.Fatalf("restarted redis-server did not load the AOF:\n%s", srv.Output())
	}

	// The same Store recovers. go-redis re-probes a failed dial on its own
	// real-time one-second timer (not injectable), so this waits for Ping
	// with a bounded deadline instead of expecting the very first call to
	// succeed.
	deadline := time.After(15 * time.Second)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for s.Ping(ctx) != nil {
		select {
		case <-deadline:
			t.Fatalf("store still unavailable 15s after Redis returned: %v", s.Ping(ctx))
		case <-tick.C:
		}
	}
	if n := logs.count("redis reachable again"); n != 1 {
		t.Fatalf("recovery logged %d times, want once", n)
	}

	// After: nothing lost.
	if _, err := s.GetEndpoint(ctx, "ep"); err != nil {
		t.Fatalf("endpoint after restart: %v", err)
	}
	got, err := s.GetIncident(ctx, inc.ID)
	if err != nil || got.Version != 1 || got.State != model.IncidentOpen {
		t.Fatalf("incident after restart = %+v, %v", got, err)
	}
	tr, err := s.GetTracker(ctx, "ep")
	if err != nil || tr.Version != 1 || tr.OpenIncidentID != inc.ID {
		t.Fatalf("tracker after restart = %+v, %v", tr, err)
	}
	incs, err := s.ListIncidents(ctx, store.IncidentFilter{EndpointID: "ep", State: model.IncidentOpen})
	if err != nil || len(incs) != 1 {
		t.Fatalf("open incidents after restart = %d, %v", len(incs), err)
	}
	if v, err := s.LastVerdict(ctx, "ep"); err != nil || !v.Window.Equal(storetest.Start) {
		t.Fatalf("last verdict after restart = %+v, %v", v, err)
	}
	// No duplicate alert: the open notification is done for a second
	// alerter; the resolve claim is still alerter-1's.
	if st, err := s.Claim(ctx, openKey, "alerter-2", time.Minute); err != nil || st != store.ClaimDone {
		t.Fatalf("open alert key after restart = %v, %v; want done", st, err)
	}
	if st, err := s.Claim(ctx, resolveKey, "alerter-2", time.Minute); err != nil || st != store.ClaimHeld {
		t.Fatalf("resolve claim after restart = %v, %v; want held", st, err)
	}
	if err := s.Complete(ctx, resolveKey, "alerter-1"); err != nil {
		t.Fatalf("complete after restart: %v", err)
	}
}
