package aggregator

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/msg"
	"github.com/mcpmon/mcpmon/pkg/queue"
	"github.com/mcpmon/mcpmon/pkg/store"
)

func drift(severity string, added, removed []string, changed ...map[string]any) msg.Event {
	return msg.Event{Kind: msg.EventCatalogChanged, Severity: severity, Message: "tool catalog changed", Details: map[string]any{
		"severity": severity, "added": added, "removed": removed, "changed": changed,
		"oldFingerprint": "sha256:old", "newFingerprint": "sha256:new",
	}}
}

func kinds(evs []model.ChangeEvent) []string {
	out := []string{}
	for _, e := range evs {
		out = append(out, e.Kind)
	}
	return out
}

func TestChangeEventsKinds(t *testing.T) {
	slot := w0.Add(10 * time.Second)
	soon, later := slot.Add(3*24*time.Hour), slot.Add(60*24*time.Hour)
	cases := []struct {
		name   string
		events []msg.Event
		cert   *time.Time
		want   []string
	}{
		{"nothing changed", nil, &later, []string{}},
		{"tool removed is breaking", []msg.Event{drift("breaking", nil, []string{"search"})}, nil, []string{model.EventCatalogBreaking}},
		{"required input added is breaking", []msg.Event{drift("breaking", nil, nil, map[string]any{"name": "s", "breaking": []string{`required input "q" added`}})}, nil, []string{model.EventCatalogBreaking}},
		{"tool added is info", []msg.Event{drift("info", []string{"fetch"}, nil)}, nil, []string{model.EventCatalogInfo}},
		{"description alone is security only", []msg.Event{drift("info", nil, nil, map[string]any{"name": "s", "descriptionChanged": true})}, nil, []string{model.EventCatalogSecurity}},
		{"removal with a description change is both", []msg.Event{drift("breaking", nil, []string{"a"}, map[string]any{"name": "s", "descriptionChanged": true})}, nil,
			[]string{model.EventCatalogBreaking, model.EventCatalogSecurity}},
		{"protocol change is version", []msg.Event{{Kind: msg.EventVersionChanged, Message: "m", Details: map[string]string{"from": "2025-06-18", "to": "2025-11-25"}}}, nil, []string{model.EventVersion}},
		{"server change is version", []msg.Event{{Kind: msg.EventServerChanged, Message: "m", Details: map[string]string{"fromName": "s", "fromVersion": "1", "toName": "s", "toVersion": "2"}}}, nil, []string{model.EventVersion}},
		{"certificate near expiry", []msg.Event{{Kind: msg.EventCertExpiring, Message: "in 3d"}}, &soon, []string{model.EventCertificateExpiry}},
		{"credential expiry passes through", []msg.Event{{Kind: model.EventCredentialExpiry, Message: "expires in 70h", Details: map[string]any{"header": "Authorization", "exp": "2026-03-04T00:00:00Z"}}}, nil, []string{model.EventCredentialExpiry}},
		{"unknown probe event ignored", []msg.Event{{Kind: "something_else", Message: "x"}}, nil, []string{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := msg.ProbeResult{EndpointID: "ep", ProbeRunID: "run", Slot: slot, Region: "eu", Events: c.events, CertExpiry: c.cert}
			// Through JSON, as the aggregator receives it.
			var got msg.ProbeResult
			if err := json.Unmarshal(r.Body(), &got); err != nil {
				t.Fatal(err)
			}
			evs := ChangeEvents(got, 0)
			if !slices.Equal(kinds(evs), c.want) {
				t.Fatalf("kinds = %v, want %v", kinds(evs), c.want)
			}
			for _, e := range evs {
				if err := model.ValidEvent(e); err != nil {
					t.Fatalf("%s: %v", e.Kind, err)
				}
				if !e.ObservedAt.Equal(slot) || e.Region != "eu" || e.ProbeRunID != "run" {
					t.Fatalf("%s: provenance %+v", e.Kind, e)
				}
				if e.Kind != model.EventCertificateExpiry && e.Kind != model.EventCredentialExpiry && e.Kind != model.EventVersion && len(e.Diff) == 0 {
					t.Fatalf("%s: no diff kept", e.Kind)
				}
			}
		})
	}
}

// TestChangeEventFingerprintIgnoresWhenAndWhere: the same change seen by
// another probe, slot or region has the same fingerprint; another change
// (or the same certificate's successor) has another.
func TestChangeEventFingerprintIgnoresWhenAndWhere(t *testing.T) {
	exp := w0.Add(5 * 24 * time.Hour)
	a := msg.ProbeResult{EndpointID: "ep", ProbeRunID: "r1", Slot: w0, Region: "eu", CertExpiry: &exp,
		Events: []msg.Event{drift("breaking", nil, []string{"search"}), {Kind: model.EventCredentialExpiry, Message: "expires in 70h", Details: map[string]any{"exp": "x", "hoursLeft": 70}}}}
	b := a
	b.ProbeRunID, b.Slot, b.Region = "r2", w0.Add(time.Hour), "us"
	b.Events = []msg.Event{drift("breaking", nil, []string{"search"}), {Kind: model.EventCredentialExpiry, Message: "expires in 69h", Details: map[string]any{"exp": "x", "hoursLeft": 69}}}
	ea, eb := ChangeEvents(a, 0), ChangeEvents(b, 0)
	if len(ea) != 3 || len(eb) != 3 {
		t.Fatalf("events %v %v", kinds(ea), kinds(eb))
	}
	for i := range ea {
		if ea[i].Fingerprint != eb[i].Fingerprint {
			t.Fatalf("%s: fingerprints differ between sightings: %s %s", ea[i].Kind, ea[i].Fingerprint, eb[i].Fingerprint)
		}
	}
	renewed := exp.Add(90 * 24 * time.Hour)
	c := a
	c.Slot, c.CertExpiry, c.Events = renewed.Add(-24*time.Hour), &renewed, nil
	if ec := ChangeEvents(c, 0); len(ec) != 1 || ec[0].Fingerprint == ea[2].Fingerprint {
		t.Fatalf("a renewed certificate did not get its own event: %+v", ec)
	}
}

func testRedeliveredResultRecordsOneEvent(t *testing.T, e *aenv) {
	removed := msg.ProbeResult{Schema: msg.SchemaVersion, EndpointID: "ep", ProbeRunID: "run-1", Slot: w0.Add(5 * time.Second),
		StartedAt: w0.Add(5 * time.Second), Status: msg.StatusUp, Class: "ok",
		Events: []msg.Event{drift("breaking", nil, []string{"search"})}}
	// The same result delivered three times, and the same drift reported
	// again by the next probe (a prober that crashed before remembering
	// the new catalog).
	for range 3 {
		e.sendResult(removed)
		e.consume()
		if err := e.agg.Handle(e.ctx, msgOf(removed)); err != nil {
			t.Fatal(err)
		}
	}
	next := removed
	next.ProbeRunID, next.Slot = "run-2", w0.Add(35*time.Second)
	if err := e.newAggregator().Handle(e.ctx, msgOf(next)); err != nil {
		t.Fatal(err)
	}
	evs, err := e.st.ListEvents(e.ctx, "ep", store.EventFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 1 || evs[0].Kind != model.EventCatalogBreaking || evs[0].Before != "sha256:old" || evs[0].After != "sha256:new" {
		t.Fatalf("events = %+v, want one catalog_breaking", evs)
	}
	pend, err := e.st.PendingEvents(e.ctx, 0)
	if err != nil || len(pend) != 1 {
		t.Fatalf("pending = %v, %v; want the one event", pend, err)
	}
	if got := testutil.ToFloat64(e.agg.Metrics().Events.WithLabelValues(model.EventCatalogBreaking)); got != 1 {
		t.Fatalf("mcpmon_events_total{kind=catalog_breaking} = %v, want 1", got)
	}
}

func TestRedeliveredResultRecordsOneEvent(t *testing.T) {
	testRedeliveredResultRecordsOneEvent(t, newAenv(t))
}

func TestRedeliveredResultRecordsOneEventRedis(t *testing.T) {
	testRedeliveredResultRecordsOneEvent(t, newRedisAenv(t))
}

// msgOf is r as the results queue delivers it.
func msgOf(r msg.ProbeResult) queue.Message {
	return queue.Message{ID: r.ProbeRunID, GroupID: r.GroupID(), DedupID: r.DedupID(), Body: r.Body()}
}

// An endpoint past its event budget starts one flapping marker per kind,
// which mcpmon_events_flapping_total counts; the changes folded into it
// add to neither counter.
func TestFlappingMarkerIsCounted(t *testing.T) {
	e := newAenv(t)
	n := store.EventsPerHour + 5
	for i := range n {
		d := drift("breaking", nil, []string{"search"})
		details := d.Details.(map[string]any)
		details["oldFingerprint"], details["newFingerprint"] = fmt.Sprintf("sha256:%d", i), fmt.Sprintf("sha256:%d", i+1)
		r := msg.ProbeResult{Schema: msg.SchemaVersion, EndpointID: "ep", ProbeRunID: fmt.Sprintf("run-%d", i), Slot: w0.Add(time.Duration(i) * time.Second),
			StartedAt: w0.Add(time.Duration(i) * time.Second), Status: msg.StatusUp, Class: "ok", Events: []msg.Event{d}}
		if err := e.agg.Handle(e.ctx, msgOf(r)); err != nil {
			t.Fatal(err)
		}
	}
	if got := testutil.ToFloat64(e.agg.Metrics().EventsFlapping.WithLabelValues(model.EventCatalogBreaking)); got != 1 {
		t.Errorf("mcpmon_events_flapping_total{kind=catalog_breaking} = %v, want 1", got)
	}
	if got := testutil.ToFloat64(e.agg.Metrics().Events.WithLabelValues(model.EventCatalogBreaking)); got != float64(store.EventsPerHour+1) {
		t.Errorf("mcpmon_events_total{kind=catalog_breaking} = %v, want %d (the budget and the marker)", got, store.EventsPerHour+1)
	}
}
