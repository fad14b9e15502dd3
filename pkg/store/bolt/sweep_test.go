package bolt_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/clock"
	"github.com/mcpmon/mcpmon/pkg/msg"
	"github.com/mcpmon/mcpmon/pkg/store"
	"github.com/mcpmon/mcpmon/pkg/store/bolt"
	"github.com/mcpmon/mcpmon/pkg/store/storetest"
)

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
	clk.Advance(34 * time.Minute)
	// old: done expired at +1h; abandoned: lease end +1m plus TTL 1h = +61m;
	// the verdict at +0 is older than the 1h history by more than its slack
	// (a 32nd of it, 1m52.5s). fresh stays (+91m).
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
