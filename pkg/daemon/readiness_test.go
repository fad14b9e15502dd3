package daemon

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestReadinessWatchExportsAndLogsChanges: the process checks its own
// readiness at start and every 30 s, exports it as mcpmon_ready and logs
// each change once (not each failed check).
func TestReadinessWatchExportsAndLogsChanges(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var failing atomic.Bool
		check := func(context.Context) error {
			if failing.Load() {
				return errors.New("store: redis lost mcpmon's data")
			}
			return nil
		}
		reg := prometheus.NewRegistry()
		g := newReadyGauge(reg)
		var logs bytes.Buffer
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- watchReadiness(ctx, check, g, slog.New(slog.NewTextHandler(&logs, nil))) }()
		synctest.Wait()
		if v := testutil.ToFloat64(g); v != 1 {
			t.Fatalf("mcpmon_ready at start = %v, want 1", v)
		}
		failing.Store(true)
		time.Sleep(3 * readinessEvery) // three failed checks
		synctest.Wait()
		if v := testutil.ToFloat64(g); v != 0 {
			t.Fatalf("mcpmon_ready while not ready = %v, want 0", v)
		}
		failing.Store(false)
		time.Sleep(readinessEvery)
		synctest.Wait()
		if v := testutil.ToFloat64(g); v != 1 {
			t.Fatalf("mcpmon_ready once ready again = %v, want 1", v)
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(logs.String(), "not ready"); n != 1 || !strings.Contains(logs.String(), "redis lost mcpmon's data") {
			t.Errorf("%d 'not ready' lines for three failed checks, want 1 with the reason:\n%s", n, logs.String())
		}
		if n := strings.Count(logs.String(), "ready again"); n != 1 {
			t.Errorf("%d 'ready again' lines, want 1:\n%s", n, logs.String())
		}
	})
}
