package api_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/api"
	apiv1 "github.com/mcpmon/mcpmon/pkg/api/v1"
	"github.com/mcpmon/mcpmon/pkg/config"
	"github.com/mcpmon/mcpmon/pkg/model"
)

// safeIDs replaces the harness's counter with one safe for concurrent
// creates.
func safeIDs(o *api.Options) {
	var n atomic.Int64
	o.NewID = func() string { return fmt.Sprintf("c%d", n.Add(1)) }
}

func withQuotas(q api.Quotas) func(*api.Options) {
	return func(o *api.Options) { o.Quotas = q }
}

func listIDs(t *testing.T, body []byte, field string) []string {
	t.Helper()
	var m map[string][]struct{ ID string }
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatalf("%s: %v", body, err)
	}
	var ids []string
	for _, o := range m[field] {
		ids = append(ids, o.ID)
	}
	return ids
}

func wantQuotaProblem(t *testing.T, resp *http.Response, b []byte, flag string) {
	t.Helper()
	var p apiv1.Problem
	if resp.StatusCode != http.StatusConflict || resp.Header.Get("Content-Type") != apiv1.ProblemContentType ||
		json.Unmarshal(b, &p) != nil || p.Type != apiv1.TypeQuotaExceeded || !strings.Contains(p.Detail, flag) {
		t.Fatalf("%d %s, want 409 problem+json of type %s naming %s", resp.StatusCode, b, apiv1.TypeQuotaExceeded, flag)
	}
}

// TestTenantsSeeOnlyTheirOwn: lists, label-selected maintenance and
// incident filters stay inside the key's tenant.
func TestTenantsSeeOnlyTheirOwn(t *testing.T) {
	ah := newAuthHarness(t)
	a, b := ah.keys["a/admin"], ah.keys["b/admin"]
	create := func(key, name string) string {
		resp, body := ah.call("POST", "/v1/endpoints", key, `{"name":"`+name+`","url":"https://mcp.example.com/mcp","labels":{"team":"core"}}`)
		var v apiv1.EndpointView
		if resp.StatusCode != http.StatusCreated || json.Unmarshal(body, &v) != nil {
			t.Fatalf("create %s: %d %s", name, resp.StatusCode, body)
		}
		return v.ID
	}
	a1, a2, b1 := create(a, "a1"), create(a, "a2"), create(b, "b1")
	incA := seedIncident(t, ah.harness, "inc-a", a1, model.IncidentOpen)
	if incA.Tenant != "a" {
		t.Fatalf("seeded incident tenant %q", incA.Tenant)
	}
	seedIncident(t, ah.harness, "inc-b", b1, model.IncidentOpen)

	for _, c := range []struct {
		key, path, field string
		want             []string
	}{
		{a, "/v1/endpoints", "endpoints", []string{a1, a2}},
		{b, "/v1/endpoints", "endpoints", []string{b1}},
		{a, "/v1/incidents", "incidents", []string{"inc-a"}},
		{b, "/v1/incidents", "incidents", []string{"inc-b"}},
		{b, "/v1/incidents?endpoint=" + a1, "incidents", nil},
		{b, "/v1/incidents?state=open", "incidents", []string{"inc-b"}},
	} {
		resp, body := ah.call("GET", c.path, c.key, "")
		if got := listIDs(t, body, c.field); resp.StatusCode != http.StatusOK || fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("GET %s as %s: %d %v, want %v", c.path, keyTenant(ah, c.key), resp.StatusCode, got, c.want)
		}
	}

	// A selector written by b matches b's labels only; the window lands in
	// b's tenant, invisible to a.
	resp, body := ah.call("POST", "/v1/maintenance", b, `{"selector":{"team":"core"},"start":"2026-03-02T01:00:00Z","end":"2026-03-02T02:00:00Z"}`)
	var m apiv1.MaintenanceView
	if resp.StatusCode != http.StatusCreated || json.Unmarshal(body, &m) != nil || m.Tenant != "b" {
		t.Fatalf("maintenance: %d %s", resp.StatusCode, body)
	}
	if _, body := ah.call("GET", "/v1/maintenance", a, ""); len(listIDs(t, body, "maintenance")) != 0 {
		t.Fatalf("tenant a lists b's maintenance: %s", body)
	}
	if resp, body := ah.call("POST", "/v1/incidents/inc-a/ack", b, `{}`); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("b acknowledges a's incident: %d %s", resp.StatusCode, body)
	}
	if got, _ := ah.store.GetIncident(t.Context(), "inc-a"); got.State != model.IncidentOpen {
		t.Fatalf("a's incident is %s after b's ack", got.State)
	}
}

func keyTenant(ah *authHarness, key string) string {
	for name, k := range ah.keys {
		if k == key {
			return name
		}
	}
	return "?"
}

// TestWithoutKeysEverythingIsTheDefaultTenant: with authentication off the
// API serves the default tenant, which owns the records from before tenants.
func TestWithoutKeysEverythingIsTheDefaultTenant(t *testing.T) {
	h := newHarness(t)
	if _, err := h.store.CreateEndpoint(t.Context(), model.Endpoint{ID: "old", Name: "old", URL: "https://mcp.example.com/mcp", Schedule: "@every 30s"}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.store.CreateEndpoint(t.Context(), model.Endpoint{ID: "theirs", Tenant: "other", Name: "x", URL: "https://mcp.example.com/mcp", Schedule: "@every 30s"}); err != nil {
		t.Fatal(err)
	}
	resp, b := h.do("GET", "/v1/endpoints", "", "")
	if got := listIDs(t, b, "endpoints"); resp.StatusCode != http.StatusOK || fmt.Sprint(got) != "[old]" {
		t.Fatalf("list without keys: %d %v, want [old]", resp.StatusCode, got)
	}
	if resp, _ := h.do("GET", "/v1/endpoints/theirs", "", ""); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("another tenant's endpoint without keys: %d, want 404", resp.StatusCode)
	}
}

// TestEndpointQuota: the 1,001st endpoint of a tenant is a 409 naming the
// quota; other tenants are not counted, and a delete frees a place.
func TestEndpointQuota(t *testing.T) {
	ah := newAuthHarness(t, withQuotas(api.Quotas{MaxEndpoints: config.DefaultMaxEndpointsPerTenant}))
	for i := range config.DefaultMaxEndpointsPerTenant - 1 {
		if _, err := ah.store.CreateEndpoint(t.Context(), model.Endpoint{ID: fmt.Sprintf("seed%04d", i), Tenant: "a", Schedule: "@every 30s"}); err != nil {
			t.Fatal(err)
		}
	}
	body := `{"name":"n","url":"https://mcp.example.com/mcp"}`
	if resp, b := ah.call("POST", "/v1/endpoints", ah.keys["a/write"], body); resp.StatusCode != http.StatusCreated {
		t.Fatalf("the 1,000th: %d %s", resp.StatusCode, b)
	}
	resp, b := ah.call("POST", "/v1/endpoints", ah.keys["a/write"], body)
	wantQuotaProblem(t, resp, b, "--max-endpoints-per-tenant")
	if resp, b := ah.call("POST", "/v1/endpoints", ah.keys["b/admin"], body); resp.StatusCode != http.StatusCreated {
		t.Fatalf("tenant b at a's limit: %d %s", resp.StatusCode, b)
	}
	if resp, b := ah.call("DELETE", "/v1/endpoints/seed0000", ah.keys["a/write"], ""); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("delete: %d %s", resp.StatusCode, b)
	}
	if resp, b := ah.call("POST", "/v1/endpoints", ah.keys["a/write"], body); resp.StatusCode != http.StatusCreated {
		t.Fatalf("after a delete: %d %s", resp.StatusCode, b)
	}
}

// TestQuotasHoldUnderConcurrentCreates: creates racing at the limit on one
// replica let exactly the limit through, for endpoints and maintenance.
func TestQuotasHoldUnderConcurrentCreates(t *testing.T) {
	const limit, tries = 3, 16
	ah := newAuthHarness(t, safeIDs, withQuotas(api.Quotas{MaxEndpoints: limit, MaxMaintenance: limit}))
	for _, c := range []struct{ path, body, list string }{
		{"/v1/endpoints", `{"name":"n","url":"https://mcp.example.com/mcp"}`, "endpoints"},
		{"/v1/maintenance", `{"endpointIds":["x"],"start":"2026-03-02T01:00:00Z","end":"2026-03-02T02:00:00Z"}`, "maintenance"},
	} {
		var wg sync.WaitGroup
		var created, refused atomic.Int64
		for range tries {
			wg.Add(1)
			go func() {
				defer wg.Done()
				switch resp, b := ah.call("POST", c.path, ah.keys["a/write"], c.body); resp.StatusCode {
				case http.StatusCreated:
					created.Add(1)
				case http.StatusConflict:
					refused.Add(1)
				default:
					t.Errorf("%s: %d %s", c.path, resp.StatusCode, b)
				}
			}()
		}
		wg.Wait()
		_, b := ah.call("GET", c.path, ah.keys["a/read"], "")
		if n := len(listIDs(t, b, c.list)); created.Load() != limit || refused.Load() != tries-limit || n != limit {
			t.Errorf("%s: %d created, %d refused, %d listed; want %d, %d, %d", c.path, created.Load(), refused.Load(), n, limit, tries-limit, limit)
		}
	}
	resp, b := ah.call("POST", "/v1/maintenance", ah.keys["a/write"], `{"endpointIds":["x"],"start":"2026-03-02T01:00:00Z","end":"2026-03-02T02:00:00Z"}`)
	wantQuotaProblem(t, resp, b, "--max-maintenance-per-tenant")
}

// TestRateLimitPerTenant: past its burst a tenant gets 429 problem+json
// with Retry-After; another tenant is not held back; tokens come back with
// the (injected) clock.
func TestRateLimitPerTenant(t *testing.T) {
	ah := newAuthHarness(t, withQuotas(api.Quotas{RatePerSecond: 0.5, Burst: 3}))
	for i := range 3 {
		if resp, b := ah.call("GET", "/v1/endpoints", ah.keys["a/read"], ""); resp.StatusCode != http.StatusOK {
			t.Fatalf("request %d within the burst: %d %s", i+1, resp.StatusCode, b)
		}
	}
	resp, b := ah.call("GET", "/v1/endpoints", ah.keys["a/admin"], "") // same tenant, another key
	var p apiv1.Problem
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Content-Type") != apiv1.ProblemContentType ||
		json.Unmarshal(b, &p) != nil || p.Type != apiv1.TypeRateLimited {
		t.Fatalf("past the burst: %d %s, want 429 problem+json", resp.StatusCode, b)
	}
	if got := resp.Header.Get("Retry-After"); got != "2" {
		t.Fatalf("Retry-After %q, want 2 (one token at 0.5/s)", got)
	}
	if resp, b := ah.call("GET", "/v1/endpoints", ah.keys["b/admin"], ""); resp.StatusCode != http.StatusOK {
		t.Fatalf("tenant b held back by a: %d %s", resp.StatusCode, b)
	}
	ah.clock.Advance(time.Second)
	if resp, _ := ah.call("GET", "/v1/endpoints", ah.keys["a/read"], ""); resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "1" {
		t.Fatalf("half a token later: %d Retry-After %q, want 429 and 1", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	ah.clock.Advance(time.Second)
	if resp, b := ah.call("GET", "/v1/endpoints", ah.keys["a/read"], ""); resp.StatusCode != http.StatusOK {
		t.Fatalf("a token later: %d %s", resp.StatusCode, b)
	}
	// Without a key there is no tenant to charge: 401 first, never 429.
	if resp, _ := ah.call("GET", "/v1/endpoints", "", ""); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("no key: %d, want 401", resp.StatusCode)
	}
}

// heldProbes holds every probe on demand inside the handler until
// released, so a test can keep requests in progress without a clock.
type heldProbes struct{ entered, release chan struct{} }

func (p heldProbes) ProbeNow(ctx context.Context, _ model.Endpoint, _ time.Time) error {
	p.entered <- struct{}{}
	select {
	case <-p.release:
	case <-ctx.Done():
	}
	return errors.New("released by the test")
}

// A tenant's requests in progress are capped: probes on demand wait up to
// their endpoint's timeout, so a tenant within its rate could otherwise
// hold hundreds. Another tenant is not held back, and a slot frees when a
// request ends.
func TestInFlightCapPerTenant(t *testing.T) {
	probes := heldProbes{entered: make(chan struct{}), release: make(chan struct{})}
	ah := newAuthHarness(t, withQuotas(api.Quotas{MaxInFlight: 2}), func(o *api.Options) { o.Probes = probes })
	resp, b := ah.call("POST", "/v1/endpoints", ah.keys["a/admin"], `{"name":"a","url":"https://a.example/mcp"}`)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create: %d %s", resp.StatusCode, b)
	}
	var ep struct{ ID string }
	if err := json.Unmarshal(b, &ep); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	codes := make(chan int, 2)
	for range 2 {
		wg.Go(func() {
			req, _ := http.NewRequestWithContext(t.Context(), "POST", ah.srv.URL+"/v1/endpoints/"+ep.ID+"/probe", nil)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer "+ah.keys["a/write"])
			resp, err := ah.srv.Client().Do(req)
			if err != nil {
				codes <- 0
				return
			}
			resp.Body.Close()
			codes <- resp.StatusCode
		})
	}
	<-probes.entered
	<-probes.entered // both in progress

	resp, b = ah.call("GET", "/v1/endpoints", ah.keys["a/read"], "")
	var p apiv1.Problem
	if resp.StatusCode != http.StatusTooManyRequests || json.Unmarshal(b, &p) != nil || p.Type != apiv1.TypeRateLimited ||
		resp.Header.Get("Retry-After") != "1" || !strings.Contains(p.Detail, "--max-in-flight-per-tenant") {
		t.Fatalf("a third request of the tenant: %d Retry-After %q %s, want 429 naming --max-in-flight-per-tenant", resp.StatusCode, resp.Header.Get("Retry-After"), b)
	}
	if resp, b := ah.call("GET", "/v1/endpoints", ah.keys["b/admin"], ""); resp.StatusCode != http.StatusOK {
		t.Fatalf("tenant b held back by a's requests: %d %s", resp.StatusCode, b)
	}
	close(probes.release)
	wg.Wait()
	close(codes)
	for c := range codes {
		if c != http.StatusServiceUnavailable {
			t.Errorf("a held probe answered %d, want 503 (its queueing failed)", c)
		}
	}
	if resp, b := ah.call("GET", "/v1/endpoints", ah.keys["a/read"], ""); resp.StatusCode != http.StatusOK {
		t.Fatalf("once the probes ended: %d %s", resp.StatusCode, b)
	}
}
