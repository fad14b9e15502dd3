package scheduler

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/msg"
)

// An endpoint that names only an agent location is never sent to the
// commands queue; one that names a region and a location goes to both.
func TestLocationSlotsGoToTheLocationOnly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{}
		locs := NewLocations(LocationOptions{})
		s := New(rec, Options{Locations: locs})
		private := ep("private", "@every 10s")
		private.Tenant, private.Regions = "acme", []string{"loc-office"}
		both := ep("both", "@every 10s")
		both.Tenant, both.Regions = "acme", []string{"loc-office", "loc-lab"}
		plain := ep("plain", "@every 10s")
		for _, e := range []model.Endpoint{private, both, plain} {
			if err := s.Upsert(e); err != nil {
				t.Fatal(err)
			}
		}
		stop := start(t, s)
		defer stop()
		time.Sleep(11 * time.Second)
		synctest.Wait()

		if got := rec.slotsOf(t, "private"); len(got) != 0 {
			t.Errorf("an endpoint probed only from a location reached the commands queue: %v", got)
		}
		if got := rec.slotsOf(t, "plain"); len(got) == 0 {
			t.Error("a central endpoint sent no command")
		}
		if n := locs.Len("acme", "loc-office"); n != 2 {
			t.Errorf("loc-office holds %d commands, want 2 (private and both)", n)
		}
		if n := locs.Len("acme", "loc-lab"); n != 1 {
			t.Errorf("loc-lab holds %d commands, want 1", n)
		}
		if n := locs.Len("default", "loc-office"); n != 0 {
			t.Errorf("another tenant's location holds %d commands, want 0", n)
		}
	})
}

func TestLocationsLeaseAndRedeliver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		l := NewLocations(LocationOptions{Lease: 20 * time.Second})
		slot := time.Now().UTC().Truncate(time.Second)
		l.Put("acme", "loc-a", msg.NewProbeCommand("e1", slot))
		l.Put("acme", "loc-a", msg.NewProbeCommand("e1", slot.Add(-10*time.Second))) // older: ignored

		got := l.Take(ctx, "acme", "loc-a", 10, time.Second)
		if len(got) != 1 || !got[0].Slot.Equal(slot) {
			t.Fatalf("Take = %v, want e1 at %v", got, slot)
		}
		// Leased: a second poll waits and gets nothing.
		if again := l.Take(ctx, "acme", "loc-a", 10, 5*time.Second); len(again) != 0 {
			t.Fatalf("a leased command was handed out again at once: %v", again)
		}
		// No result within the lease: handed out again, to whoever polls.
		if again := l.Take(ctx, "acme", "loc-a", 10, 30*time.Second); len(again) != 1 {
			t.Fatalf("after the lease Take = %v, want the command again", again)
		}
		l.Done("acme", "loc-a", "e1", slot)
		if n := l.Len("acme", "loc-a"); n != 0 {
			t.Fatalf("Done left %d commands", n)
		}
	})
}

func TestLocationsTakeWakesOnPut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := NewLocations(LocationOptions{})
		slot := time.Now().UTC().Truncate(time.Second)
		done := make(chan []msg.ProbeCommand)
		start := time.Now()
		go func() { done <- l.Take(context.Background(), "acme", "loc-a", 10, 25*time.Second) }()
		time.Sleep(3 * time.Second)
		l.Put("acme", "loc-b", msg.NewProbeCommand("other", slot)) // another location: no wake
		l.Put("acme", "loc-a", msg.NewProbeCommand("e1", slot))
		got := <-done
		if len(got) != 1 || got[0].EndpointID != "e1" {
			t.Fatalf("Take = %v", got)
		}
		if waited := time.Since(start); waited != 3*time.Second {
			t.Fatalf("Take returned after %v, want at the Put (3s)", waited)
		}
	})
}

// A released command is handed out again at once, to a poll waiting
// already, not when its lease ends; a release of a slot since replaced
// frees nothing.
func TestLocationsReleaseHandsOutAgainAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		l := NewLocations(LocationOptions{Lease: 20 * time.Second})
		slot := time.Now().UTC().Truncate(time.Second)
		l.Put("acme", "loc-a", msg.NewProbeCommand("e1", slot))
		taken := l.Take(ctx, "acme", "loc-a", 10, 0)
		if len(taken) != 1 {
			t.Fatalf("Take = %v, want e1", taken)
		}
		done := make(chan []msg.ProbeCommand)
		start := time.Now()
		go func() { done <- l.Take(ctx, "acme", "loc-a", 10, 25*time.Second) }()
		time.Sleep(3 * time.Second)
		l.Release("acme", "loc-b", taken) // another location: frees nothing
		l.Release("acme", "loc-a", taken)
		got := <-done
		if len(got) != 1 || got[0].EndpointID != "e1" || !got[0].Slot.Equal(slot) {
			t.Fatalf("Take after Release = %v, want e1 at %v", got, slot)
		}
		if waited := time.Since(start); waited != 3*time.Second {
			t.Fatalf("Take returned after %v, want at the Release (3s), not at the lease's end", waited)
		}

		l.Put("acme", "loc-a", msg.NewProbeCommand("e1", slot.Add(10*time.Second)))
		newer := l.Take(ctx, "acme", "loc-a", 10, 0)
		l.Release("acme", "loc-a", got) // the older slot's: the newer stays leased
		if again := l.Take(ctx, "acme", "loc-a", 10, 0); len(newer) != 1 || len(again) != 0 {
			t.Fatalf("after releasing a replaced slot Take = %v, want nothing (the newer slot %v stays leased)", again, newer)
		}
	})
}

func TestLocationsBounded(t *testing.T) {
	l := NewLocations(LocationOptions{MaxPerLocation: 2})
	slot := time.Unix(1_800_000_000, 0).UTC()
	for _, id := range []string{"a", "b", "c"} {
		l.Put("t", "loc-x", msg.NewProbeCommand(id, slot))
	}
	l.Put("t", "loc-x", msg.NewProbeCommand("a", slot.Add(time.Minute))) // a newer slot of a held endpoint still replaces
	if n := l.Len("t", "loc-x"); n != 2 {
		t.Fatalf("Len = %d, want the bound 2", n)
	}
	got := l.Take(context.Background(), "t", "loc-x", 1, 0)
	if len(got) != 1 || got[0].EndpointID != "b" {
		t.Fatalf("Take(limit 1) = %v, want the oldest slot (b)", got)
	}
}
