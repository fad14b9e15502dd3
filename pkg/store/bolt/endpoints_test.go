package bolt_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/clock"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/store"
	"github.com/mcpmon/mcpmon/pkg/store/storetest"
)

// TestDeleteEndpoint runs the conformance suite's delete cases on their own.
func TestDeleteEndpoint(t *testing.T) {
	storetest.DeleteEndpoint(t, func(t *testing.T, clk *clock.Fake) store.Store {
		return open(t, filepath.Join(t.TempDir(), "store.db"), clk)
	})
}

// TestGetEndpointWithoutATransaction: once read, an endpoint is read again
// without a bbolt transaction until an endpoint is written (counted by
// bbolt's started read transactions), and every write path — create,
// update, delete, re-create under the same ID — is seen by the next read.
func TestGetEndpointWithoutATransaction(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "store.db"), clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)))
	ctx := t.Context()
	reads := func() int { return s.DB().Stats().TxN }
	name := func(id string) string {
		t.Helper()
		e, err := s.GetEndpoint(ctx, id)
		if err != nil {
			t.Fatalf("get %s: %v", id, err)
		}
		return e.Name
	}
	if _, err := s.CreateEndpoint(ctx, model.Endpoint{ID: "ep", Name: "one", Schedule: "@every 1m"}); err != nil {
		t.Fatal(err)
	}
	if got := name("ep"); got != "one" {
		t.Fatalf("after create: %q", got)
	}
	before := reads()
	for range 3 {
		if got := name("ep"); got != "one" {
			t.Fatalf("again: %q", got)
		}
	}
	if n := reads() - before; n != 0 {
		t.Fatalf("three reads of an unchanged endpoint began %d read transactions, want 0", n)
	}

	cur, _ := s.GetEndpoint(ctx, "ep")
	cur.Name = "two"
	if _, err := s.UpdateEndpoint(ctx, cur); err != nil {
		t.Fatal(err)
	}
	if got := name("ep"); got != "two" {
		t.Fatalf("after update: %q, want two", got)
	}
	// Another endpoint's write moves the generation for all: one read
	// transaction, then none.
	if _, err := s.CreateEndpoint(ctx, model.Endpoint{ID: "other", Schedule: "@every 1m"}); err != nil {
		t.Fatal(err)
	}
	before = reads()
	name("ep")
	name("ep")
	if n := reads() - before; n != 1 {
		t.Fatalf("two reads after another endpoint's write began %d read transactions, want 1", n)
	}

	if err := s.DeleteEndpoint(ctx, "ep"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetEndpoint(ctx, "ep"); !errors.Is(err, model.ErrNotFound) {
		t.Fatalf("after delete: %v, want ErrNotFound", err)
	}
	if _, err := s.CreateEndpoint(ctx, model.Endpoint{ID: "ep", Name: "three", Schedule: "@every 1m"}); err != nil {
		t.Fatal(err)
	}
	if got := name("ep"); got != "three" {
		t.Fatalf("after delete and re-create: %q, want three", got)
	}
	// A failed write (a version conflict) still leaves reads right.
	stale, _ := s.GetEndpoint(ctx, "ep")
	stale.Name, stale.Version = "stale", stale.Version+5
	if _, err := s.UpdateEndpoint(ctx, stale); err == nil {
		t.Fatal("an update at an old version was applied")
	}
	if got := name("ep"); got != "three" {
		t.Fatalf("after a refused update: %q, want three", got)
	}
}

// TestGetEndpointConcurrentWithItsWrites: readers looping on GetEndpoint
// while a writer updates the endpoint never see a version go back, and a
// read that starts after an update returned sees that update (or a later
// one) — the promise of the endpoint generation, on the window it allows:
// a read whose transaction overlaps a write. Run it with -race too.
func TestGetEndpointConcurrentWithItsWrites(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "store.db"), clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)))
	ctx := t.Context()
	e, err := s.CreateEndpoint(ctx, model.Endpoint{ID: "ep", Name: "v1", Schedule: "@every 1m"})
	if err != nil {
		t.Fatal(err)
	}
	const updates, readers = 200, 4
	var written atomic.Int64 // the newest version whose update returned
	written.Store(e.Version)
	done := make(chan struct{})
	errs := make(chan error, readers)
	var wg sync.WaitGroup
	for range readers {
		wg.Go(func() {
			var seen int64
			for {
				select {
				case <-done:
					errs <- nil
					return
				default:
				}
				floor := written.Load()
				got, err := s.GetEndpoint(ctx, "ep")
				switch {
				case err != nil:
					errs <- err
					return
				case got.Version < floor:
					errs <- fmt.Errorf("read version %d after version %d was written", got.Version, floor)
					return
				case got.Version < seen:
					errs <- fmt.Errorf("read version %d after reading %d", got.Version, seen)
					return
				case got.Name != fmt.Sprintf("v%d", got.Version):
					errs <- fmt.Errorf("version %d reads name %q", got.Version, got.Name)
					return
				}
				seen = got.Version
			}
		})
	}
	for range updates {
		e.Name = fmt.Sprintf("v%d", e.Version+1)
		if e, err = s.UpdateEndpoint(ctx, e); err != nil {
			t.Fatal(err)
		}
		written.Store(e.Version)
	}
	close(done)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}
