package bolt_test

import (
	"context"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/mcpmon/mcpmon/pkg/clock"
	"github.com/mcpmon/mcpmon/pkg/msg"
	"github.com/mcpmon/mcpmon/pkg/store"
	"github.com/mcpmon/mcpmon/pkg/store/bolt"
	"github.com/mcpmon/mcpmon/pkg/store/storetest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func open(t *testing.T, path string, clk clock.Clock) *bolt.Store {
	t.Helper()
	s, err := bolt.Open(path, bolt.Options{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T, clk *clock.Fake) store.Store {
		return open(t, filepath.Join(t.TempDir(), "store.db"), clk)
	})
}

// TestReopenKeepsState: what was written before Close is there after a
// reopen of the same file (a restart of `mcpmon run`).
func TestReopenKeepsState(t *testing.T) {
	ctx := t.Context()
	clk := clock.NewFake(storetest.Start)
	path := filepath.Join(t.TempDir(), "data", "store.db")
	s := open(t, path, clk)
	if _, err := s.CreateEndpoint(ctx, store.Endpoint{ID: "ep", Schedule: "@every 1m"}); err != nil {
		t.Fatal(err)
	}
	inc := store.Incident{ID: msg.IncidentID("ep", storetest.Start), EndpointID: "ep", State: store.IncidentOpen, OpenedWindow: storetest.Start}
	if err := s.SaveTracker(ctx, store.Tracker{EndpointID: "ep", OpenIncidentID: inc.ID}, inc); err != nil {
		t.Fatal(err)
	}
	if st, err := s.Claim(ctx, "k", "a", time.Minute); err != nil || st != store.ClaimAcquired {
		t.Fatalf("claim = %v, %v", st, err)
	}
	if err := s.Complete(ctx, "k", "a"); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = open(t, path, clk)
	if _, err := s.GetEndpoint(ctx, "ep"); err != nil {
		t.Fatal(err)
	}
	got, err := s.GetIncident(ctx, inc.ID)
	if err != nil || got.Version != 1 {
		t.Fatalf("incident after reopen = %+v, %v", got, err)
	}
	if st, err := s.Claim(ctx, "k", "b", time.Minute); err != nil || st != store.ClaimDone {
		t.Fatalf("claim after reopen = %v, %v; want done", st, err)
	}
}

// TestSecondOpenFailsFast: a second process on the same data dir gets an
// error naming the problem instead of hanging on the file lock.
func TestSecondOpenFailsFast(t *testing.T) {
	path := filepath.Join(t.TempDir(), "store.db")
	open(t, path, clock.Real{})
	_, err := bolt.Open(path, bolt.Options{LockTimeout: 50 * time.Millisecond})
	if err == nil {
		t.Fatal("second Open of a locked file succeeded")
	}
}

// TestSweep: expired ledger keys and aged verdicts are deleted; live ones stay.
func TestSweep(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewFake(storetest.Start)
	s, err := bolt.Open(filepath.Join(t.TempDir(), "store.db"), bolt.Options{Clock: clk, SweepInterval: -1, LedgerTTL: time.Hour, VerdictHistory: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, k := range []string{"old", "abandoned"} {
		if _, err := s.Claim(ctx, k, "a", time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Complete(ctx, "old", "a"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.RecordVerdict(ctx, msg.Verdict{EndpointID: "ep", Window: storetest.Start, State: msg.StateUp}); err != nil {
		t.Fatal(err)
	}
	if n, err := s.Sweep(ctx); err != nil || n != 0 {
		t.Fatalf("sweep of live records deleted %d, %v", n, err)
	}
	clk.Advance(30 * time.Minute)
	if _, err := s.Claim(ctx, "fresh", "a", time.Minute); err != nil {
		t.Fatal(err)
	}
	clk.Advance(31*time.Minute + time.Second)
	// old: done expired at +1h; abandoned: lease end +1m plus TTL 1h = +61m;
	// the verdict at +0 is older than the 1h history. fresh stays (+91m).
	n, err := s.Sweep(ctx)
	if err != nil || n != 3 {
		t.Fatalf("sweep deleted %d, %v; want 3", n, err)
	}
	if st, err := s.Claim(ctx, "fresh", "b", time.Minute); err != nil || st != store.ClaimAcquired {
		// fresh's lease (1m) has long ended: taken over, not swept.
		t.Fatalf("fresh = %v, %v", st, err)
	}
	if st, err := s.Claim(ctx, "old", "b", time.Minute); err != nil || st != store.ClaimAcquired {
		t.Fatalf("swept key = %v, %v; want acquired", st, err)
	}
}

// BenchmarkClaimComplete: one notification's ledger round (claim + complete)
// on the embedded store; each is one fsynced bbolt transaction.
func BenchmarkClaimComplete(b *testing.B) {
	s, err := bolt.Open(filepath.Join(b.TempDir(), "store.db"), bolt.Options{SweepInterval: -1})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	for i := 0; b.Loop(); i++ {
		key := "bench-" + strconv.Itoa(i)
		if _, err := s.Claim(ctx, key, "a", time.Minute); err != nil {
			b.Fatal(err)
		}
		if err := s.Complete(ctx, key, "a"); err != nil {
			b.Fatal(err)
		}
	}
}

// TestDeleteEndpoint runs the conformance suite's delete cases on their own.
func TestDeleteEndpoint(t *testing.T) {
	storetest.DeleteEndpoint(t, func(t *testing.T, clk *clock.Fake) store.Store {
		return open(t, filepath.Join(t.TempDir(), "store.db"), clk)
	})
}
