package bolt_test

import (
	"path/filepath"
	"testing"
	"time"

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
