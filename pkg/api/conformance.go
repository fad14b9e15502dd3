package api

// conformance.go serves GET /v1/endpoints/{id}/conformance: the rule
// catalog of pkg/conformance beside the outcomes the endpoint's latest
// result carries. Tenant-scoped like every endpoint route.

import (
	"errors"
	"net/http"

	"github.com/go-chi/chi/v5"

	apiv1 "github.com/mcpmon/mcpmon/pkg/api/v1"
	"github.com/mcpmon/mcpmon/pkg/conformance"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/msg"
)

func (s *server) getConformance(w http.ResponseWriter, r *http.Request) {
	id := chi.URLParam(r, "id")
	if _, p := s.endpointOf(r, id); p != nil {
		writeProblem(w, r, p)
		return
	}
	latest, err := s.store.LatestResult(r.Context(), id)
	if err != nil && !errors.Is(err, model.ErrNotFound) {
		writeProblem(w, r, s.storeProblem(r, err, "latest result of endpoint "+id))
		return
	}
	writeJSON(w, http.StatusOK, conformanceView(id, latest.Conformance))
}

// conformanceView maps a result's conformance (nil: none yet) onto the
// whole rule catalog.
func conformanceView(id string, c *msg.Conformance) apiv1.ConformanceView {
	v := apiv1.ConformanceView{EndpointID: id, Rules: []apiv1.ConformanceRuleView{}}
	if c != nil {
		v.Era = c.Era
		if !c.CheckedAt.IsZero() {
			at := c.CheckedAt
			v.CheckedAt = &at
		}
		if !c.ActiveAt.IsZero() {
			at := c.ActiveAt
			v.ActiveAt = &at
		}
	}
	for _, rule := range conformance.Rules() {
		rv := apiv1.ConformanceRuleView{ID: rule.ID, Title: rule.Title, Spec: rule.Spec, Eras: rule.Eras, Active: rule.Active, Outcome: msg.ConformanceNA}
		res, ok := c.Rule(rule.ID)
		switch {
		case ok:
			rv.Outcome, rv.Detail = res.Outcome, res.Detail
		case c == nil:
			rv.Detail = "not judged yet"
		case conformance.KnownEra(c.Era):
			rv.Detail = "not a rule of " + c.Era
		default:
			// An era this build has no rules for (an agent's of a newer
			// release): named once, in the view's era, not per rule.
			rv.Detail = "not a rule of the result's era"
		}
		switch rv.Outcome {
		case msg.ConformancePass:
			v.Passed++
		case msg.ConformanceFail:
			v.Failed++
		}
		v.Rules = append(v.Rules, rv)
	}
	return v
}
