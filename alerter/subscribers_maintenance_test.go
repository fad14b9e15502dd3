package alerter

import (
	"slices"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/store"
)

// TestSubscriberNoticeHeldByMaintenanceIsSentAtItsEnd: an incident that
// opens in a maintenance window is not told to subscribers while the
// window lasts, costs no walk per sweep while held, and is told once on
// the first sweep at the window's end, though no stamp moved and the
// safety walk is not due; its resolution then goes out as usual.
func TestSubscriberNoticeHeldByMaintenanceIsSentAtItsEnd(t *testing.T) {
	e := newEnv(t)
	e.publicEndpoint("ep1", "acme")
	e.page("p1", "acme")
	e.subscriber("s1", "p1", model.SubscriberConfirmed, t0.Add(-time.Minute))
	end := t0.Add(4 * time.Minute) // inside SubscriberSafetyInterval of the walks below
	e.maintenance(model.Maintenance{ID: "m1", Tenant: "acme", EndpointIDs: []string{"ep1"}, Start: t0, End: end})
	sink := &noticeSink{}
	counted := &subReads{Store: e.st}
	a := e.alerter("a", func(o *Options) { o.Store, o.Subscribers = counted, sink })

	e.states("ep1", 0, down, down)
	e.pump(a.Handle)
	inc := e.incidents("ep1")[0].ID
	e.sweepSubscribers(a, 2)
	e.clk.Set(end.Add(-time.Second))
	walks := counted.walks.Load()
	e.sweepSubscribers(a, 3)
	if got := sink.keys(); len(got) != 0 {
		t.Fatalf("notices %v during maintenance, want none", got)
	}
	if counted.walks.Load() != walks {
		t.Fatalf("%d walks while a notice was held and nothing moved, want none", counted.walks.Load()-walks)
	}

	e.clk.Set(end)
	e.sweepSubscribers(a, 1)
	if counted.walks.Load() != walks+1 {
		t.Fatal("the sweep at the window's end did not walk")
	}
	opened := model.SubscriberNoticeKey("s1", inc, "opened")
	if got := sink.keys(); !slices.Equal(got, []string{opened}) {
		t.Fatalf("at the window's end: notices %v, want [%s]", got, opened)
	}
	e.clk.Advance(DefaultSubscriberInterval)
	e.sweepSubscribers(a, 2)
	if got := sink.keys(); len(got) != 1 {
		t.Fatalf("notices %v after the window, want the opening once", got)
	}

	e.states("ep1", 2, up, up)
	e.pump(a.Handle)
	e.sweepSubscribers(a, 1)
	if got, want := sink.keys(), []string{opened, model.SubscriberNoticeKey("s1", inc, "resolved")}; !slices.Equal(got, want) {
		t.Fatalf("after the resolution: notices %v, want %v", got, want)
	}
}

// TestSubscribersHearOnlyUpdatesOfAnIncidentWithinMaintenance: an incident
// that opens and resolves inside one maintenance window tells its page's
// subscribers nothing but the owner's update, during the window and
// after it, as it tells the owner's sinks nothing.
func TestSubscribersHearOnlyUpdatesOfAnIncidentWithinMaintenance(t *testing.T) {
	e := newEnv(t)
	e.publicEndpoint("ep1", "acme")
	e.page("p1", "acme")
	e.subscriber("s1", "p1", model.SubscriberConfirmed, t0.Add(-time.Minute))
	end := t0.Add(10 * time.Minute)
	e.maintenance(model.Maintenance{ID: "m1", Tenant: "acme", EndpointIDs: []string{"ep1"}, Start: t0, End: end})
	sink := &noticeSink{}
	a := e.alerter("a", func(o *Options) { o.Subscribers = sink })

	e.states("ep1", 0, down, down)
	e.pump(a.Handle)
	inc := e.incidents("ep1")[0].ID
	e.clk.Advance(time.Minute)
	e.appendUpdate("ep1", "planned: database migration")
	e.sweepSubscribers(a, 1)
	e.clk.Advance(time.Minute)
	e.states("ep1", 2, up, up)
	e.pump(a.Handle)
	if got := e.incidents("ep1")[0]; got.State != model.IncidentResolved {
		t.Fatalf("incident %s, want it resolved inside the window", got.State)
	}
	e.sweepSubscribers(a, 2)
	e.clk.Set(end)
	e.sweepSubscribers(a, 2)
	e.clk.Advance(SubscriberSafetyInterval)
	e.sweepSubscribers(a, 1)
	if err := a.Sweep(e.ctx); err != nil {
		t.Fatal(err)
	}
	if got, want := sink.keys(), []string{model.SubscriberNoticeKey("s1", inc, "update-1")}; !slices.Equal(got, want) {
		t.Fatalf("subscriber notices %v, want only the owner's update %v", got, want)
	}
	if got := e.rcv.kinds(); len(got) != 0 {
		t.Fatalf("owner's alerts %v, want none", got)
	}
}

// TestSubscriberNoticeHeldByADeletedWindowGoesOutOnTheNextSweep: the
// maintenance stamp is part of the sweep's mark, so a window deleted
// before its end lets a held notice out on the next sweep, not at the
// safety walk.
func TestSubscriberNoticeHeldByADeletedWindowGoesOutOnTheNextSweep(t *testing.T) {
	e := newEnv(t)
	e.publicEndpoint("ep1", "acme")
	e.page("p1", "acme")
	e.subscriber("s1", "p1", model.SubscriberConfirmed, t0.Add(-time.Minute))
	e.maintenance(model.Maintenance{ID: "m1", Tenant: "acme", EndpointIDs: []string{"ep1"}, Start: t0, End: t0.Add(time.Hour)})
	sink := &noticeSink{}
	a := e.alerter("a", func(o *Options) { o.Subscribers = sink })
	e.states("ep1", 0, down, down)
	e.pump(a.Handle)
	e.sweepSubscribers(a, 2)
	if got := sink.keys(); len(got) != 0 {
		t.Fatalf("notices %v during maintenance, want none", got)
	}
	if err := e.st.DeleteObject(e.ctx, store.KindMaintenance, "m1"); err != nil {
		t.Fatal(err)
	}
	e.clk.Advance(DefaultSubscriberInterval)
	e.sweepSubscribers(a, 1)
	if got, want := sink.keys(), []string{model.SubscriberNoticeKey("s1", e.incidents("ep1")[0].ID, "opened")}; !slices.Equal(got, want) {
		t.Fatalf("after the window was deleted: notices %v, want %v", got, want)
	}
}

// TestOwnerAndSubscribersAgreeOnAnIncidentThatBeganBeforeAWindow: an
// incident that opened just before a window, whose open was still pending
// when the window began (its sink failing) and which resolved inside the
// window, is told to the owner and to the page's subscribers alike:
// opened and resolved at the window's end. What decides is when the
// incident opened (model.QuietInMaintenance), not whether a drain got its
// open out before the window began.
func TestOwnerAndSubscribersAgreeOnAnIncidentThatBeganBeforeAWindow(t *testing.T) {
	e := newEnv(t)
	e.publicEndpoint("ep1", "acme")
	e.page("p1", "acme")
	e.subscriber("s1", "p1", model.SubscriberConfirmed, t0.Add(-time.Minute))
	start, end := t0.Add(5*time.Minute), t0.Add(15*time.Minute)
	e.maintenance(model.Maintenance{ID: "m1", Tenant: "acme", EndpointIDs: []string{"ep1"}, Start: start, End: end})
	sink := &noticeSink{}
	a := e.alerter("a", func(o *Options) { o.Subscribers, o.RetryAttempts = sink, 3 })

	e.clk.Set(start.Add(-5 * time.Second))
	e.rcv.failNext(500, 500, 500)
	e.states("ep1", 0, down, down)
	e.pump(a.Handle)
	inc := e.incidents("ep1")[0]
	if !inc.OpenedAt.Before(start) {
		t.Fatalf("incident opened at %s, want before the window's start %s", inc.OpenedAt, start)
	}
	e.clk.Set(start.Add(time.Minute))
	e.states("ep1", 2, up, up)
	e.pump(a.Handle)
	if got := e.incidents("ep1")[0]; got.State != model.IncidentResolved {
		t.Fatalf("incident %s, want it resolved inside the window", got.State)
	}
	if err := a.Sweep(e.ctx); err != nil {
		t.Fatal(err)
	}
	e.sweepSubscribers(a, 2)
	if got, subs := e.rcv.kinds(), sink.keys(); len(got) != 0 || len(subs) != 0 {
		t.Fatalf("during the window: owner's alerts %v, subscriber notices %v, want none", got, subs)
	}

	e.clk.Set(end)
	if err := a.Sweep(e.ctx); err != nil {
		t.Fatal(err)
	}
	e.sweepSubscribers(a, 2)
	if got := e.rcv.kinds(); !slices.Equal(got, []string{"open", "resolve"}) {
		t.Fatalf("owner's alerts %v at the window's end, want [open resolve]", got)
	}
	want := []string{model.SubscriberNoticeKey("s1", inc.ID, "opened"), model.SubscriberNoticeKey("s1", inc.ID, "resolved")}
	if got := sink.keys(); !slices.Equal(got, want) {
		t.Fatalf("subscriber notices %v at the window's end, want %v", got, want)
	}
}
