package bolt_test

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/goleak"

	"github.com/mcpmon/mcpmon/pkg/clock"
	"github.com/mcpmon/mcpmon/pkg/model"
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
	if _, err := s.CreateEndpoint(ctx, model.Endpoint{ID: "ep", Schedule: "@every 1m"}); err != nil {
		t.Fatal(err)
	}
	inc := model.Incident{ID: msg.IncidentID("ep", storetest.Start), EndpointID: "ep", State: model.IncidentOpen, OpenedWindow: storetest.Start}
	if err := s.SaveTracker(ctx, model.Tracker{EndpointID: "ep", OpenIncidentID: inc.ID}, inc); err != nil {
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

// TestFileCollectorCountsCommits: every committed write is one commit and
// at least one page; a read is neither.
func TestFileCollectorCountsCommits(t *testing.T) {
	ctx := t.Context()
	s := open(t, filepath.Join(t.TempDir(), "store.db"), clock.NewFake(storetest.Start))
	fc := s.FileCollector()
	if c, p := fc.Counts(); c != 0 || p != 0 {
		t.Fatalf("Counts before any write = %d commits, %d pages; want 0, 0", c, p)
	}
	for i := range 3 {
		if err := s.PutLatestResult(ctx, msg.ProbeResult{EndpointID: fmt.Sprintf("ep-%d", i), Slot: storetest.Start}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.LatestResult(ctx, "ep-0"); err != nil {
		t.Fatal(err)
	}
	c, p := fc.Counts()
	if c != 3 || p < 3 {
		t.Fatalf("Counts after 3 writes one after another and a read = %d commits, %d pages; want 3 commits, at least 3 pages", c, p)
	}
	if n, err := testutil.GatherAndCount(registryWith(t, fc), "mcpmon_store_commits_total", "mcpmon_store_pages_written_total"); err != nil || n != 2 {
		t.Fatalf("gathered %d series, %v; want 2", n, err)
	}
}

func registryWith(t *testing.T, c prometheus.Collector) *prometheus.Registry {
	t.Helper()
	reg := prometheus.NewRegistry()
	if err := reg.Register(c); err != nil {
		t.Fatal(err)
	}
	return reg
}

// TestCreatedSurvivesReopenNotANewFile: the file's creation time is kept
// across restarts, and a file made again (the data dir emptied while no
// process ran) reports a later one, which is what
// mcpmon_store_created_timestamp_seconds shows the operator.
func TestCreatedSurvivesReopenNotANewFile(t *testing.T) {
	clk := clock.NewFake(storetest.Start)
	path := filepath.Join(t.TempDir(), "store.db")
	s, err := bolt.Open(path, bolt.Options{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Created(); !got.Equal(storetest.Start.Truncate(time.Second)) {
		t.Fatalf("Created of a new file = %v, want %v", got, storetest.Start)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Hour)
	if got := open(t, path, clk).Created(); !got.Equal(storetest.Start.Truncate(time.Second)) {
		t.Fatalf("Created after a reopen an hour later = %v, want %v", got, storetest.Start)
	}
	if got := open(t, filepath.Join(t.TempDir(), "store.db"), clk).Created(); !got.Equal(clk.Now().Truncate(time.Second)) {
		t.Fatalf("Created of a file made an hour later = %v, want %v", got, clk.Now())
	}
}
