package store_test

import (
	"strings"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/store"
)

// TestEventBudgetFoldsAFlappingEndpoint: within the budget an event is
// stored; past it, or while a flapping period is open, the first change of
// a kind becomes that kind's marker and later ones count on it; a period
// ends after an hour without changes.
func TestEventBudgetFoldsAFlappingEndpoint(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	cutoff := t0.Add(-store.DefaultVerdictHistory)
	ev := func(kind, after string, at time.Time) model.ChangeEvent {
		return model.ChangeEvent{EndpointID: "ep", Kind: kind, Fingerprint: model.EventFingerprint("ep", kind, "x", after),
			ObservedAt: at, RecordedAt: at, Message: kind + " changed", Before: "x", After: after}
	}
	open := &store.EventFlap{Since: t0.Add(-10 * time.Minute), Last: t0.Add(-time.Minute), Markers: map[string]string{model.EventCatalogSecurity: "m1"}}
	marker := model.ChangeEvent{ID: "m1", EndpointID: "ep", Kind: model.EventCatalogSecurity, Source: model.EventSourceFlapping, After: "a",
		Suppressed: &model.EventSuppression{Count: 7, Since: open.Since, Last: open.Last}}
	quiet := &store.EventFlap{Since: t0.Add(-3 * time.Hour), Last: t0.Add(-store.EventFlapQuiet), Markers: map[string]string{model.EventCatalogSecurity: "m1"}}
	cases := []struct {
		name      string
		e         model.ChangeEvent
		held      store.EventHeld
		action    store.EventAction
		marker    bool // the stored or counted event is a marker
		count     int  // its count
		flap      bool // a flapping period is kept
		flapSince time.Time
	}{
		{name: "known change", e: ev(model.EventVersion, "b", t0), held: store.EventHeld{Known: true}, action: store.EventSkip},
		{name: "past the retention", e: ev(model.EventVersion, "b", cutoff.Add(-time.Second)), action: store.EventSkip},
		{name: "within the budget", e: ev(model.EventVersion, "b", t0), held: store.EventHeld{LastHour: store.EventsPerHour - 1, LastDay: store.EventsPerDay - 1}, action: store.EventStore},
		{name: "past the hourly budget", e: ev(model.EventVersion, "b", t0), held: store.EventHeld{LastHour: store.EventsPerHour, LastDay: store.EventsPerHour},
			action: store.EventStore, marker: true, count: 1, flap: true, flapSince: t0},
		{name: "past the daily budget", e: ev(model.EventVersion, "b", t0), held: store.EventHeld{LastDay: store.EventsPerDay},
			action: store.EventStore, marker: true, count: 1, flap: true, flapSince: t0},
		{name: "open period, the kind's marker held", e: ev(model.EventCatalogSecurity, "b", t0), held: store.EventHeld{Flap: open, Marker: &marker},
			action: store.EventCount, marker: true, count: 8, flap: true, flapSince: open.Since},
		{name: "open period, a new kind: its own marker, even within the budget", e: ev(model.EventVersion, "b", t0), held: store.EventHeld{Flap: open},
			action: store.EventStore, marker: true, count: 1, flap: true, flapSince: open.Since},
		{name: "open period, the kind's marker aged out", e: ev(model.EventCatalogSecurity, "b", t0), held: store.EventHeld{Flap: open},
			action: store.EventStore, marker: true, count: 1, flap: true, flapSince: open.Since},
		{name: "an hour quiet ends the period", e: ev(model.EventCatalogSecurity, "b", t0), held: store.EventHeld{Flap: quiet, Marker: &marker},
			action: store.EventStore},
		{name: "an hour quiet, still past the daily budget: a new period", e: ev(model.EventCatalogSecurity, "b", t0), held: store.EventHeld{Flap: quiet, Marker: &marker, LastDay: store.EventsPerDay},
			action: store.EventStore, marker: true, count: 1, flap: true, flapSince: t0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.held.NextID = "next"
			d := store.DecideEventAppend(c.e, c.held, cutoff)
			if d.Action != c.action {
				t.Fatalf("action %v, want %v", d.Action, c.action)
			}
			if c.action == store.EventSkip {
				return
			}
			if isMarker := d.Event.Source == model.EventSourceFlapping; isMarker != c.marker {
				t.Fatalf("event %+v: marker %v, want %v", d.Event, isMarker, c.marker)
			}
			if (d.Flap != nil) != c.flap {
				t.Fatalf("flap %+v, want kept %v", d.Flap, c.flap)
			}
			if c.action == store.EventStore && d.Event.ID != "next" {
				t.Fatalf("stored under %q, want the next ID", d.Event.ID)
			}
			if !c.marker {
				if d.Event.Fingerprint != c.e.Fingerprint || d.Event.Suppressed != nil {
					t.Fatalf("stored %+v, want the event itself", d.Event)
				}
				return
			}
			if d.Event.Suppressed.Count != c.count || d.Event.Kind != c.e.Kind || d.Event.After != "b" || !d.Event.Suppressed.Last.Equal(t0) {
				t.Fatalf("marker %+v (%+v), want count %d of kind %s, after b, last %s", d.Event, d.Event.Suppressed, c.count, c.e.Kind, t0)
			}
			if !d.Flap.Since.Equal(c.flapSince) || !d.Flap.Last.Equal(t0) || d.Flap.Markers[c.e.Kind] != d.Event.ID {
				t.Fatalf("flap %+v, want since %s, last %s, naming marker %s", d.Flap, c.flapSince, t0, d.Event.ID)
			}
			if c.action == store.EventStore && (d.Event.Fingerprint == c.e.Fingerprint || !strings.Contains(d.Event.Message, "flapping")) {
				t.Fatalf("new marker %+v: want its own fingerprint and a message that says flapping", d.Event)
			}
		})
	}
	// The decision does not write through to what the store holds.
	if open.Markers[model.EventVersion] != "" || marker.Suppressed.Count != 7 {
		t.Fatalf("held state changed: %+v, %+v", open, marker.Suppressed)
	}
}
