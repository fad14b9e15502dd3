package api_test

import (
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/mcpmon/mcpmon/pkg/api"
	apiv1 "github.com/mcpmon/mcpmon/pkg/api/v1"
)

// TestEndpointRegionsAreValidatedAgainstTheSet: an endpoint may choose some
// of the deployment's regions (kept in the set's order, without repeats);
// an unknown region, or any region where no set is configured, is a 400
// naming #/regions; leaving regions out means every region.
func TestEndpointRegionsAreValidatedAgainstTheSet(t *testing.T) {
	const url = `"url": "https://mcp.example.com/mcp"`
	h := newHarness(t, func(o *api.Options) { o.Regions = []string{"eu", "us", "ap"} })
	v := h.create(`{"name": "a", ` + url + `, "regions": ["ap", "eu", "ap"]}`)
	if !slices.Equal(v.Regions, []string{"eu", "ap"}) {
		t.Fatalf("regions = %v, want [eu ap]", v.Regions)
	}
	if all := h.create(`{"name": "b", ` + url + `}`); all.Regions != nil {
		t.Fatalf("regions left out = %v, want none (every region)", all.Regions)
	}
	resp, body := h.do(http.MethodPost, "/v1/endpoints", "", `{"name": "c", `+url+`, "regions": ["mars"]}`)
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "#/regions") || !strings.Contains(string(body), "mars") {
		t.Fatalf("unknown region: %d %s, want 400 naming #/regions and the region", resp.StatusCode, body)
	}
	var patched apiv1.EndpointView
	h.mustJSON(http.MethodPatch, "/v1/endpoints/"+v.ID, `{"regions": ["us"]}`, http.StatusOK, &patched)
	if !slices.Equal(patched.Regions, []string{"us"}) {
		t.Fatalf("patched regions = %v, want [us]", patched.Regions)
	}

	single := newHarness(t)
	resp, body = single.do(http.MethodPost, "/v1/endpoints", "", `{"name": "d", `+url+`, "regions": ["eu"]}`)
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "#/regions") {
		t.Fatalf("regions without a region set: %d %s, want 400 naming #/regions", resp.StatusCode, body)
	}
}

// TestAgentLocationsAreRegions: an endpoint may name agent locations
// (loc-NAME) with or without a region set, after its regions; one probed
// by agents alone skips the central target policy, and moving it to the
// central probers checks the policy again.
func TestAgentLocationsAreRegions(t *testing.T) {
	refuseLoopback := func(o *api.Options) {
		o.TargetValidator = func(raw string) error {
			if strings.Contains(raw, "127.0.0.1") {
				return errors.New("loopback address")
			}
			return nil
		}
	}
	single := newHarness(t, refuseLoopback)
	const private = `"url": "http://127.0.0.1:9/mcp"`
	v := single.create(`{"name": "a", ` + private + `, "regions": ["loc-office", "loc-lab", "loc-office"]}`)
	if !slices.Equal(v.Regions, []string{"loc-lab", "loc-office"}) {
		t.Fatalf("regions = %v, want [loc-lab loc-office]", v.Regions)
	}
	if resp, body := single.do(http.MethodPost, "/v1/endpoints", "", `{"name": "b", `+private+`}`); resp.StatusCode != http.StatusBadRequest ||
		!strings.Contains(string(body), "#/url") {
		t.Fatalf("a loopback target for the central probers: %d %s, want 400 naming #/url", resp.StatusCode, body)
	}
	if resp, body := single.do(http.MethodPatch, "/v1/endpoints/"+v.ID, "application/merge-patch+json", `{"regions": null}`); resp.StatusCode != http.StatusBadRequest ||
		!strings.Contains(string(body), "#/url") {
		t.Fatalf("handing a loopback target to the central probers: %d %s, want 400 naming #/url", resp.StatusCode, body)
	}

	set := newHarness(t, func(o *api.Options) { o.Regions = []string{"eu", "us"} })
	both := set.create(`{"name": "c", "url": "https://mcp.example.com/mcp", "regions": ["loc-office", "us"]}`)
	if !slices.Equal(both.Regions, []string{"us", "loc-office"}) {
		t.Fatalf("regions = %v, want [us loc-office]", both.Regions)
	}
	if resp, body := set.do(http.MethodPost, "/v1/endpoints", "", `{"name": "d", "url": "https://mcp.example.com/mcp", "regions": ["loc-Bad"]}`); resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("a malformed location: %d %s, want 400", resp.StatusCode, body)
	}
}
