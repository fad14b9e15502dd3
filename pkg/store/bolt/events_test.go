package bolt_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/clock"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/store/bolt"
	"github.com/mcpmon/mcpmon/pkg/store/storetest"
)

// TestSweepPrunesIdleEndpointsEvents: the sweeper deletes the events, their
// fingerprints and pending entries of an endpoint that records nothing
// more (an append prunes only its own endpoint), and keeps young ones.
func TestSweepPrunesIdleEndpointsEvents(t *testing.T) {
	ctx := t.Context()
	clk := clock.NewFake(storetest.Start)
	s, err := bolt.Open(filepath.Join(t.TempDir(), "store.db"), bolt.Options{Clock: clk, SweepInterval: -1, VerdictHistory: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ev := func(ep string) model.ChangeEvent {
		return model.ChangeEvent{EndpointID: ep, Kind: model.EventVersion, Fingerprint: model.EventFingerprint(ep, model.EventVersion, "a", "b"),
			ObservedAt: clk.Now(), Message: "version changed"}
	}
	if _, err := s.AppendEvents(ctx, ev("idle")); err != nil {
		t.Fatal(err)
	}
	clk.Advance(30 * time.Minute)
	if _, err := s.AppendEvents(ctx, ev("busy")); err != nil {
		t.Fatal(err)
	}
	if n, err := s.Sweep(ctx); err != nil || n != 0 {
		t.Fatalf("sweep of young events deleted %d, %v", n, err)
	}
	clk.Advance(31 * time.Minute)
	if n, err := s.Sweep(ctx); err != nil || n != 1 {
		t.Fatalf("sweep deleted %d, %v; want idle's one event", n, err)
	}
	pend, err := s.PendingEvents(ctx, 0)
	if err != nil || len(pend) != 1 || pend[0].EndpointID != "busy" {
		t.Fatalf("pending after the sweep = %v, %v; want busy's event only", pend, err)
	}
	again, err := s.AppendEvents(ctx, ev("idle"))
	if err != nil || len(again) != 1 {
		t.Fatalf("the same change after its event aged out: %v, %v; want a new event", again, err)
	}
}
