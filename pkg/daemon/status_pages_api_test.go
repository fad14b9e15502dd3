package daemon

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	apiv1 "github.com/mcpmon/mcpmon/pkg/api/v1"
	"github.com/mcpmon/mcpmon/pkg/config"
)

// TestStatusPagesAPIOnARunningServer drives /v1/status-pages on a real
// `mcpmon run` (embedded store, keys on) with two tenants: a page is
// created, listed, replaced and kept across a restart; the other
// tenant's key gets the 404 of a missing page for every verb and lists
// none; page and public endpoint slugs are one namespace across tenants;
// and --max-status-pages-per-tenant is the quota the API enforces.
func TestStatusPagesAPIOnARunningServer(t *testing.T) {
	var opts config.Options
	td := startTenants(t, func(o *config.Options) {
		o.MaxStatusPagesPerTenant = 2
		opts = *o
	})
	page := map[string]any{
		"slug": "acme", "title": "Acme status", "description": "Our servers.\nLive.", "host": "status.acme.example",
		"groups": []map[string]any{{"name": "Search", "selector": map[string]string{"team": "search"}}, {"name": "All"}},
	}
	status, raw := td.ta.send(t, http.MethodPost, "/v1/status-pages", page)
	var created apiv1.StatusPageView
	if status != http.StatusCreated || json.Unmarshal(raw, &created) != nil || created.Tenant != "ta" || len(created.Groups) != 2 || created.CreatedAt.IsZero() {
		t.Fatalf("create = %d %s", status, raw)
	}

	// Tenant tb: the same 404 as a missing page, for every verb; an empty list.
	for _, c := range []struct {
		method string
		body   any
	}{{http.MethodGet, nil}, {http.MethodPut, map[string]any{"slug": "mine", "title": "mine"}}, {http.MethodDelete, nil}} {
		st, b := td.tb.send(t, c.method, "/v1/status-pages/"+created.ID, c.body)
		mst, mb := td.tb.send(t, c.method, "/v1/status-pages/nosuchpage", c.body)
		if st != http.StatusNotFound || mst != http.StatusNotFound ||
			strings.ReplaceAll(string(b), created.ID, "X") != strings.ReplaceAll(string(mb), "nosuchpage", "X") {
			t.Errorf("tb %s ta's page = %d %s; a missing page = %d %s; want the same 404", c.method, st, b, mst, mb)
		}
	}
	if st, b := td.tb.send(t, http.MethodGet, "/v1/status-pages", nil); st != http.StatusOK || !bytes.Contains(b, []byte(`"items":[]`)) {
		t.Errorf("tb's list = %d %s, want none", st, b)
	}

	// One namespace: tb can take ta's page slug neither as a page nor as a
	// public endpoint; ta cannot name a page after tb's public endpoint.
	if st, b := td.tb.send(t, http.MethodPost, "/v1/status-pages", map[string]any{"slug": "acme", "title": "squat"}); st != http.StatusConflict || !bytes.Contains(b, []byte(`"#/slug"`)) {
		t.Errorf("tb's page under ta's slug = %d %s, want 409 naming #/slug", st, b)
	}
	if st, b := td.tb.send(t, http.MethodPost, "/v1/endpoints", map[string]any{"name": "e", "url": "https://mcp.example.com/mcp", "public": true, "slug": "acme"}); st != http.StatusConflict || !bytes.Contains(b, []byte(`"#/slug"`)) {
		t.Errorf("tb's public endpoint under ta's page slug = %d %s, want 409 naming #/slug", st, b)
	}
	if st, b := td.tb.send(t, http.MethodPost, "/v1/endpoints", map[string]any{"name": "e", "url": "https://mcp.example.com/mcp", "public": true, "slug": "tb-public"}); st != http.StatusCreated {
		t.Fatalf("tb's public endpoint = %d %s", st, b)
	}
	if st, b := td.ta.send(t, http.MethodPost, "/v1/status-pages", map[string]any{"slug": "tb-public", "title": "t"}); st != http.StatusConflict || !bytes.Contains(b, []byte(`"#/slug"`)) {
		t.Errorf("ta's page under tb's endpoint slug = %d %s, want 409 naming #/slug", st, b)
	}

	// The quota flag: ta's second page fits, the third does not.
	if st, b := td.ta.send(t, http.MethodPost, "/v1/status-pages", map[string]any{"slug": "acme-two", "title": "t"}); st != http.StatusCreated {
		t.Fatalf("second page = %d %s", st, b)
	}
	if st, b := td.ta.send(t, http.MethodPost, "/v1/status-pages", map[string]any{"slug": "acme-three", "title": "t"}); st != http.StatusConflict ||
		!bytes.Contains(b, []byte(apiv1.TypeQuotaExceeded)) || !bytes.Contains(b, []byte("--max-status-pages-per-tenant")) {
		t.Errorf("third page = %d %s, want the quota problem naming --max-status-pages-per-tenant", st, b)
	}

	page["title"] = "Acme status (replaced)"
	if st, b := td.ta.send(t, http.MethodPut, "/v1/status-pages/"+created.ID, page); st != http.StatusOK {
		t.Fatalf("replace = %d %s", st, b)
	}

	// A restart on the same data dir keeps the page and its names.
	td.d.Stop()
	if err := td.d.Wait(); err != nil {
		t.Fatalf("stop: %v", err)
	}
	var banner bytes.Buffer
	d, err := Start(t.Context(), RoleAll, opts, Deps{Stdout: &banner})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Stop(); _ = d.Wait() })
	ta := apiClient{addr: d.Addr(), key: td.ta.key}
	st, b := ta.send(t, http.MethodGet, "/v1/status-pages", nil)
	var list apiv1.StatusPageList
	if st != http.StatusOK || json.Unmarshal(b, &list) != nil || len(list.Items) != 2 ||
		list.Items[0].Title != "Acme status (replaced)" || list.Items[0].Host != "status.acme.example" || list.Items[1].Slug != "acme-two" {
		t.Fatalf("after a restart, list = %d %s", st, b)
	}
	if st, b := ta.send(t, http.MethodDelete, "/v1/status-pages/"+created.ID, nil); st != http.StatusNoContent {
		t.Fatalf("delete = %d %s", st, b)
	}
	tb := apiClient{addr: d.Addr(), key: td.tb.key}
	if st, b := tb.send(t, http.MethodPost, "/v1/status-pages", map[string]any{"slug": "acme", "title": "t", "host": "status.acme.example"}); st != http.StatusCreated {
		t.Fatalf("tb takes the freed names = %d %s", st, b)
	}
}
