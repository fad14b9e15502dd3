package storetest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/clock"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/store"
)

func changeEvent(ep, kind, before, after string, at time.Time) model.ChangeEvent {
	return model.ChangeEvent{
		EndpointID: ep, Kind: kind, Fingerprint: model.EventFingerprint(ep, kind, before, after),
		ObservedAt: at, Message: kind + " " + before + "→" + after, Before: before, After: after,
		Diff: []byte(`{"removed":["search"]}`),
	}
}

func eventAfters(es []model.ChangeEvent) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.After
	}
	return out
}

// testEventsIdempotentByFingerprint: the same change appended again — by a
// redelivered result, a second replica at once, or a later probe — is one
// event, listed once as pending; settling unlists it; the read-back is
// what was written.
func testEventsIdempotentByFingerprint(t *testing.T, s store.Store, clk *clock.Fake) {
	ctx := t.Context()
	got, err := s.ListEvents(ctx, "ep", store.EventFilter{})
	emptyList(t, "ListEvents", got, err)
	pend, err := s.PendingEvents(ctx, 0)
	emptyList(t, "PendingEvents", pend, err)

	t0 := clk.Now()
	e := changeEvent("ep", model.EventCatalogBreaking, "A", "B", t0)
	added, err := s.AppendEvents(ctx, e)
	must(t, err)
	if len(added) != 1 || added[0].ID == "" || added[0].RecordedAt.IsZero() {
		t.Fatalf("first append = %+v, want one event with an ID and a record time", added)
	}
	// Replay: the same change seen by a redelivered result and a later probe.
	for i := range 3 {
		again := e
		again.ObservedAt = t0.Add(time.Duration(i) * time.Minute)
		again.ProbeRunID = "run-again"
		added, err := s.AppendEvents(ctx, again)
		must(t, err)
		if len(added) != 0 {
			t.Fatalf("replay %d appended %+v, want nothing", i, added)
		}
	}
	// Two replicas at once.
	var wg sync.WaitGroup
	var mu sync.Mutex
	n := 0
	d := changeEvent("ep", model.EventCatalogSecurity, "B", "C", t0.Add(time.Minute))
	for range 8 {
		wg.Go(func() {
			added, err := s.AppendEvents(ctx, d)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			n += len(added)
			mu.Unlock()
		})
	}
	wg.Wait()
	if n != 1 {
		t.Fatalf("8 concurrent appends of one change stored %d events, want 1", n)
	}
	all, err := s.ListEvents(ctx, "ep", store.EventFilter{})
	must(t, err)
	sameStrings(t, "events newest first", eventAfters(all), []string{"C", "B"})
	if all[1].ID != added0(t, s, ctx) || string(all[1].Diff) != `{"removed":["search"]}` || all[1].Before != "A" || !all[1].ObservedAt.Equal(t0) {
		t.Fatalf("read back %+v", all[1])
	}
	if all[0].ID <= all[1].ID {
		t.Fatalf("IDs %s, %s do not sort like the history", all[1].ID, all[0].ID)
	}
	pend, err = s.PendingEvents(ctx, 0)
	must(t, err)
	sameStrings(t, "pending oldest first", eventAfters(pend), []string{"B", "C"})
	must(t, s.SettleEvent(ctx, store.EventRef{EndpointID: "ep", ID: pend[0].ID}))
	must(t, s.SettleEvent(ctx, store.EventRef{EndpointID: "ep", ID: pend[0].ID})) // a no-op
	pend, err = s.PendingEvents(ctx, 0)
	must(t, err)
	sameStrings(t, "pending after settling one", eventAfters(pend), []string{"C"})
	// Another endpoint's same before/after is another change.
	other, err := s.AppendEvents(ctx, changeEvent("ep2", model.EventCatalogBreaking, "A", "B", t0))
	must(t, err)
	if len(other) != 1 {
		t.Fatalf("another endpoint's change appended %d, want 1", len(other))
	}
	if _, err := s.AppendEvents(ctx, model.ChangeEvent{EndpointID: "ep", Kind: "nope", Fingerprint: "x", ObservedAt: t0}); err == nil {
		t.Fatal("an unknown kind was accepted")
	}
}

func added0(t *testing.T, s store.Store, ctx context.Context) string {
	t.Helper()
	es, err := s.ListEvents(ctx, "ep", store.EventFilter{Kind: model.EventCatalogBreaking})
	must(t, err)
	if len(es) != 1 {
		t.Fatalf("kind filter kept %d events, want 1", len(es))
	}
	return es[0].ID
}

// testEventPages: newest first, a page ends where the next begins with no
// repeat or gap, the kind filter applies within the walk.
func testEventPages(t *testing.T, s store.Store, clk *clock.Fake) {
	ctx := t.Context()
	t0 := clk.Now().Add(-time.Hour)
	var want []string
	for i := range 7 {
		kind := model.EventVersion
		if i%2 == 0 {
			kind = model.EventCertificateExpiry
		}
		after := string(rune('a' + i))
		_, err := s.AppendEvents(ctx, changeEvent("ep", kind, "x", after, t0.Add(time.Duration(i)*time.Minute)))
		must(t, err)
		want = append([]string{after}, want...)
	}
	var got []string
	before := ""
	for range 10 {
		page, err := s.ListEvents(ctx, "ep", store.EventFilter{Before: before, Limit: 3})
		must(t, err)
		got = append(got, eventAfters(page)...)
		if len(page) < 3 {
			break
		}
		before = page[len(page)-1].ID
	}
	sameStrings(t, "walk", got, want)
	certs, err := s.ListEvents(ctx, "ep", store.EventFilter{Kind: model.EventCertificateExpiry, Limit: 2})
	must(t, err)
	sameStrings(t, "kind filter", eventAfters(certs), []string{"g", "e"})
}

// testEventRetention: events age out with the verdict history, and with
// them their fingerprints (the same change later is a new event) and their
// pending entries.
func testEventRetention(t *testing.T, s store.Store, clk *clock.Fake) {
	ctx := t.Context()
	e := changeEvent("ep", model.EventVersion, "2025-06-18", "2025-11-25", clk.Now())
	_, err := s.AppendEvents(ctx, e)
	must(t, err)
	clk.Advance(store.DefaultVerdictHistory + time.Hour)
	got, err := s.ListEvents(ctx, "ep", store.EventFilter{})
	emptyList(t, "ListEvents past the retention", got, err)
	pend, err := s.PendingEvents(ctx, 0)
	emptyList(t, "PendingEvents past the retention", pend, err)
	old := e
	if added, err := s.AppendEvents(ctx, old); err != nil || len(added) != 0 {
		t.Fatalf("an event observed before the retention: added %v, err %v; want neither", added, err)
	}
	e.ObservedAt = clk.Now()
	added, err := s.AppendEvents(ctx, e)
	must(t, err)
	if len(added) != 1 {
		t.Fatalf("the same change after the retention appended %d, want 1", len(added))
	}
}

// testPendingEventsOldestFirst: the pending index answers oldest first
// across endpoints, whatever their IDs, and the limit keeps the oldest.
func testPendingEventsOldestFirst(t *testing.T, s store.Store, clk *clock.Fake) {
	ctx := t.Context()
	t0 := clk.Now().Add(-time.Hour)
	for i, ep := range []string{"zz", "aa", "mm"} {
		_, err := s.AppendEvents(ctx, changeEvent(ep, model.EventVersion, "x", ep, t0.Add(time.Duration(i)*time.Minute)))
		must(t, err)
	}
	all, err := s.PendingEvents(ctx, 0)
	must(t, err)
	sameStrings(t, "pending", eventAfters(all), []string{"zz", "aa", "mm"})
	two, err := s.PendingEvents(ctx, 2)
	must(t, err)
	sameStrings(t, "pending, limit 2", eventAfters(two), []string{"zz", "aa"})
}
