package bolt_test

import (
	"crypto/rand"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mcpmon/mcpmon/pkg/clock"
	"github.com/mcpmon/mcpmon/pkg/store"
	"github.com/mcpmon/mcpmon/pkg/store/bolt"
)

// mountTmpfs mounts a tmpfs of size on a new directory for the test (a
// disk that fills up for real), or skips when this process may not mount.
func mountTmpfs(t *testing.T, size string) (dir string, resize func(size string)) {
	t.Helper()
	dir = t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("mount a %s tmpfs (a disk that fills up): %v %s; this test needs root (CAP_SYS_ADMIN)", size, err, out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", "-l", dir).Run() })
	return dir, func(size string) {
		t.Helper()
		if out, err := exec.Command("mount", "-o", "remount,size="+size, dir).CombinedOutput(); err != nil {
			t.Fatalf("grow the tmpfs to %s: %v %s", size, err, out)
		}
	}
}

// TestFullDiskFailsReadiness: on a disk that fills up, a write fails with
// the disk's error, Ping (the store's part of /readyz) says so and what to
// do while reads still work, the failed commits are counted
// (mcpmon_store_commit_failures_total); with space again, writes succeed
// and Ping is nil once no commit has failed for 30 s.
func TestFullDiskFailsReadiness(t *testing.T) {
	dir, resize := mountTmpfs(t, "512k")
	clk := clock.NewFake(time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC))
	path := filepath.Join(dir, "store.db")
	s, err := bolt.Open(path, bolt.Options{Clock: clk, SweepInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	ctx := t.Context()
	fc := s.FileCollector()
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
	if n := counterOf(t, fc, "mcpmon_store_commit_failures_total"); n < 1 {
		t.Errorf("mcpmon_store_commit_failures_total = %v after a failed commit, want ≥ 1", n)
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

// counterOf is the value of the counter name that c exports.
func counterOf(t *testing.T, c prometheus.Collector, name string) float64 {
	t.Helper()
	mfs, err := registryWith(t, c).Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) == 1 {
			return mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	t.Fatalf("no counter %s", name)
	return 0
}
