package storetest

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/clock"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/store"
)

func endpointIDs(eps []model.Endpoint) []string {
	out := make([]string, 0, len(eps))
	for _, e := range eps {
		out = append(out, e.ID)
	}
	return out
}

// testEndpointsByTenant: a tenant's list holds its endpoints only, follows
// creates and deletes, keeps the tenant across updates, and puts an
// endpoint created without a tenant in the default one.
func testEndpointsByTenant(t *testing.T, s store.Store, _ *clock.Fake) {
	ctx := t.Context()
	eps, err := s.ListEndpointsOf(ctx, "a")
	emptyList(t, "ListEndpointsOf", eps, err)

	for _, e := range []model.Endpoint{
		{ID: "a2", Tenant: "a"}, {ID: "b1", Tenant: "b"}, {ID: "a1", Tenant: "a"},
		{ID: "d1"}, {ID: "ab1", Tenant: "ab"}, // "ab" must not show in "a"'s list
	} {
		e.Schedule = "@every 1m"
		_, err := s.CreateEndpoint(ctx, e)
		must(t, err)
	}
	for tenant, want := range map[string][]string{
		"a": {"a1", "a2"}, "b": {"b1"}, "ab": {"ab1"}, model.DefaultTenant: {"d1"}, "": {"d1"}, "none": {},
	} {
		eps, err := s.ListEndpointsOf(ctx, tenant)
		must(t, err)
		sameJSON(t, endpointIDs(eps), want)
	}
	d1, err := s.GetEndpoint(ctx, "d1")
	must(t, err)
	if d1.Tenant != model.DefaultTenant {
		t.Fatalf("an endpoint created without a tenant has tenant %q, want %q", d1.Tenant, model.DefaultTenant)
	}

	// An update cannot move an endpoint to another tenant.
	a1, err := s.GetEndpoint(ctx, "a1")
	must(t, err)
	a1.Tenant, a1.Name = "b", "moved?"
	a1, err = s.UpdateEndpoint(ctx, a1)
	must(t, err)
	if a1.Tenant != "a" {
		t.Fatalf("update returned tenant %q, want a (fixed at creation)", a1.Tenant)
	}
	if eps, _ := s.ListEndpointsOf(ctx, "b"); !slices.Equal(endpointIDs(eps), []string{"b1"}) {
		t.Fatalf("tenant b lists %v after an update tried to move a1 there", endpointIDs(eps))
	}

	must(t, s.DeleteEndpoint(ctx, "a2"))
	eps, err = s.ListEndpointsOf(ctx, "a")
	must(t, err)
	sameJSON(t, endpointIDs(eps), []string{"a1"})
	if eps[0].Name != "moved?" {
		t.Fatalf("tenant list returned %+v, want the updated record", eps[0])
	}
	all, err := s.ListEndpoints(ctx)
	must(t, err)
	sameJSON(t, endpointIDs(all), []string{"a1", "ab1", "b1", "d1"})
}

// testEndpointQuotaConcurrent: CreateEndpointWithin counts the tenant in
// the write's own transaction: many concurrent creates at the limit let
// exactly the limit through, other tenants are not counted, and a delete
// frees a place.
func testEndpointQuotaConcurrent(t *testing.T, s store.Store, _ *clock.Fake) {
	ctx := t.Context()
	const limit, tries = 5, 24
	_, err := s.CreateEndpointWithin(ctx, model.Endpoint{ID: "other", Tenant: "b", Schedule: "@every 1m"}, 1)
	must(t, err)
	var wg sync.WaitGroup
	errs := make(chan error, tries)
	for i := range tries {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := s.CreateEndpointWithin(ctx, model.Endpoint{ID: fmt.Sprintf("q%02d", i), Tenant: "a", Schedule: "@every 1m"}, limit)
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	created := 0
	for err := range errs {
		switch {
		case err == nil:
			created++
		default:
			wantErr(t, err, store.ErrQuota)
		}
	}
	eps, err := s.ListEndpointsOf(ctx, "a")
	must(t, err)
	if created != limit || len(eps) != limit {
		t.Fatalf("%d creates passed a limit of %d (tenant lists %d)", created, limit, len(eps))
	}
	_, err = s.CreateEndpointWithin(ctx, model.Endpoint{ID: "over", Tenant: "a", Schedule: "@every 1m"}, limit)
	wantErr(t, err, store.ErrQuota)
	must(t, s.DeleteEndpoint(ctx, eps[0].ID))
	_, err = s.CreateEndpointWithin(ctx, model.Endpoint{ID: "over", Tenant: "a", Schedule: "@every 1m"}, limit)
	must(t, err)
	// No limit, and the plain create, are not counted against.
	_, err = s.CreateEndpointWithin(ctx, model.Endpoint{ID: "free", Tenant: "a", Schedule: "@every 1m"}, 0)
	must(t, err)
}

// testIncidentsByTenant: the tenant filter keeps a tenant's incidents, an
// incident without a tenant is the default tenant's, and it combines with
// the other fields.
func testIncidentsByTenant(t *testing.T, s store.Store, _ *clock.Fake) {
	ctx := t.Context()
	a0, b1, d2 := incident("a", Start), incident("b", Start.Add(time.Hour)), incident("d", Start.Add(2*time.Hour))
	a0.Tenant, b1.Tenant = "ta", "tb"
	must(t, s.SaveTracker(ctx, model.Tracker{EndpointID: "a"}, a0))
	must(t, s.SaveTracker(ctx, model.Tracker{EndpointID: "b"}, b1))
	must(t, s.SaveTracker(ctx, model.Tracker{EndpointID: "d"}, d2))
	for _, c := range []struct {
		f    store.IncidentFilter
		want []string
	}{
		{store.IncidentFilter{Tenant: "ta"}, []string{a0.ID}},
		{store.IncidentFilter{Tenant: "tb"}, []string{b1.ID}},
		{store.IncidentFilter{Tenant: model.DefaultTenant}, []string{d2.ID}},
		{store.IncidentFilter{Tenant: "ta", EndpointID: "b"}, []string{}},
		{store.IncidentFilter{Tenant: "tb", State: model.IncidentOpen, Limit: 1}, []string{b1.ID}},
		{store.IncidentFilter{}, []string{d2.ID, b1.ID, a0.ID}},
	} {
		got, err := s.ListIncidents(ctx, c.f)
		must(t, err)
		ids := make([]string, 0, len(got))
		for _, i := range got {
			ids = append(ids, i.ID)
		}
		sameJSON(t, ids, c.want)
	}
	got, err := s.GetIncident(ctx, a0.ID)
	must(t, err)
	if got.Tenant != "ta" {
		t.Fatalf("stored incident has tenant %q, want ta", got.Tenant)
	}
}
