package api_test

import (
	"net/http"
	"testing"

	apiv1 "github.com/mcpmon/mcpmon/pkg/api/v1"
)

// TestPublicConformanceIsStoredAndPatched: publicConformance is off unless
// sent, kept by a patch of another field, and turned off by false or null,
// every exchange held to openapi.yaml.
func TestPublicConformanceIsStoredAndPatched(t *testing.T) {
	h := newHarness(t)
	const url = `"url": "https://mcp.example.com/mcp"`
	if plain := h.create(`{"name": "a", ` + url + `, "public": true, "slug": "plain-mcp"}`); plain.PublicConformance {
		t.Fatalf("publicConformance on without being asked: %+v", plain)
	}
	ep := h.create(`{"name": "b", ` + url + `, "public": true, "slug": "spec-mcp", "publicConformance": true}`)
	if !ep.PublicConformance {
		t.Fatalf("created %+v, want publicConformance", ep)
	}
	// A fresh view per response: an omitted false must not read as the
	// previous response's true.
	view := func(method, body string) apiv1.EndpointView {
		t.Helper()
		var v apiv1.EndpointView
		h.mustJSON(method, "/v1/endpoints/"+ep.ID, body, http.StatusOK, &v)
		return v
	}
	if v := view(http.MethodGet, ""); !v.PublicConformance {
		t.Fatalf("GET %+v, want publicConformance", v)
	}
	if v := view(http.MethodPatch, `{"name": "renamed"}`); !v.PublicConformance {
		t.Fatalf("a patch of another field dropped publicConformance: %+v", v)
	}
	if v := view(http.MethodPatch, `{"publicConformance": null}`); v.PublicConformance {
		t.Fatalf("null kept publicConformance: %+v", v)
	}
	view(http.MethodPatch, `{"publicConformance": true}`)
	if v := view(http.MethodPatch, `{"publicConformance": false}`); v.PublicConformance {
		t.Fatalf("false kept publicConformance: %+v", v)
	}
	if v := view(http.MethodGet, ""); v.PublicConformance {
		t.Fatalf("GET after false %+v", v)
	}
	h.mustJSON(http.MethodPost, "/v1/endpoints", `{"name": "c", `+url+`, "publicConformance": "yes"}`, http.StatusBadRequest, nil)
}
