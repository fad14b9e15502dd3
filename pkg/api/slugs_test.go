package api_test

import (
	"net/http"
	"testing"

	apiv1 "github.com/mcpmon/mcpmon/pkg/api/v1"
)

// TestSlugsAreValidatedAndUniqueAcrossTheDeployment: public needs a slug,
// a slug is [a-z0-9-] of 3 to 63, and a second public endpoint cannot take
// one a public endpoint holds (on create or by PATCH); a private endpoint
// may name it (it serves nothing) but not be made public with it; the
// owner can keep its own.
func TestSlugsAreValidatedAndUniqueAcrossTheDeployment(t *testing.T) {
	h := newHarness(t)
	const url = `"url": "https://mcp.example.com/mcp"`
	for _, body := range []string{
		`{"name": "a", ` + url + `, "public": true}`,
		`{"name": "a", ` + url + `, "slug": "ab"}`,
		`{"name": "a", ` + url + `, "slug": "Has-Caps"}`,
		`{"name": "a", ` + url + `, "slug": "-edge"}`,
		`{"name": "a", ` + url + `, "slug": "sp ace"}`,
	} {
		h.mustJSON(http.MethodPost, "/v1/endpoints", body, http.StatusBadRequest, nil)
	}
	first := h.create(`{"name": "a", ` + url + `, "public": true, "slug": "acme-mcp"}`)
	if !first.Public || first.Slug != "acme-mcp" {
		t.Fatalf("created %+v", first)
	}
	h.mustJSON(http.MethodPost, "/v1/endpoints", `{"name": "b", `+url+`, "public": true, "slug": "acme-mcp"}`, http.StatusConflict, nil)
	private := h.create(`{"name": "b", ` + url + `, "slug": "acme-mcp"}`)
	h.mustJSON(http.MethodPatch, "/v1/endpoints/"+private.ID, `{"public": true}`, http.StatusConflict, nil)
	second := h.create(`{"name": "c", ` + url + `}`)
	h.mustJSON(http.MethodPatch, "/v1/endpoints/"+second.ID, `{"slug": "acme-mcp", "public": true}`, http.StatusConflict, nil)
	var v apiv1.EndpointView
	h.mustJSON(http.MethodPatch, "/v1/endpoints/"+first.ID, `{"name": "renamed"}`, http.StatusOK, &v)
	if v.Slug != "acme-mcp" || !v.Public {
		t.Fatalf("a patch of another field dropped the slug: %+v", v)
	}
	var off apiv1.EndpointView
	h.mustJSON(http.MethodPatch, "/v1/endpoints/"+first.ID, `{"public": false}`, http.StatusOK, &off)
	if off.Public || off.Slug != "acme-mcp" {
		t.Fatal("still public")
	}
}
