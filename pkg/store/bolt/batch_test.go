package bolt

import (
	"errors"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"github.com/mcpmon/mcpmon/pkg/clock"
	"github.com/mcpmon/mcpmon/pkg/msg"
	"github.com/mcpmon/mcpmon/pkg/store"
	"github.com/mcpmon/mcpmon/pkg/store/storetest"
)

// pairBatches makes every two concurrent batched writes of s share one
// transaction, whatever the timing: the next commit waits (an hour) for
// its second call and starts when it joins. The returned func undoes it.
func pairBatches(s *Store) (undo func()) {
	c := s.commits
	c.mu.Lock()
	defer c.mu.Unlock()
	c.max, c.interval, c.shared, c.last = 2, time.Hour, true, time.Now()
	return func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.max, c.interval = maxCommitCalls, DefaultCommitInterval
	}
}

// both runs a and b concurrently and returns their errors.
func both(a, b func() error) (errA, errB error) {
	var wg sync.WaitGroup
	wg.Go(func() { errA = a() })
	wg.Go(func() { errB = b() })
	wg.Wait()
	return errA, errB
}

// TestRefusedWriteLeavesItsBatchAlone: a batched write that fails rolls
// the shared transaction back, makes the other writes of the batch run
// again (when they ran before it) and then the failed one again, alone;
// one that refuses (refuse) runs once and lets the batch commit as if it
// had not run, and its caller still gets the error.
func TestRefusedWriteLeavesItsBatchAlone(t *testing.T) {
	errNo := errors.New("no")
	for _, tc := range []struct {
		name     string
		wrap     func(error) error
		wantRuns int32 // of the refused or failed write
	}{
		{"failed", func(err error) error { return err }, 2},
		{"refused", refuse, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Open(filepath.Join(t.TempDir(), "store.db"), Options{SweepInterval: -1})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			defer pairBatches(s)()
			var runs atomic.Int32
			errA, errB := both(
				func() error {
					return s.batch(t.Context(), func(tx *bbolt.Tx) error {
						return tx.Bucket(bLatest).Put([]byte("kept"), []byte("1"))
					})
				},
				func() error {
					return s.batch(t.Context(), func(*bbolt.Tx) error {
						runs.Add(1)
						return tc.wrap(errNo)
					})
				})
			if errA != nil {
				t.Fatalf("the other write of the batch: %v", errA)
			}
			if !errors.Is(errB, errNo) {
				t.Fatalf("the refused write returned %v, want %v", errB, errNo)
			}
			if _, isRefusal := errB.(refusal); isRefusal {
				t.Fatal("the caller got the refusal wrapper, not the error")
			}
			if got := runs.Load(); got != tc.wantRuns {
				t.Fatalf("the %s write ran %d times, want %d", tc.name, got, tc.wantRuns)
			}
			err = s.db.View(func(tx *bbolt.Tx) error {
				if tx.Bucket(bLatest).Get([]byte("kept")) == nil {
					return errors.New("the other write is not in the file")
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestLateResultInASharedBatch: a result for a decided window, batched
// with another endpoint's result, is refused (ErrWindowDecided, nothing
// written) while the other is added, and the other's write is not run
// twice (the store's file holds it once, and its window is open).
func TestLateResultInASharedBatch(t *testing.T) {
	ctx := t.Context()
	clk := clock.NewFake(storetest.Start)
	s, err := Open(filepath.Join(t.TempDir(), "store.db"), Options{Clock: clk, SweepInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	w := storetest.Start.Truncate(time.Minute)
	if _, err := s.RecordVerdict(ctx, msg.Verdict{EndpointID: "decided", Window: w, State: msg.StateUp}); err != nil {
		t.Fatal(err)
	}
	undo := pairBatches(s)
	var addedOther bool
	late, other := both(
		func() error {
			_, err := s.AddWindowResult(ctx, w, msg.ProbeResult{EndpointID: "decided", ProbeRunID: "r1", Slot: w})
			return err
		},
		func() (err error) {
			addedOther, err = s.AddWindowResult(ctx, w, msg.ProbeResult{EndpointID: "open", ProbeRunID: "r2", Slot: w})
			return err
		})
	if !errors.Is(late, store.ErrWindowDecided) {
		t.Fatalf("late result: %v, want ErrWindowDecided", late)
	}
	if other != nil || !addedOther {
		t.Fatalf("the other result: added %v, %v", addedOther, other)
	}
	undo()
	open, err := s.OpenWindows(ctx, w.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if len(open) != 1 || open[0].EndpointID != "open" {
		t.Fatalf("open windows %v, want only the other endpoint's", open)
	}
	rs, err := s.WindowResults(ctx, store.WindowRef{EndpointID: "decided", Window: w})
	if err != nil || len(rs) != 0 {
		t.Fatalf("the decided window holds %v (%v), want nothing", rs, err)
	}
}
