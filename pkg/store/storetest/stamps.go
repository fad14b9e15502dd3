package storetest

import (
	"testing"

	"github.com/mcpmon/mcpmon/pkg/clock"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/store"
)

// testIncidentsStamp: the incidents stamp moves with every write of an
// incident (opened by SaveTracker, changed by UpdateIncident) and stays
// still for a tracker saved without incidents and for a refused write.
func testIncidentsStamp(t *testing.T, s store.Store, clk *clock.Fake) {
	ctx := t.Context()
	stamp := func() uint64 {
		t.Helper()
		n, err := s.IncidentsStamp(ctx)
		must(t, err)
		return n
	}
	before := stamp()
	must(t, s.SaveTracker(ctx, model.Tracker{EndpointID: "ep"}))
	if n := stamp(); n != before {
		t.Fatalf("a tracker saved without incidents moved the stamp %d → %d", before, n)
	}
	inc := incident("ep", Start)
	tr, err := s.GetTracker(ctx, "ep")
	must(t, err)
	must(t, s.SaveTracker(ctx, tr, inc))
	opened := stamp()
	if opened == before {
		t.Fatal("opening an incident left the stamp still")
	}
	cur, err := s.GetIncident(ctx, inc.ID)
	must(t, err)
	cur.Updates = append(cur.Updates, model.IncidentUpdate{At: clk.Now(), Status: model.UpdateIdentified, Message: "found it"})
	_, err = s.UpdateIncident(ctx, cur)
	must(t, err)
	updated := stamp()
	if updated == opened {
		t.Fatal("an incident update left the stamp still")
	}
	_, err = s.UpdateIncident(ctx, cur) // stale version
	wantErr(t, err, store.ErrConflict)
	if n := stamp(); n != updated {
		t.Fatalf("a refused update moved the stamp %d → %d", updated, n)
	}
}

// testAnyTenantStamp: a kind's AnyTenant stamp moves with a put or delete
// of any tenant's document of that kind, and not with another kind's.
func testAnyTenantStamp(t *testing.T, s store.Store, _ *clock.Fake) {
	ctx := t.Context()
	kind, other := store.KindSubscriber, store.KindMaintenance
	stamp := func(kind string) uint64 {
		t.Helper()
		n, err := s.ObjectsStamp(ctx, kind, store.AnyTenant)
		must(t, err)
		return n
	}
	last := stamp(kind)
	for _, step := range []struct {
		name string
		do   func() error
	}{
		{"put of tenant a", func() error { return s.PutObject(ctx, kind, "x", []byte(`{"tenant":"a"}`)) }},
		{"put of tenant b", func() error { return s.PutObject(ctx, kind, "y", []byte(`{"tenant":"b"}`)) }},
		{"delete of tenant a", func() error { return s.DeleteObject(ctx, kind, "x") }},
	} {
		otherBefore := stamp(other)
		must(t, step.do())
		n := stamp(kind)
		if n == last {
			t.Fatalf("%s left the kind's stamp still", step.name)
		}
		if o := stamp(other); o != otherBefore {
			t.Fatalf("%s moved another kind's stamp", step.name)
		}
		last = n
	}
}
