package scheduler

import (
	"context"
	"errors"
	"path/filepath"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/store/bolt"
)

type listerFunc func(ctx context.Context) ([]model.Endpoint, error)

func (f listerFunc) ListEndpoints(ctx context.Context) ([]model.Endpoint, error) { return f(ctx) }

// Changes written to the store by another replica reach this scheduler
// within one resync interval; a store outage keeps the current schedule.
func TestSyncEveryFollowsTheStore(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st, err := bolt.Open(filepath.Join(t.TempDir(), "mcpmon.db"), bolt.Options{SweepInterval: -1})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		ctx := t.Context()
		if _, err := st.CreateEndpoint(ctx, ep("a", "@every 30s")); err != nil {
			t.Fatal(err)
		}
		var down atomic.Bool // timer wakeups in the bubble are not race-detector edges
		src := listerFunc(func(ctx context.Context) ([]model.Endpoint, error) {
			if down.Load() {
				return nil, errors.New("store unavailable")
			}
			return st.ListEndpoints(ctx)
		})

		s := New(&recorder{}, Options{})
		runCtx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- s.SyncEvery(runCtx, src, time.Minute) }()
		synctest.Wait()
		if _, ok := s.Next("a"); !ok || s.Len() != 1 {
			t.Fatalf("after the first sync: Len %d, a scheduled %v", s.Len(), ok)
		}

		// Another replica deletes a and creates b.
		if err := st.DeleteEndpoint(ctx, "a"); err != nil {
			t.Fatal(err)
		}
		if _, err := st.CreateEndpoint(ctx, ep("b", "@every 30s")); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		_, hasA := s.Next("a")
		_, hasB := s.Next("b")
		if hasA || !hasB {
			t.Fatalf("after one interval: a scheduled %v (want false), b %v (want true)", hasA, hasB)
		}

		down.Store(true)
		time.Sleep(time.Minute)
		synctest.Wait()
		if _, ok := s.Next("b"); !ok {
			t.Fatal("a failed list cleared the schedule")
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("SyncEvery returned %v on cancel, want nil", err)
		}
	})
}

// A resync whose list was read before an API change on this replica must
// not undo it: no create dropped, no delete resurrected, no edit reverted.
func TestSyncEveryDoesNotUndoConcurrentChanges(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st, err := bolt.Open(filepath.Join(t.TempDir(), "mcpmon.db"), bolt.Options{SweepInterval: -1})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		ctx := t.Context()
		s := New(&recorder{}, Options{})
		mustCreate := func(e model.Endpoint) model.Endpoint {
			got, err := st.CreateEndpoint(ctx, e)
			if err != nil {
				t.Fatal(err)
			}
			return got
		}
		mustCreate(ep("old", "@every 30s"))
		p := mustCreate(ep("edited", "@every 1h"))

		var calls atomic.Int32
		src := listerFunc(func(ctx context.Context) ([]model.Endpoint, error) {
			eps, err := st.ListEndpoints(ctx)
			if calls.Add(1) != 2 {
				return eps, err
			}
			// The API on this replica acts between the read and the sync.
			n := mustCreate(ep("new", "@every 30s"))
			if err := s.Upsert(n); err != nil {
				t.Error(err)
			}
			if err := st.DeleteEndpoint(ctx, "old"); err != nil {
				t.Error(err)
			}
			s.Remove("old")
			p.Schedule = "@every 10s"
			p2, err2 := st.UpdateEndpoint(ctx, p)
			if err2 != nil {
				t.Error(err2)
			}
			if err := s.Upsert(p2); err != nil {
				t.Error(err)
			}
			return eps, err
		})

		runCtx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- s.SyncEvery(runCtx, src, time.Minute) }()
		synctest.Wait()
		time.Sleep(time.Minute) // the racing resync
		synctest.Wait()
		check := func(when string) {
			t.Helper()
			_, hasOld := s.Next("old")
			_, hasNew := s.Next("new")
			next, hasEdited := s.Next("edited")
			if hasOld || !hasNew || !hasEdited || next.Sub(time.Now()) > 10*time.Second {
				t.Fatalf("%s: old %v (want false), new %v (want true), edited next in %v (want ≤ 10s)",
					when, hasOld, hasNew, next.Sub(time.Now()))
			}
		}
		check("after the racing resync")
		time.Sleep(time.Minute) // a fresh resync agrees
		synctest.Wait()
		check("after a fresh resync")
		cancel()
		<-done
	})
}

// A fleet whose listing is slow is resynced less often: the resync keeps
// under 1/resyncBudget of the time, and a cheap one keeps the interval.
func TestSyncEveryStretchesWithItsOwnCost(t *testing.T) {
	for _, tc := range []struct {
		name    string
		listing time.Duration
		want    int // lists in the first 10 minutes
	}{
		{"cheap listing keeps the interval", time.Millisecond, 40}, // every 15.001s
		{"slow listing stretches it", time.Second, 3},              // at 0, 201s, 402s
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var lists atomic.Int32
				src := listerFunc(func(ctx context.Context) ([]model.Endpoint, error) {
					lists.Add(1)
					time.Sleep(tc.listing) // the bubble's clock: what the listing took
					return []model.Endpoint{ep("a", "@every 30s")}, nil
				})
				s := New(&recorder{}, Options{})
				ctx, cancel := context.WithCancel(t.Context())
				done := make(chan error, 1)
				go func() { done <- s.SyncEvery(ctx, src, 15*time.Second) }()
				time.Sleep(10*time.Minute - time.Nanosecond)
				synctest.Wait()
				cancel()
				<-done
				if got := int(lists.Load()); got != tc.want {
					t.Fatalf("%d lists in 10 minutes, want %d", got, tc.want)
				}
			})
		})
	}
}

// countingStore is the bolt store as SyncEvery's source, counting the
// full listings it makes.
type countingStore struct {
	*bolt.Store
	lists atomic.Int64
}

func (c *countingStore) ListEndpoints(ctx context.Context) ([]model.Endpoint, error) {
	c.lists.Add(1)
	return c.Store.ListEndpoints(ctx)
}

// With a store that stamps endpoint writes, an idle fleet is not listed
// again every interval: only when another replica changed an endpoint,
// and once every staleListing intervals in case a write missed the stamp.
func TestSyncEverySkipsTheListingWhileTheStampStands(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st, err := bolt.Open(filepath.Join(t.TempDir(), "mcpmon.db"), bolt.Options{SweepInterval: -1})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		ctx := t.Context()
		if _, err := st.CreateEndpoint(ctx, ep("a", "@every 30s")); err != nil {
			t.Fatal(err)
		}
		src := &countingStore{Store: st}
		s := New(&recorder{}, Options{})
		runCtx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- s.SyncEvery(runCtx, src, time.Minute) }()
		synctest.Wait()
		if n := src.lists.Load(); n != 1 {
			t.Fatalf("%d listings at start, want 1", n)
		}
		time.Sleep(5 * time.Minute)
		synctest.Wait()
		if n := src.lists.Load(); n != 1 {
			t.Fatalf("%d listings after five idle intervals, want still 1", n)
		}

		// Another replica creates b: the stamp moves, the next resync lists.
		if _, err := st.CreateEndpoint(ctx, ep("b", "@every 30s")); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		if _, ok := s.Next("b"); !ok || src.lists.Load() != 2 {
			t.Fatalf("after another replica's create: b scheduled %v, %d listings; want true and 2", ok, src.lists.Load())
		}

		// However still the stamp, a listing runs every staleListing intervals.
		time.Sleep(staleListing * time.Minute)
		synctest.Wait()
		if n := src.lists.Load(); n != 3 {
			t.Fatalf("%d listings after %d idle intervals, want 3 (one forced)", n, staleListing)
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("SyncEvery returned %v on cancel, want nil", err)
		}
	})
}

// swappable is a store the test can replace with an empty one, as an
// emptied Redis is: its endpoints stamp counts from 0 again.
type swappable struct{ cur atomic.Pointer[bolt.Store] }

func (s *swappable) ListEndpoints(ctx context.Context) ([]model.Endpoint, error) {
	return s.cur.Load().ListEndpoints(ctx)
}

func (s *swappable) EndpointsStamp(ctx context.Context) (uint64, error) {
	return s.cur.Load().EndpointsStamp(ctx)
}

// A store that loses its data and so its stamp, back at the number the
// last listing saw, is listed again at the next resync: the endpoints
// created here since moved the stamp, so the same stamp is not "nothing
// changed". Before, such an emptied store went unnoticed for staleListing
// intervals (5 minutes at 15 s), publishing probe commands for endpoints
// that no longer exist.
func TestSyncEveryNoticesAStoreThatLostItsStamp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		open := func() *bolt.Store {
			st, err := bolt.Open(filepath.Join(t.TempDir(), "mcpmon.db"), bolt.Options{SweepInterval: -1})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			return st
		}
		ctx := t.Context()
		var src swappable
		src.cur.Store(open())
		s := New(&recorder{}, Options{})
		runCtx, cancel := context.WithCancel(ctx)
		defer cancel()
		go s.SyncEvery(runCtx, &src, time.Minute) //nolint:errcheck // returns nil on cancel
		synctest.Wait()                           // listed empty, at stamp 0

		// The API on this replica creates an endpoint: stored, then upserted.
		e, err := src.cur.Load().CreateEndpoint(ctx, ep("a", "@every 30s"))
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Upsert(e); err != nil {
			t.Fatal(err)
		}
		// The store loses everything before the next resync reads the stamp.
		src.cur.Store(open())
		time.Sleep(time.Minute)
		synctest.Wait()
		if _, ok := s.Next("a"); ok || s.Len() != 0 {
			t.Fatalf("one resync after the store was emptied: Len %d, a still scheduled %v", s.Len(), ok)
		}
	})
}
