package bolt_test

import (
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/clock"
	"github.com/mcpmon/mcpmon/pkg/store"
	"github.com/mcpmon/mcpmon/pkg/store/bolt"
	"github.com/mcpmon/mcpmon/pkg/testpeers"
)

// TestFullDiskFailsReadiness: on a disk that fills up, a write fails with
// the disk's error, Ping (the store's part of /readyz) says so and what to
// do while reads still work, the failed commits are counted
// (CommitFailures, mcpmon_store_commit_failures_total); with space again, writes succeed
// and Ping is nil once no commit has failed for 30 s.
func TestFullDiskFailsReadiness(t *testing.T) {
	dir, resize := testpeers.Tmpfs(t, "512k")
	clk := clock.NewFake(time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC))
	path := filepath.Join(dir, "store.db")
	s, err := bolt.Open(path, bolt.Options{Clock: clk, SweepInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	ctx := t.Context()
	doc := func() []byte { return fmt.Appendf(nil, "{\"pad\":%q}", rand.Text()+strings.Repeat("x", 4000)) }

	var werr error
	written := 0
	for ; written < 1000 && werr == nil; written++ {
		werr = s.PutObject(ctx, store.KindAgentSeen, fmt.Sprintf("k%04d", written), doc())
	}
	if werr == nil || !strings.Contains(werr.Error(), "no space left on device") {
		t.Fatalf("%d writes of 4 KB to a 512 KB disk: %v, want the disk's ENOSPC", written, werr)
	}
	if _, err := s.GetObject(ctx, store.KindAgentSeen, "k0000"); err != nil {
		t.Errorf("a read while the disk is full: %v, want the record", err)
	}
	perr := s.Ping(ctx)
	if perr == nil || !strings.Contains(perr.Error(), path) || !strings.Contains(perr.Error(), "free space on its disk") {
		t.Fatalf("Ping with a full disk: %v, want the file named and what to do", perr)
	}
	if n := s.CommitFailures(); n < 1 {
		t.Errorf("CommitFailures = %v after a failed commit, want ≥ 1", n)
	}

	resize("64m")
	if err := s.PutObject(ctx, store.KindAgentSeen, "after", doc()); err != nil {
		t.Fatalf("a write with space again: %v", err)
	}
	clk.Advance(29 * time.Second)
	if err := s.Ping(ctx); err == nil {
		t.Errorf("Ping 29 s after the last failed commit: nil, want still reported (readiness does not flap on a nearly full disk)")
	}
	clk.Advance(2 * time.Second)
	if err := s.Ping(ctx); err != nil {
		t.Errorf("Ping 31 s after the last failed commit, writes succeeding: %v, want nil", err)
	}
}

// TestDeletedFileFailsReadiness: the store's file deleted under the
// running store (`rm -rf data` in the wrong terminal): writes still
// succeed, into a file no name reaches, so Ping is what says so.
func TestDeletedFileFailsReadiness(t *testing.T) {
	path := filepath.Join(t.TempDir(), "store.db")
	s, err := bolt.Open(path, bolt.Options{SweepInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	ctx := t.Context()
	if err := s.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := s.PutObject(ctx, store.KindAgentSeen, "after", []byte(`{}`)); err != nil {
		t.Fatalf("a write after the file was deleted: %v (it succeeds, into the unnamed file)", err)
	}
	if err := s.Ping(ctx); err == nil || !strings.Contains(err.Error(), path+" was deleted") {
		t.Fatalf("Ping after the file was deleted: %v, want it named and reported deleted", err)
	}
}
