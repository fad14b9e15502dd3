package store_test

import (
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/store"
)

func TestMergeDeliveryNeverHidesADelivery(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	t1, t2 := t0.Add(time.Second), t0.Add(time.Minute)
	failed := store.Delivery{Kind: "open", Sink: "hook", Outcome: store.DeliveryFailed, Attempts: 4, FirstAttemptAt: t0, LastAttemptAt: t1, LastError: "HTTP 503"}
	delivered := store.Delivery{Kind: "open", Sink: "hook", Outcome: store.DeliveryDelivered, Attempts: 1, FirstAttemptAt: t2, LastAttemptAt: t2, DeliveredAt: t2}
	for _, c := range []struct {
		name      string
		cur, next store.Delivery
		want      store.Delivery
	}{
		{"first record", store.Delivery{}, failed, failed},
		{"delivered after failures", failed, delivered, store.Delivery{Kind: "open", Sink: "hook", Outcome: store.DeliveryDelivered,
			Attempts: 5, FirstAttemptAt: t0, LastAttemptAt: t2, DeliveredAt: t2, LastError: "HTTP 503"}},
		{"skipped after delivered", delivered, store.Delivery{Kind: "open", Sink: "hook", Outcome: store.DeliverySkipped}, delivered},
		{"late failure after delivered", delivered, failed, store.Delivery{Kind: "open", Sink: "hook", Outcome: store.DeliveryDelivered,
			Attempts: 5, FirstAttemptAt: t0, LastAttemptAt: t2, DeliveredAt: t2, LastError: "HTTP 503"}},
		{"muted after failures", failed, store.Delivery{Kind: "open", Sink: "hook", Outcome: store.DeliveryMuted},
			store.Delivery{Kind: "open", Sink: "hook", Outcome: store.DeliveryMuted, Attempts: 4, FirstAttemptAt: t0, LastAttemptAt: t1, LastError: "HTTP 503"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := store.MergeDelivery(c.cur, c.next); got != c.want {
				t.Fatalf("MergeDelivery =\n %+v\nwant\n %+v", got, c.want)
			}
		})
	}
}

func TestSortDeliveriesFollowsTheIncident(t *testing.T) {
	ds := []store.Delivery{{Kind: "resolve", Sink: "a"}, {Kind: "reminder-10", Sink: "a"}, {Kind: "reminder-2", Sink: "b"},
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
