package alerter

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/alerter/notify"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/store"
)

// subReads counts what a subscriber sweep reads from the real store: one
// per call, and one per record a listing returns. walks counts the page
// listings, one per full walk.
type subReads struct {
	store.Store
	reads, walks atomic.Int64
}

func (s *subReads) ListObjects(ctx context.Context, kind string) (map[string][]byte, error) {
	docs, err := s.Store.ListObjects(ctx, kind)
	if kind == store.KindStatusPage {
		s.walks.Add(1)
	}
	s.reads.Add(1 + int64(len(docs)))
	return docs, err
}

func (s *subReads) ListObjectsOf(ctx context.Context, kind, tenant string) (map[string][]byte, error) {
	docs, err := s.Store.ListObjectsOf(ctx, kind, tenant)
	s.reads.Add(1 + int64(len(docs)))
	return docs, err
}

func (s *subReads) ListEndpointsOf(ctx context.Context, tenant string) ([]model.Endpoint, error) {
	eps, err := s.Store.ListEndpointsOf(ctx, tenant)
	s.reads.Add(1 + int64(len(eps)))
	return eps, err
}

func (s *subReads) ListIncidents(ctx context.Context, f store.IncidentFilter) ([]model.Incident, error) {
	incs, err := s.Store.ListIncidents(ctx, f)
	s.reads.Add(1 + int64(len(incs)))
	return incs, err
}

func (s *subReads) IncidentsStamp(ctx context.Context) (uint64, error) {
	s.reads.Add(1)
	return s.Store.IncidentsStamp(ctx)
}

func (s *subReads) ObjectsStamp(ctx context.Context, kind, tenant string) (uint64, error) {
	s.reads.Add(1)
	return s.Store.ObjectsStamp(ctx, kind, tenant)
}

func (s *subReads) EndpointsStamp(ctx context.Context) (uint64, error) {
	s.reads.Add(1)
	return s.Store.(endpointsStamper).EndpointsStamp(ctx)
}

func (s *subReads) Claim(ctx context.Context, key, owner string, lease time.Duration) (store.ClaimState, error) {
	s.reads.Add(1)
	return s.Store.Claim(ctx, key, owner, lease)
}

// TestQuietSubscriberSweepReadsOnlyTheMark: with 24 pages over 25
// endpoints each, every one with an incident, a sweep that finds nothing
// new reads the five stamps of the mark and nothing else; the safety walk
// still reads every page once SubscriberSafetyInterval has passed.
func TestQuietSubscriberSweepReadsOnlyTheMark(t *testing.T) {
	const pages, members = 24, 25
	e := newEnv(t)
	for i := range members {
		e.publicEndpoint(fmt.Sprintf("ep%02d", i), "acme")
	}
	for i := range pages {
		id := fmt.Sprintf("p%02d", i)
		e.page(id, "acme")
		e.subscriber("s"+id, id, model.SubscriberConfirmed, t0.Add(-time.Minute))
	}
	sink := &noticeSink{}
	counted := &subReads{Store: e.st}
	a := e.alerter("a", func(o *Options) { o.Store = counted; o.Subscribers = sink })
	for i := range members {
		e.states(fmt.Sprintf("ep%02d", i), 0, down, down)
	}
	e.pump(a.Handle)
	// The batch limit leaves work: the next sweep walks for it though the
	// mark has not moved.
	e.sweepSubscribers(a, 1)
	if got, want := len(sink.keys()), subscriberBatch; got != want {
		t.Fatalf("first sweep sent %d notices, want the batch, %d", got, want)
	}
	e.sweepSubscribers(a, 1)
	if got, want := len(sink.keys()), pages*members; got != want {
		t.Fatalf("two sweeps sent %d notices, want %d", got, want)
	}

	counted.reads.Store(0)
	counted.walks.Store(0)
	const quiet = 10
	for range quiet {
		e.clk.Advance(DefaultSubscriberInterval)
		e.sweepSubscribers(a, 1)
	}
	if got, limit := counted.reads.Load(), int64(5*quiet); got > limit || counted.walks.Load() != 0 {
		t.Fatalf("%d quiet sweeps read %d records in %d walks, want at most %d in none", quiet, got, counted.walks.Load(), limit)
	}
	t.Logf("%d pages × %d members: %d quiet sweeps read %d", pages, members, quiet, counted.reads.Load())
	if got := len(sink.keys()); got != pages*members {
		t.Fatalf("quiet sweeps sent %d notices more", got-pages*members)
	}

	e.clk.Advance(SubscriberSafetyInterval)
	counted.reads.Store(0)
	e.sweepSubscribers(a, 1)
	t.Logf("the safety walk, with nothing owed, read %d", counted.reads.Load())
	if counted.walks.Load() != 1 {
		t.Fatalf("after %v: %d walks, want the safety walk", SubscriberSafetyInterval, counted.walks.Load())
	}
}

// TestSubscriberSweepWakesOnEveryChange: between quiet sweeps, an incident
// the alerter opens, an update saved as the API's incident update route
// saves it (store.UpdateIncident), a resolution, and a subscriber
// confirmed for an event already swept each reach their subscriber on the
// next sweep, with the clock well inside SubscriberSafetyInterval.
func TestSubscriberSweepWakesOnEveryChange(t *testing.T) {
	e := newEnv(t)
	e.publicEndpoint("ep1", "acme")
	e.page("p1", "acme")
	e.subscriber("s1", "p1", model.SubscriberConfirmed, t0.Add(-time.Minute))
	e.page("p2", "acme")
	e.subscriber("s2", "p2", model.SubscriberPending, time.Time{})
	sink := &noticeSink{}
	counted := &subReads{Store: e.st}
	a := e.alerter("a", func(o *Options) { o.Store = counted; o.Subscribers = sink })
	e.sweepSubscribers(a, 2) // the first walk, then a quiet sweep
	sweep := func(step string, want ...string) {
		t.Helper()
		before := len(sink.keys())
		e.clk.Advance(DefaultSubscriberInterval)
		walks := counted.walks.Load()
		e.sweepSubscribers(a, 1)
		if counted.walks.Load() == walks {
			t.Fatalf("%s: the sweep did not walk", step)
		}
		got := sink.keys()[before:]
		if !slices.Equal(slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(want))) {
			t.Fatalf("%s: notices %v, want %v", step, got, want)
		}
		walks = counted.walks.Load()
		e.sweepSubscribers(a, 1)
		if counted.walks.Load() != walks {
			t.Fatalf("%s: the sweep after it walked again", step)
		}
	}

	e.states("ep1", 0, down, down)
	e.pump(a.Handle)
	inc := e.incidents("ep1")[0].ID
	sweep("opened by the alerter", model.SubscriberNoticeKey("s1", inc, "opened"))

	e.appendUpdate("ep1", "rolled back")
	sweep("update saved as the API does", model.SubscriberNoticeKey("s1", inc, "update-1"))

	// s2, of a page no one else has confirmed, confirms at the instant
	// of update 2, and its record lands after the sweep that told s1:
	// only its own write can wake the sweep.
	e.appendUpdate("ep1", "watching")
	sweep("second update", model.SubscriberNoticeKey("s1", inc, "update-2"))
	e.subscriber("s2", "p2", model.SubscriberConfirmed, e.incidents("ep1")[0].Updates[1].At)
	sweep("a subscriber confirmed", model.SubscriberNoticeKey("s2", inc, "update-2"))

	e.states("ep1", 2, up, up)
	e.pump(a.Handle)
	sweep("resolved by the alerter", model.SubscriberNoticeKey("s1", inc, "resolved"), model.SubscriberNoticeKey("s2", inc, "resolved"))
}

// TestFailedSubscriberNoticeIsRetriedOnTheNextSweep: a notice that fails
// leaves the walk pending, also through a sweep inside its backoff, so
// the first sweep after the backoff walks again and sends it though
// nothing in the store moved; once sent, sweeps are quiet.
func TestFailedSubscriberNoticeIsRetriedOnTheNextSweep(t *testing.T) {
	e := newEnv(t)
	e.publicEndpoint("ep1", "acme")
	e.page("p1", "acme")
	e.subscriber("s1", "p1", model.SubscriberConfirmed, t0.Add(-time.Minute))
	sink := &noticeSink{fail: errors.New("421 try again later")}
	counted := &subReads{Store: e.st}
	a := e.alerter("a", func(o *Options) {
		o.Store, o.Subscribers = counted, sink
		o.GiveUpAfter = notify.DefaultGiveUpAfter // the real backoff
	})
	e.states("ep1", 0, down, down)
	e.pump(a.Handle)
	if err := a.NotifySubscribers(e.ctx); err == nil {
		t.Fatal("a failing notice: the sweep reported no error")
	}
	if len(sink.keys()) != 0 {
		t.Fatal("a failing sink recorded a notice")
	}
	sink.mu.Lock()
	sink.fail = nil
	sink.mu.Unlock()
	// A sweep inside the backoff holds the notice back without an error,
	// and must still leave the walk pending.
	e.clk.Advance(time.Second)
	e.sweepSubscribers(a, 1)
	if len(sink.keys()) != 0 {
		t.Fatal("a notice went out again inside its backoff")
	}
	e.clk.Advance(2 * time.Minute) // past the first backoff, inside the safety interval
	walks := counted.walks.Load()
	e.sweepSubscribers(a, 1)
	inc := e.incidents("ep1")[0].ID
	if got, want := sink.keys(), []string{model.SubscriberNoticeKey("s1", inc, "opened")}; !slices.Equal(got, want) {
		t.Fatalf("after the backoff: notices %v, want %v", got, want)
	}
	if counted.walks.Load() != walks+1 {
		t.Fatalf("the retry took %d walks, want 1", counted.walks.Load()-walks)
	}
	e.clk.Advance(DefaultSubscriberInterval)
	e.sweepSubscribers(a, 2)
	if counted.walks.Load() != walks+1 {
		t.Fatal("sweeps after the retry succeeded still walk")
	}
}

// TestSweepDue: the decision alone.
func TestSweepDue(t *testing.T) {
	mark := subscriberMark{incidents: 3, subscribers: 2, pages: 1, endpoints: 7, maintenance: 5}
	last := subscriberSweep{walked: true, mark: mark, at: t0}
	for _, tt := range []struct {
		name string
		last subscriberSweep
		mark subscriberMark
		now  time.Time
		want bool
	}{
		{"nothing new", last, mark, t0.Add(time.Minute), false},
		{"first sweep of the process", subscriberSweep{}, mark, t0, true},
		{"an incident written", last, subscriberMark{4, 2, 1, 7, 5}, t0, true},
		{"a subscriber written", last, subscriberMark{3, 3, 1, 7, 5}, t0, true},
		{"a page written", last, subscriberMark{3, 2, 2, 7, 5}, t0, true},
		{"an endpoint written", last, subscriberMark{3, 2, 1, 8, 5}, t0, true},
		{"a maintenance window written", last, subscriberMark{3, 2, 1, 7, 6}, t0, true},
		{"a held notice's window not over", subscriberSweep{walked: true, mark: mark, at: t0.Add(time.Hour - time.Minute), wake: t0.Add(time.Hour)}, mark, t0.Add(time.Hour - time.Second), false},
		{"a held notice's window over", subscriberSweep{walked: true, mark: mark, at: t0.Add(time.Hour - time.Minute), wake: t0.Add(time.Hour)}, mark, t0.Add(time.Hour), true},
		{"work left over", subscriberSweep{walked: true, mark: mark, at: t0, pending: true}, mark, t0, true},
		{"the safety interval", last, mark, t0.Add(SubscriberSafetyInterval), true},
		{"just inside it", last, mark, t0.Add(SubscriberSafetyInterval - time.Second), false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := SweepDue(tt.last, tt.mark, tt.now); got != tt.want {
				t.Fatalf("SweepDue = %v, want %v", got, tt.want)
			}
		})
	}
}
