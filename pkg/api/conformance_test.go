package api_test

import (
	"net/http"
	"testing"
	"time"

	apiv1 "github.com/mcpmon/mcpmon/pkg/api/v1"
	"github.com/mcpmon/mcpmon/pkg/conformance"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/msg"
)

// TestConformanceShowsEveryRuleWithTheLatestOutcome: the whole catalog,
// the era's rules with the latest result's outcomes and the rest n/a;
// before any result every rule is n/a; another tenant's endpoint is the
// same 404 as a missing one.
func TestConformanceShowsEveryRuleWithTheLatestOutcome(t *testing.T) {
	h := newHarness(t)
	ctx := t.Context()
	for _, ep := range []model.Endpoint{{ID: "ep", Schedule: "@every 1m"}, {ID: "theirs", Tenant: "other", Schedule: "@every 1m"}} {
		if _, err := h.store.CreateEndpoint(ctx, ep); err != nil {
			t.Fatal(err)
		}
	}
	var before apiv1.ConformanceView
	h.mustJSON(http.MethodGet, "/v1/endpoints/ep/conformance", "", http.StatusOK, &before)
	if len(before.Rules) != len(conformance.Rules()) || before.Era != "" || before.Passed+before.Failed != 0 {
		t.Fatalf("before any result: %+v", before)
	}
	slot := time.Date(2026, 11, 29, 13, 0, 0, 0, time.UTC)
	res := msg.ProbeResult{Schema: msg.SchemaVersion, EndpointID: "ep", ProbeRunID: "r", Slot: slot, Status: msg.StatusUp, Class: "ok",
		Conformance: &msg.Conformance{Era: conformance.Era20251125, CheckedAt: slot, ActiveAt: slot, Rules: []msg.RuleResult{
			{ID: conformance.RuleInitializeSchema, Outcome: msg.ConformancePass},
			{ID: conformance.RuleBatchRefused, Outcome: msg.ConformanceFail, Detail: "a batch was answered HTTP 200 with a batch of responses"},
		}}}
	if err := h.store.PutLatestResult(ctx, res); err != nil {
		t.Fatal(err)
	}
	var v apiv1.ConformanceView
	h.mustJSON(http.MethodGet, "/v1/endpoints/ep/conformance", "", http.StatusOK, &v)
	if v.Era != conformance.Era20251125 || v.Passed != 1 || v.Failed != 1 || v.CheckedAt == nil || !v.CheckedAt.Equal(slot) {
		t.Fatalf("view %+v", v)
	}
	byID := map[string]apiv1.ConformanceRuleView{}
	for _, r := range v.Rules {
		byID[r.ID] = r
	}
	if r := byID[conformance.RuleBatchRefused]; r.Outcome != msg.ConformanceFail || r.Detail == "" || !r.Active || r.Spec == "" {
		t.Errorf("batch rule %+v", r)
	}
	if r := byID[conformance.RuleDiscoverSchema]; r.Outcome != msg.ConformanceNA || r.Detail != "not a rule of 2025-11-25" {
		t.Errorf("a 2026-07-28 rule %+v", r)
	}
	for _, id := range []string{"theirs", "missing"} {
		if resp, b := h.do(http.MethodGet, "/v1/endpoints/"+id+"/conformance", "", ""); resp.StatusCode != http.StatusNotFound {
			t.Errorf("%s: %d %s, want 404", id, resp.StatusCode, b)
		}
	}
}
