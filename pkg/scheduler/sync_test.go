package scheduler

import (
	"context"
	"errors"
	"path/filepath"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mcpmon/mcpmon/pkg/store"
	"github.com/mcpmon/mcpmon/pkg/store/bolt"
)

type listerFunc func(ctx context.Context) ([]store.Endpoint, error)

func (f listerFunc) ListEndpoints(ctx context.Context) ([]store.Endpoint, error) { return f(ctx) }

// Changes written to the store by another replica reach this scheduler
// within one resync interval; a store outage keeps the current schedule.
func TestSyncEveryFollowsTheStore(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st, err := bolt.Open(filepath.Join(t.TempDir(), "mcpmon.db"), bolt.Options{SweepInterval: -1})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		ctx := t.Context()
		if _, err := st.CreateEndpoint(ctx, ep("a", "@every 30s")); err != nil {
			t.Fatal(err)
		}
		var down atomic.Bool // timer wakeups in the bubble are not race-detector edges
		src := listerFunc(func(ctx context.Context) ([]store.Endpoint, error) {
			if down.Load() {
				return nil, errors.New("store unavailable")
			}
			return st.ListEndpoints(ctx)
		})

		s := New(&recorder{}, Options{})
		runCtx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- s.SyncEvery(runCtx, src, time.Minute) }()
		synctest.Wait()
		if _, ok := s.Next("a"); !ok || s.Len() != 1 {
			t.Fatalf("after the first sync: Len %d, a scheduled %v", s.Len(), ok)
		}

		// Another replica deletes a and creates b.
		if err := st.DeleteEndpoint(ctx, "a"); err != nil {
			t.Fatal(err)
		}
		if _, err := st.CreateEndpoint(ctx, ep("b", "@every 30s")); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		_, hasA := s.Next("a")
		_, hasB := s.Next("b")
		if hasA || !hasB {
			t.Fatalf("after one interval: a scheduled %v (want false), b %v (want true)", hasA, hasB)
		}

		down.Store(true)
		time.Sleep(time.Minute)
		synctest.Wait()
		if _, ok := s.Next("b"); !ok {
			t.Fatal("a failed list cleared the schedule")
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("SyncEvery returned %v on cancel, want nil", err)
		}
	})
}
