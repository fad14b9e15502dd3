package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/mcpmon/mcpmon/pkg/api"
	apiv1 "github.com/mcpmon/mcpmon/pkg/api/v1"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/msg"
	"github.com/mcpmon/mcpmon/pkg/store"
)

// TestCatalogPerRegion: with a region set each region's catalog is its
// own; ?region= picks one, the default is the latest result's region, a
// region with none yet shows the endpoint's own, and a region the endpoint
// is not probed from is a 404 problem.
func TestCatalogPerRegion(t *testing.T) {
	h := newHarness(t, func(o *api.Options) { o.Regions = []string{"eu", "us", "ap"} })
	ctx := t.Context()
	if _, err := h.store.CreateEndpoint(ctx, model.Endpoint{ID: "ep", Schedule: "@every 1m", Regions: []string{"eu", "us"}}); err != nil {
		t.Fatal(err)
	}
	put := func(id, doc string) {
		t.Helper()
		if err := h.store.PutObject(ctx, store.KindCatalog, id, []byte(doc)); err != nil {
			t.Fatal(err)
		}
	}
	put("ep", `{"fingerprint":"old","tools":[{"name":"search"}]}`)
	put(store.ProberObjectID("ep", "us"), `{"fingerprint":"fresh","tools":[{"name":"search"},{"name":"fetch"}]}`)
	latest := msg.ProbeResult{Schema: msg.SchemaVersion, EndpointID: "ep", ProbeRunID: "r", Slot: t0, Region: "us", Status: msg.StatusUp,
		CatalogFingerprint: "fresh", Events: []msg.Event{{Kind: "catalog_changed", Severity: "info", Message: "added fetch"}}}
	if err := h.store.PutLatestResult(ctx, latest); err != nil {
		t.Fatal(err)
	}

	var def apiv1.CatalogView
	h.mustJSON(http.MethodGet, "/v1/endpoints/ep/catalog", "", http.StatusOK, &def)
	if def.Region != "us" || def.Fingerprint != "fresh" || len(def.Tools) != 2 || def.LatestFingerprint != "fresh" || len(def.Drift) != 1 {
		t.Fatalf("default catalog %+v, want the latest result's region (us)", def)
	}
	// eu has stored none yet: the endpoint's own, which its prober compares with.
	var eu apiv1.CatalogView
	h.mustJSON(http.MethodGet, "/v1/endpoints/ep/catalog?region=eu", "", http.StatusOK, &eu)
	if eu.Region != "eu" || eu.Fingerprint != "old" || len(eu.Tools) != 1 || eu.LatestFingerprint != "" || len(eu.Drift) != 0 {
		t.Fatalf("eu catalog %+v, want the endpoint's own, without us's latest result", eu)
	}
	if eu.Regions["eu"] != "old" || eu.Regions["us"] != "fresh" || len(eu.Regions) != 2 {
		t.Fatalf("regions %v, want eu=old us=fresh (ap is not the endpoint's)", eu.Regions)
	}
	put(store.ProberObjectID("ep", "eu"), `{"fingerprint":"stale","tools":[]}`)
	h.mustJSON(http.MethodGet, "/v1/endpoints/ep/catalog?region=eu", "", http.StatusOK, &eu)
	if eu.Fingerprint != "stale" || len(eu.Tools) != 0 || eu.Regions["eu"] != "stale" {
		t.Fatalf("eu catalog %+v, want its own once stored", eu)
	}

	for _, region := range []string{"ap", "mars", ""} {
		resp, b := h.do(http.MethodGet, "/v1/endpoints/ep/catalog?region="+region, "", "")
		if resp.StatusCode != http.StatusNotFound || resp.Header.Get("Content-Type") != apiv1.ProblemContentType || !strings.Contains(string(b), "eu, us") {
			t.Errorf("region %q: %d %s %s, want a 404 problem naming the endpoint's regions", region, resp.StatusCode, resp.Header.Get("Content-Type"), b)
		}
	}
}

// TestCatalogWithoutRegionSet: the endpoint's own catalog, as before
// regions (its probers share it whatever their region label); no region
// can be asked for.
func TestCatalogWithoutRegionSet(t *testing.T) {
	h := newHarness(t)
	ctx := t.Context()
	if _, err := h.store.CreateEndpoint(ctx, model.Endpoint{ID: "ep", Schedule: "@every 1m"}); err != nil {
		t.Fatal(err)
	}
	if err := h.store.PutObject(ctx, store.KindCatalog, "ep", []byte(`{"fingerprint":"own","tools":[]}`)); err != nil {
		t.Fatal(err)
	}
	res := msg.ProbeResult{Schema: msg.SchemaVersion, EndpointID: "ep", ProbeRunID: "r", Slot: t0, Region: "local", Status: msg.StatusUp, CatalogFingerprint: "own"}
	if err := h.store.PutLatestResult(ctx, res); err != nil {
		t.Fatal(err)
	}
	var c apiv1.CatalogView
	h.mustJSON(http.MethodGet, "/v1/endpoints/ep/catalog", "", http.StatusOK, &c)
	if c.Region != "" || c.Fingerprint != "own" || c.LatestFingerprint != "own" || c.Regions != nil {
		t.Fatalf("catalog %+v, want the endpoint's own, with the latest result's fingerprint", c)
	}
	if resp, b := h.do(http.MethodGet, "/v1/endpoints/ep/catalog?region=local", "", ""); resp.StatusCode != http.StatusNotFound || !strings.Contains(string(b), "no region set") {
		t.Fatalf("a region without a region set: %d %s, want 404", resp.StatusCode, b)
	}
}
