package api

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/go-chi/chi/v5"

	apiv1 "github.com/mcpmon/mcpmon/pkg/api/v1"
	"github.com/mcpmon/mcpmon/pkg/auth"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/store"
)

// List limits.
const (
	DefaultListLimit = 100
	MaxListLimit     = 1000
)

func incidentView(inc model.Incident) apiv1.IncidentView {
	tr := make([]apiv1.TransitionView, 0, len(inc.Transitions))
	for _, t := range inc.Transitions {
		tr = append(tr, apiv1.TransitionView{At: t.At, From: string(t.From), To: string(t.To), Reason: t.Reason})
	}
	return apiv1.IncidentView{
		ID: inc.ID, EndpointID: inc.EndpointID, State: string(inc.State), OpenedWindow: inc.OpenedWindow,
		OpenedAt: inc.OpenedAt, FirstFailure: inc.FirstFailure, Class: inc.Class, Reason: inc.Reason,
		AckedAt: inc.AckedAt, AckedBy: inc.AckedBy, ResolvedWindow: inc.ResolvedWindow,
		ResolvedAt: inc.ResolvedAt, Transitions: tr, Updates: updateViews(inc), Version: inc.Version,
		Kind: string(cmp.Or(inc.Kind, model.IncidentGlobal)), Severity: model.IncidentSeverity(inc.Kind), Regions: inc.Regions,
	}
}

// deliveryViews is ds as the API shows them; never nil, so an incident
// without notifications says [].
func deliveryViews(ds []model.Delivery) []apiv1.DeliveryView {
	out := make([]apiv1.DeliveryView, 0, len(ds))
	for _, d := range ds {
		out = append(out, apiv1.DeliveryView{
			Kind: d.Kind, Sink: d.Sink, Outcome: string(d.Outcome), Attempts: d.Attempts,
			FirstAttemptAt: d.FirstAttemptAt, LastAttemptAt: d.LastAttemptAt, DeliveredAt: d.DeliveredAt, LastError: d.LastError,
		})
	}
	return out
}

// tenantDeliveries is what a tenant is shown of an incident's deliveries.
// The operator (DefaultTenant, which configures the global sinks) sees
// them all. Another tenant sees those to a sink its endpoint configures
// (own: the endpoint's sink names) that is not an operator sink (a global
// sink shadows an endpoint sink of the same name, so that delivery was the
// operator's); the rest are only counted.
func tenantDeliveries(ds []model.Delivery, tenant string, own, operator map[string]bool) ([]model.Delivery, int) {
	out := []model.Delivery{}
	if tenant == auth.DefaultTenant {
		return append(out, ds...), 0
	}
	hidden := 0
	for _, d := range ds {
		if own[d.Sink] && !operator[d.Sink] {
			out = append(out, d)
			continue
		}
		hidden++
	}
	return out, hidden
}

// endpointSinkNames names the sinks an endpoint's sinks document
// configures (an array of objects with a name; anything else names none).
func endpointSinkNames(raw json.RawMessage) map[string]bool {
	var cfgs []struct {
		Name string `json:"name"`
	}
	names := map[string]bool{}
	if len(raw) == 0 || json.Unmarshal(raw, &cfgs) != nil {
		return names
	}
	for _, c := range cfgs {
		if c.Name != "" {
			names[c.Name] = true
		}
	}
	return names
}

const (
	maxAckBy     = 200
	maxAckReason = 1000
)

func limitParam(r *http.Request) (int, *apiv1.Problem) {
	raw := r.URL.Query().Get("limit")
	if raw == "" {
		return DefaultListLimit, nil
	}
	n, err := strconv.Atoi(raw)
	if err != nil || n < 1 || n > MaxListLimit {
		return 0, invalid(apiv1.FieldError{Pointer: "?limit", Detail: fmt.Sprintf("must be an integer between 1 and %d", MaxListLimit)})
	}
	return n, nil
}

// listIncidents serves one page of the tenant's incidents, newest opening
// window first (ties by ID, descending); the cursor is the (window, ID) of
// the page's last incident, so the store resumes the walk there.
func (s *server) listIncidents(w http.ResponseWriter, r *http.Request) {
	limit, cur, p := pageParams(r, cursorIncidents)
	if p != nil {
		writeProblem(w, r, p)
		return
	}
	q := r.URL.Query()
	f := store.IncidentFilter{Tenant: auth.TenantFrom(r.Context()), EndpointID: q.Get("endpoint"), State: model.IncidentState(q.Get("state")), Limit: limit + 1}
	if cur != nil {
		f.After = &store.IncidentKey{OpenedWindow: cur.At, ID: cur.ID}
	}
	switch f.State {
	case "", model.IncidentOpen, model.IncidentAcknowledged, model.IncidentResolved:
	default:
		writeProblem(w, r, invalid(apiv1.FieldError{Pointer: "?state", Detail: "must be open, acknowledged or resolved"}))
		return
	}
	incs, err := s.store.ListIncidents(r.Context(), f)
	if err != nil {
		writeProblem(w, r, s.storeProblem(r, err, "incidents"))
		return
	}
	incs, next := cutPage(incs, limit, func(last model.Incident) cursor {
		return cursor{Kind: cursorIncidents, At: last.OpenedWindow, ID: last.ID}
	})
	out := make([]apiv1.IncidentView, 0, len(incs))
	for _, inc := range incs {
		out = append(out, incidentView(inc))
	}
	writeJSON(w, http.StatusOK, struct {
		Incidents  []apiv1.IncidentView `json:"incidents"`
		NextCursor string               `json:"nextCursor,omitempty"`
	}{out, next})
}

func (s *server) getIncident(w http.ResponseWriter, r *http.Request) {
	id := chi.URLParam(r, "id")
	inc, p := s.incidentOf(r, id)
	if p != nil {
		writeProblem(w, r, p)
		return
	}
	ds, err := s.store.Deliveries(r.Context(), id)
	if err != nil {
		writeProblem(w, r, s.storeProblem(r, err, "notifications of incident "+id))
		return
	}
	tenant := auth.TenantFrom(r.Context())
	own := map[string]bool{}
	if tenant != auth.DefaultTenant {
		// The endpoint may be gone (its incidents stay): then it names
		// no sink, and every delivery is only counted.
		e, err := s.store.GetEndpoint(r.Context(), inc.EndpointID)
		switch {
		case err == nil && model.TenantOf(e.Tenant) == tenant:
			own = endpointSinkNames(e.Sinks)
		case err != nil && !errors.Is(err, model.ErrNotFound):
			writeProblem(w, r, s.storeProblem(r, err, "endpoint of incident "+id))
			return
		}
	}
	shown, hidden := tenantDeliveries(ds, tenant, own, s.opSinks)
	writeJSON(w, http.StatusOK, apiv1.IncidentDetail{IncidentView: incidentView(inc), Notifications: deliveryViews(shown), OperatorNotifications: hidden})
}

// ackIncident moves an open incident to acknowledged and records the
// transition. Acknowledging an acknowledged incident changes nothing and
// answers 200; a resolved incident answers 409. A write lost to the alerter
// (which compare-and-sets the same record) is retried on fresh state.
func (s *server) ackIncident(w http.ResponseWriter, r *http.Request) {
	id := chi.URLParam(r, "id")
	body, p := s.readBody(w, r, true)
	if p != nil {
		writeProblem(w, r, p)
		return
	}
	var in apiv1.AckInput
	if body != nil {
		if p := decodeStrict(body, &in); p != nil {
			writeProblem(w, r, p)
			return
		}
	}
	in.By, in.Reason = strings.TrimSpace(in.By), strings.TrimSpace(in.Reason)
	var errs []apiv1.FieldError
	if len(in.By) > maxAckBy {
		errs = append(errs, apiv1.FieldError{Pointer: "#/by", Detail: fmt.Sprintf("must be at most %d bytes", maxAckBy)})
	} else if detail := textProblem(in.By); detail != "" {
		errs = append(errs, apiv1.FieldError{Pointer: "#/by", Detail: detail})
	}
	if len(in.Reason) > maxAckReason {
		errs = append(errs, apiv1.FieldError{Pointer: "#/reason", Detail: fmt.Sprintf("must be at most %d bytes", maxAckReason)})
	} else if detail := textProblem(in.Reason); detail != "" {
		errs = append(errs, apiv1.FieldError{Pointer: "#/reason", Detail: detail})
	}
	if len(errs) > 0 {
		writeProblem(w, r, invalid(errs...))
		return
	}

	updated, changed, p := s.changeIncident(r, id, func(inc model.Incident) (model.Incident, bool, *apiv1.Problem) {
		switch inc.State {
		case model.IncidentAcknowledged:
			return inc, false, nil
		case model.IncidentResolved:
			return inc, false, problemf(http.StatusConflict, apiv1.TypeIncidentResolved, "incident %s is already resolved; only an open incident can be acknowledged", id)
		}
		now := s.clock.Now().UTC()
		reason := "acknowledged via API"
		if in.By != "" {
			reason += " by " + in.By
		}
		if in.Reason != "" {
			reason += ": " + in.Reason
		}
		inc.Transitions = append(inc.Transitions, model.Transition{At: now, From: inc.State, To: model.IncidentAcknowledged, Reason: reason})
		inc.State = model.IncidentAcknowledged
		inc.AckedAt = &now
		inc.AckedBy = in.By
		return inc, true, nil
	})
	if p != nil {
		writeProblem(w, r, p)
		return
	}
	if changed {
		s.log.Info("incident acknowledged", "incident", id, "endpoint", updated.EndpointID)
	}
	writeJSON(w, http.StatusOK, incidentView(updated))
}

// changeIncident applies change to the tenant's incident id and writes
// the result compare-and-set on the version it read. The alerter writes
// the same record, so a lost race is retried with change on fresh state
// (up to patchMaxRetries, then 409), and neither writer's change is lost.
// change says whether there is anything to write; unchanged, the incident
// read is returned as is.
func (s *server) changeIncident(r *http.Request, id string, change func(model.Incident) (model.Incident, bool, *apiv1.Problem)) (model.Incident, bool, *apiv1.Problem) {
	return s.changeIncidentBy(r, id, change, s.store.UpdateIncident)
}

// changeIncidentBy is changeIncident writing through save, a
// compare-and-set that answers store.ErrConflict on stale state.
func (s *server) changeIncidentBy(r *http.Request, id string, change func(model.Incident) (model.Incident, bool, *apiv1.Problem),
	save func(context.Context, model.Incident) (model.Incident, error)) (model.Incident, bool, *apiv1.Problem) {
	for attempt := 1; ; attempt++ {
		inc, p := s.incidentOf(r, id)
		if p != nil {
			return inc, false, p
		}
		next, write, p := change(inc)
		if p != nil || !write {
			return inc, false, p
		}
		updated, err := save(r.Context(), next)
		if errors.Is(err, store.ErrConflict) && attempt < patchMaxRetries {
			continue
		}
		if err != nil {
			return inc, false, s.storeProblem(r, err, "incident "+id)
		}
		return updated, true, nil
	}
}
