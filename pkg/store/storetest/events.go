package storetest

import (
	"context"
	"fmt"
	"strings"
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

// flappingProbes appends what a server that changes a tool description and
// its version at every probe makes of n probes a second apart from start:
// two new changes a probe, each appended with its probe's other change.
func flappingProbes(t *testing.T, s store.Store, ep string, start time.Time, n int) {
	t.Helper()
	for i := range n {
		at := start.Add(time.Duration(i) * time.Second)
		v := fmt.Sprintf("%s-%d", at.Format(time.RFC3339), i)
		_, err := s.AppendEvents(t.Context(),
			changeEvent(ep, model.EventCatalogSecurity, "d-"+v, "d-"+v+"'", at),
			changeEvent(ep, model.EventVersion, "v-"+v, "v-"+v+"'", at))
		must(t, err)
	}
}

// markers splits an endpoint's events into the ones stored one by one and
// the flapping markers, by kind.
func markers(t *testing.T, s store.Store, ep string) (plain int, byKind map[string]model.ChangeEvent) {
	t.Helper()
	all, err := s.ListEvents(t.Context(), ep, store.EventFilter{})
	must(t, err)
	byKind = map[string]model.ChangeEvent{}
	for _, e := range all {
		if e.Suppressed == nil {
			plain++
			continue
		}
		if e.Source != model.EventSourceFlapping {
			t.Fatalf("event %+v counts suppressed changes but is no flapping marker", e)
		}
		if prev, ok := byKind[e.Kind]; ok {
			t.Fatalf("two markers of %s: %+v and %+v", e.Kind, prev, e)
		}
		byKind[e.Kind] = e
	}
	return plain, byKind
}

// testEventBudgetFolds: an endpoint that changes at every probe adds
// EventsPerHour events to its history, then one flapping marker per kind
// that counts every further change (and is pending once, like any event);
// a replay of a stored change is still nothing; another endpoint is not
// held back; an hour without changes ends the period, and the next change
// is stored as itself.
func testEventBudgetFolds(t *testing.T, s store.Store, clk *clock.Fake) {
	ctx := t.Context()
	t0 := clk.Now().Add(-2 * time.Hour)
	const probes = 300
	flappingProbes(t, s, "ep", t0, probes)
	plain, ms := markers(t, s, "ep")
	if plain != store.EventsPerHour || len(ms) != 2 {
		t.Fatalf("%d events and markers %v stored, want %d and one marker each of catalog_security and version", plain, ms, store.EventsPerHour)
	}
	counted := 0
	for kind, m := range ms {
		counted += m.Suppressed.Count
		if m.Suppressed.Last.Sub(m.Suppressed.Since) < (probes-store.EventsPerHour)*time.Second {
			t.Fatalf("%s marker spans %s to %s, want the whole flapping", kind, m.Suppressed.Since, m.Suppressed.Last)
		}
		if !strings.Contains(m.Message, "flapping") || m.Fingerprint == "" {
			t.Fatalf("marker %+v", m)
		}
	}
	if want := 2*probes - store.EventsPerHour; counted != want {
		t.Fatalf("markers counted %d changes, want %d (every change past the budget)", counted, want)
	}
	pend, err := s.PendingEvents(ctx, 0)
	must(t, err)
	if len(pend) != store.EventsPerHour+2 {
		t.Fatalf("%d pending, want %d: the events stored and one per marker", len(pend), store.EventsPerHour+2)
	}
	// A change already stored, seen again, is not counted.
	first := changeEvent("ep", model.EventVersion, "v-"+fmt.Sprintf("%s-%d", t0.Format(time.RFC3339), 0), "v-"+fmt.Sprintf("%s-%d", t0.Format(time.RFC3339), 0)+"'", t0)
	if added, err := s.AppendEvents(ctx, first); err != nil || len(added) != 0 {
		t.Fatalf("a stored change again: added %v, err %v", added, err)
	}
	if _, again := markers(t, s, "ep"); again[model.EventVersion].Suppressed.Count != ms[model.EventVersion].Suppressed.Count {
		t.Fatalf("a replay counted on the marker: %d, was %d", again[model.EventVersion].Suppressed.Count, ms[model.EventVersion].Suppressed.Count)
	}
	// Another endpoint has its own budget.
	added, err := s.AppendEvents(ctx, changeEvent("calm", model.EventVersion, "1", "2", t0.Add(time.Minute)))
	must(t, err)
	if len(added) != 1 || added[0].Suppressed != nil {
		t.Fatalf("another endpoint's change: %+v, want it stored as itself", added)
	}
	// An hour and more without changes: the period is over.
	late := t0.Add(probes*time.Second + time.Hour + time.Minute)
	added, err = s.AppendEvents(ctx, changeEvent("ep", model.EventCatalogSecurity, "x", "y", late))
	must(t, err)
	if len(added) != 1 || added[0].Suppressed != nil || added[0].Fingerprint != model.EventFingerprint("ep", model.EventCatalogSecurity, "x", "y") {
		t.Fatalf("the first change after an hour's quiet: %+v, want it stored as itself", added)
	}
}

// testEventBudgetPerDay: a server that paces its changes under the hourly
// budget is folded once it has made EventsPerDay in a day.
func testEventBudgetPerDay(t *testing.T, s store.Store, clk *clock.Fake) {
	ctx := t.Context()
	t0 := clk.Now().Add(-20 * time.Hour)
	every := 5 * time.Minute // 12 an hour
	var evs []model.ChangeEvent
	for i := range store.EventsPerDay + 30 {
		evs = append(evs, changeEvent("ep", model.EventCatalogInfo, fmt.Sprint(i), fmt.Sprint(i+1), t0.Add(time.Duration(i)*every)))
	}
	added, err := s.AppendEvents(ctx, evs...)
	must(t, err)
	plain, ms := markers(t, s, "ep")
	if plain != store.EventsPerDay || len(ms) != 1 || ms[model.EventCatalogInfo].Suppressed.Count != 30 {
		t.Fatalf("%d events and markers %+v, want %d and one catalog_info marker counting 30", plain, ms, store.EventsPerDay)
	}
	if len(added) != store.EventsPerDay+1 {
		t.Fatalf("AppendEvents returned %d, want the %d events it stored and the marker", len(added), store.EventsPerDay)
	}
}

// testEventBudgetConcurrent: replicas appending a flapping endpoint's
// changes at once make one marker per kind and count every change once.
func testEventBudgetConcurrent(t *testing.T, s store.Store, clk *clock.Fake) {
	ctx := t.Context()
	t0 := clk.Now().Add(-time.Hour)
	var evs []model.ChangeEvent
	for i := range store.EventsPerHour {
		evs = append(evs, changeEvent("ep", model.EventVersion, fmt.Sprint(i), fmt.Sprint(i+1), t0))
	}
	_, err := s.AppendEvents(ctx, evs...)
	must(t, err)
	const replicas, each = 8, 10
	var wg sync.WaitGroup
	for r := range replicas {
		wg.Go(func() {
			for i := range each {
				kind := model.EventCatalogSecurity
				if i%2 == 0 {
					kind = model.EventCatalogBreaking
				}
				if _, err := s.AppendEvents(ctx, changeEvent("ep", kind, fmt.Sprint(r), fmt.Sprint(i), t0.Add(time.Duration(i)*time.Second))); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	plain, ms := markers(t, s, "ep")
	if plain != store.EventsPerHour || len(ms) != 2 {
		t.Fatalf("%d events, markers %v; want %d and one each of catalog_security and catalog_breaking", plain, ms, store.EventsPerHour)
	}
	if n := ms[model.EventCatalogSecurity].Suppressed.Count + ms[model.EventCatalogBreaking].Suppressed.Count; n != replicas*each {
		t.Fatalf("markers counted %d changes, want %d", n, replicas*each)
	}
}
