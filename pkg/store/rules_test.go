package store_test

import (
	"errors"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/msg"
	"github.com/mcpmon/mcpmon/pkg/store"
)

func TestEndpointVersionsMoveByOne(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	t1 := t0.Add(time.Hour)
	first, err := store.FirstEndpointVersion(model.Endpoint{ID: "ep"}, t0)
	if err != nil || first.Version != 1 || !first.CreatedAt.Equal(t0) || !first.UpdatedAt.Equal(t0) {
		t.Fatalf("first version = %+v, %v; want version 1 created and updated at %s", first, err, t0)
	}
	given := t0.Add(-time.Hour)
	if e, _ := store.FirstEndpointVersion(model.Endpoint{ID: "ep", CreatedAt: given}, t0); !e.CreatedAt.Equal(given) || !e.UpdatedAt.Equal(given) {
		t.Fatalf("a given CreatedAt was not kept: %+v", e)
	}
	if _, err := store.FirstEndpointVersion(model.Endpoint{}, t0); err == nil {
		t.Fatal("an endpoint without ID got a first version")
	}

	edit := first
	edit.Name, edit.CreatedAt = "renamed", t1
	next, err := store.NextEndpointVersion(first, edit, t1)
	if err != nil || next.Version != 2 || !next.CreatedAt.Equal(t0) || !next.UpdatedAt.Equal(t1) || next.Name != "renamed" {
		t.Fatalf("next version = %+v, %v; want version 2, created %s, updated %s", next, err, t0, t1)
	}
	if _, err := store.NextEndpointVersion(next, edit, t1); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("update from a stale version = %v, want ErrConflict", err)
	}
}

func TestIncidentFilterZeroFieldsMatchAll(t *testing.T) {
	inc := model.Incident{ID: "i", EndpointID: "ep", State: model.IncidentAcknowledged}
	for _, c := range []struct {
		name string
		f    store.IncidentFilter
		want bool
	}{
		{"zero filter", store.IncidentFilter{}, true},
		{"same endpoint", store.IncidentFilter{EndpointID: "ep"}, true},
		{"other endpoint", store.IncidentFilter{EndpointID: "other"}, false},
		{"same state", store.IncidentFilter{State: model.IncidentAcknowledged}, true},
		{"other state", store.IncidentFilter{State: model.IncidentOpen}, false},
		{"both agree", store.IncidentFilter{EndpointID: "ep", State: model.IncidentAcknowledged, Limit: 1}, true},
		{"one disagrees", store.IncidentFilter{EndpointID: "ep", State: model.IncidentResolved}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := c.f.Match(inc); got != c.want {
				t.Fatalf("Match = %v, want %v", got, c.want)
			}
		})
	}
	if (store.IncidentFilter{}).Full(1000) {
		t.Fatal("a filter without Limit is full")
	}
	if f := (store.IncidentFilter{Limit: 2}); f.Full(1) || !f.Full(2) {
		t.Fatal("Limit 2: full at 1 or not at 2")
	}
}

func TestOnlyResolvedIncidentsLeaveTheOpenIndex(t *testing.T) {
	for state, want := range map[model.IncidentState]bool{
		model.IncidentOpen: true, model.IncidentAcknowledged: true, model.IncidentResolved: false,
	} {
		if got := (model.Incident{State: state}).Unresolved(); got != want {
			t.Errorf("%s: Unresolved = %v, want %v", state, got, want)
		}
	}
}

func TestSortResultsByRegionThenRun(t *testing.T) {
	rs := []msg.ProbeResult{{Region: "us", ProbeRunID: "a"}, {Region: "eu", ProbeRunID: "b"}, {Region: "eu", ProbeRunID: "a"}}
	store.SortResults(rs)
	for i, want := range []string{"eu/a", "eu/b", "us/a"} {
		if got := rs[i].Region + "/" + rs[i].ProbeRunID; got != want {
			t.Fatalf("result %d = %s, want %s", i, got, want)
		}
	}
}

func TestMergeDeliveryNeverHidesADelivery(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	t1, t2 := t0.Add(time.Second), t0.Add(time.Minute)
	failed := model.Delivery{Kind: "open", Sink: "hook", Outcome: model.DeliveryFailed, Attempts: 4, FirstAttemptAt: t0, LastAttemptAt: t1, LastError: "HTTP 503"}
	delivered := model.Delivery{Kind: "open", Sink: "hook", Outcome: model.DeliveryDelivered, Attempts: 1, FirstAttemptAt: t2, LastAttemptAt: t2, DeliveredAt: t2}
	for _, c := range []struct {
		name      string
		cur, next model.Delivery
		want      model.Delivery
	}{
		{"first record", model.Delivery{}, failed, failed},
		{"delivered after failures", failed, delivered, model.Delivery{Kind: "open", Sink: "hook", Outcome: model.DeliveryDelivered,
			Attempts: 5, FirstAttemptAt: t0, LastAttemptAt: t2, DeliveredAt: t2, LastError: "HTTP 503"}},
		{"skipped after delivered", delivered, model.Delivery{Kind: "open", Sink: "hook", Outcome: model.DeliverySkipped}, delivered},
		{"late failure after delivered", delivered, failed, model.Delivery{Kind: "open", Sink: "hook", Outcome: model.DeliveryDelivered,
			Attempts: 5, FirstAttemptAt: t0, LastAttemptAt: t2, DeliveredAt: t2, LastError: "HTTP 503"}},
		{"muted after failures", failed, model.Delivery{Kind: "open", Sink: "hook", Outcome: model.DeliveryMuted},
			model.Delivery{Kind: "open", Sink: "hook", Outcome: model.DeliveryMuted, Attempts: 4, FirstAttemptAt: t0, LastAttemptAt: t1, LastError: "HTTP 503"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := store.MergeDelivery(c.cur, c.next); got != c.want {
				t.Fatalf("MergeDelivery =\n %+v\nwant\n %+v", got, c.want)
			}
		})
	}
}

func TestSortDeliveriesFollowsTheIncident(t *testing.T) {
	ds := []model.Delivery{{Kind: "resolve", Sink: "a"}, {Kind: "reminder-10", Sink: "a"}, {Kind: "reminder-2", Sink: "b"},
		{Kind: "reminder-2", Sink: "a"}, {Kind: "open", Sink: "b"}, {Kind: "open", Sink: "a"}}
	store.SortDeliveries(ds)
	var got []string
	for _, d := range ds {
		got = append(got, d.Kind+"/"+d.Sink)
	}
	want := []string{"open/a", "open/b", "reminder-2/a", "reminder-2/b", "reminder-10/a", "resolve/a"}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("order %v, want %v", got, want)
		}
	}
}
