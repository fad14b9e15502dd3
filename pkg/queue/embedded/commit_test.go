package embedded

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mcpmon/mcpmon/pkg/clock"
	"github.com/mcpmon/mcpmon/pkg/queue"
)

func openDisk(t testing.TB) *Broker {
	t.Helper()
	b, err := Open(t.TempDir(), queue.StageConfigs(), Options{Clock: clock.NewFake(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

func send1(t testing.TB, q queue.Queue, group, dedup string) (string, error) {
	res, err := q.Send(t.Context(), []queue.SendInput{{GroupID: group, DedupID: dedup, Body: []byte("body of " + dedup)}})
	if err != nil {
		return "", err
	}
	return res[0].MessageID, res[0].Err
}

// TestConcurrentSendsShareACommitAndWaitForIt: sends that arrive while a
// commit is on its way to disk are not acknowledged before their own
// commit, and all of them share that one transaction.
func TestConcurrentSendsShareACommitAndWaitForIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := openDisk(t)
		gate := make(chan struct{})
		var commits []int
		var mu sync.Mutex
		b.beforeCommit = func(writes int) error {
			mu.Lock()
			commits = append(commits, writes)
			first := len(commits) == 1
			mu.Unlock()
			if first {
				<-gate
			}
			return nil
		}
		q := b.Queue("results")
		var acked atomic.Int32
		var wg sync.WaitGroup
		send := func(i int) {
			wg.Go(func() {
				if _, err := send1(t, q, fmt.Sprint("g", i), fmt.Sprint("d", i)); err != nil {
					t.Error(err)
				}
				acked.Add(1)
			})
		}
		send(0)
		synctest.Wait() // the first send's commit is held at the gate
		for i := 1; i <= 9; i++ {
			send(i)
		}
		synctest.Wait()
		if n := acked.Load(); n != 0 {
			t.Fatalf("%d sends acknowledged before their commit", n)
		}
		// Nobody holds the lock while the disk works.
		if s := depth(t, q); s.Visible != 10 {
			t.Fatalf("stats during the commit: %+v, want 10 visible", s)
		}
		close(gate)
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		// Each send writes its message and its dedup record.
		if fmt.Sprint(commits) != "[2 18]" {
			t.Fatalf("commits (writes each) = %v, want [2 18]: the nine waiting sends share one", commits)
		}
	})
}

// TestDuplicateSendWaitsForTheOriginalsCommit: the answer "duplicate of m"
// is an acknowledgement of m, so it must not come before m is on disk.
func TestDuplicateSendWaitsForTheOriginalsCommit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := openDisk(t)
		gate := make(chan struct{})
		var held atomic.Bool
		b.beforeCommit = func(int) error {
			if held.CompareAndSwap(false, true) {
				<-gate
			}
			return nil
		}
		q := b.Queue("results")
		ids := make(chan string, 2)
		for range 2 {
			go func() {
				id, err := send1(t, q, "g", "same")
				if err != nil {
					t.Error(err)
				}
				ids <- id
			}()
			synctest.Wait()
		}
		if len(ids) != 0 {
			t.Fatal("a send was acknowledged while the original's commit was held")
		}
		close(gate)
		if a, b := <-ids, <-ids; a != b {
			t.Fatalf("message IDs %s and %s, want the duplicate to carry the original's", a, b)
		}
	})
}

// TestFailedCommitFailsItsCallsAndRollsBack: a commit that fails fails
// every call in it, and the in-memory state returns to the file's, so
// the message of a failed send is neither received nor taken for a
// duplicate of the retry.
func TestFailedCommitFailsItsCallsAndRollsBack(t *testing.T) {
	b := openDisk(t)
	q := b.Queue("results")
	kept, err := send1(t, q, "g", "kept")
	if err != nil {
		t.Fatal(err)
	}
	errDisk := errors.New("input/output error")
	var fail atomic.Bool
	b.beforeCommit = func(int) error {
		if fail.Load() {
			return errDisk
		}
		return nil
	}
	fail.Store(true)
	if _, err := send1(t, q, "g", "lost"); !errors.Is(err, errDisk) {
		t.Fatalf("send in a failed commit: err = %v, want %v", err, errDisk)
	}
	if _, err := q.Receive(t.Context(), queue.ReceiveInput{Max: 10}); !errors.Is(err, errDisk) {
		t.Fatalf("receive in a failed commit: err = %v, want %v", err, errDisk)
	}
	fail.Store(false)
	ms, err := q.Receive(t.Context(), queue.ReceiveInput{Max: 10})
	if err != nil || len(ms) != 1 || ms[0].ID != kept || ms[0].ReceiveCount != 1 {
		t.Fatalf("after the failures: %+v, %v; want only %s, received once", ms, err, kept)
	}
	res, err := q.Send(t.Context(), []queue.SendInput{{GroupID: "g", DedupID: "lost", Body: []byte("again")}})
	if err != nil || res[0].Duplicate {
		t.Fatalf("retry of the failed send = %+v, %v; want a new message", res, err)
	}
}

func depth(t testing.TB, q queue.Queue) queue.Stats {
	t.Helper()
	s, err := q.(queue.StatsReader).Stats(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestCommitIntervalSparesAQuietCall: a call after a quiet spell is
// committed at once; one right behind it waits for the interval to end
// (synctest: virtual time, so the wait is exact).
func TestCommitIntervalSparesAQuietCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const interval = 25 * time.Millisecond
		b, err := Open(t.TempDir(), queue.StageConfigs(), Options{CommitInterval: interval})
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		q := b.Queue("results")
		start := time.Now()
		if _, err := send1(t, q, "g", "first"); err != nil {
			t.Fatal(err)
		}
		if waited := time.Since(start); waited != 0 {
			t.Fatalf("first send waited %v, want 0", waited)
		}
		if _, err := send1(t, q, "g", "second"); err != nil {
			t.Fatal(err)
		}
		if waited := time.Since(start); waited != interval {
			t.Fatalf("second send returned after %v, want %v", waited, interval)
		}
	})
}
