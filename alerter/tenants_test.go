package alerter

import (
	"slices"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/msg"
)

func (e *env) tenantEndpoint(id, tenant string, labels map[string]string) {
	e.t.Helper()
	if _, err := e.st.CreateEndpoint(e.ctx, model.Endpoint{ID: id, Tenant: tenant, Name: "mcp " + id, URL: "https://" + id + ".example/mcp",
		Schedule: "@every 1m", Timeout: 5 * time.Second, Labels: labels}); err != nil {
		e.t.Fatal(err)
	}
}

// TestMaintenanceNeverCrossesTenants: tenant a's window, naming b's
// endpoint by ID and matching its labels, silences a's endpoint and never
// b's; the incidents opened carry their endpoint's tenant.
func TestMaintenanceNeverCrossesTenants(t *testing.T) {
	if model.DefaultTenant != model.DefaultTenant {
		t.Fatalf("model.DefaultTenant %q differs from model.DefaultTenant %q", model.DefaultTenant, model.DefaultTenant)
	}
	e := newEnv(t)
	labels := map[string]string{"team": "core"}
	e.tenantEndpoint("a1", "a", labels)
	e.tenantEndpoint("b1", "b", labels)
	e.maintenance(model.Maintenance{ID: "m-a", Tenant: "a", EndpointIDs: []string{"b1"}, Selector: labels, Start: t0, End: win(20)})
	a := e.alerter("a")
	e.step(a, "a1", 0, down, down, down)
	e.step(a, "b1", 3, down, down, down)

	var opened []string
	for _, n := range e.rcv.notifications() {
		opened = append(opened, n.EndpointID+":"+string(n.Kind))
	}
	if !slices.Equal(opened, []string{"b1:open"}) {
		t.Fatalf("alerts %v, want b1's open only (a1 is in its tenant's maintenance, b1 is not a's to silence)", opened)
	}
	for ep, tenant := range map[string]string{"a1": "a", "b1": "b"} {
		incs := e.incidents(ep)
		if len(incs) != 1 || incs[0].Tenant != tenant || incs[0].ID != msg.IncidentID(ep, incs[0].OpenedWindow) {
			t.Fatalf("incidents of %s: %+v, want one in tenant %s", ep, incs, tenant)
		}
	}
}

// TestMaintenanceWithoutTenantIsTheDefaultTenants: a window written before
// tenants (no tenant) still silences the default tenant's endpoints, and
// only those.
func TestMaintenanceWithoutTenantIsTheDefaultTenants(t *testing.T) {
	for _, c := range []struct {
		window, endpoint string
		match            bool
	}{
		{"", "", true}, {"", model.DefaultTenant, true}, {model.DefaultTenant, "", true},
		{"", "b", false}, {"a", "", false}, {"a", "a", true}, {"a", "b", false},
	} {
		m := model.Maintenance{Tenant: c.window, EndpointIDs: []string{"ep"}}
		if got := m.Matches(model.EndpointRef{ID: "ep", Tenant: c.endpoint}); got != c.match {
			t.Errorf("window tenant %q, endpoint tenant %q: match %v, want %v", c.window, c.endpoint, got, c.match)
		}
	}
}
