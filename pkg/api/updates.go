package api

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"

	apiv1 "github.com/mcpmon/mcpmon/pkg/api/v1"
	"github.com/mcpmon/mcpmon/pkg/auth"
	"github.com/mcpmon/mcpmon/pkg/model"
)

// Incident updates: the owner's status and message, appended to the
// incident record by model.Incident.AddUpdate and shown newest first here
// and on the endpoint's public page (pkg/status).

// updateViews is inc's updates as the API shows them, newest first; nil
// (the member absent) when there are none.
func updateViews(inc model.Incident) []apiv1.UpdateView {
	if len(inc.Updates) == 0 {
		return nil
	}
	out := make([]apiv1.UpdateView, 0, len(inc.Updates))
	for _, u := range inc.UpdatesNewestFirst() {
		out = append(out, apiv1.UpdateView{At: u.At, Status: string(u.Status), Message: u.Message, By: u.By})
	}
	return out
}

// postIncidentUpdate appends an update to one of the tenant's incidents,
// in any state (a resolved incident may still get its post-mortem), and
// answers 201 with the incident. It is written through changeIncident,
// like an acknowledgement, so an update racing the alerter's write is
// retried on fresh state; the cap is checked on that fresh state too, so
// two racing updates cannot both take the last place.
func (s *server) postIncidentUpdate(w http.ResponseWriter, r *http.Request) {
	id := chi.URLParam(r, "id")
	body, p := s.readBody(w, r, false)
	if p != nil {
		writeProblem(w, r, p)
		return
	}
	var in apiv1.UpdateInput
	if p := decodeStrict(body, &in); p != nil {
		writeProblem(w, r, p)
		return
	}
	u := model.IncidentUpdate{Status: model.UpdateStatus(strings.TrimSpace(in.Status)), Message: strings.TrimSpace(in.Message), Notify: in.Notify}
	if p, ok := auth.FromContext(r.Context()); ok {
		u.By = p.Name
		if u.By == "" {
			u.By = p.KeyID
		}
	}
	var errs []apiv1.FieldError
	for _, fe := range u.Problems() {
		errs = append(errs, apiv1.FieldError{Pointer: "#/" + fe.Field, Detail: fe.Detail})
	}
	if len(u.Message) <= model.MaxUpdateMessage {
		if detail := textProblem(u.Message); detail != "" {
			errs = append(errs, apiv1.FieldError{Pointer: "#/message", Detail: detail})
		}
	}
	if len(errs) > 0 {
		writeProblem(w, r, invalid(errs...))
		return
	}

	save := s.store.UpdateIncident
	if u.Notify {
		save = s.saveNoticed
	}
	updated, _, p := s.changeIncidentBy(r, id, func(inc model.Incident) (model.Incident, bool, *apiv1.Problem) {
		u.At = s.clock.Now().UTC()
		next, err := inc.AddUpdate(u)
		switch {
		case errors.Is(err, model.ErrTooManyUpdates):
			return inc, false, problemf(http.StatusConflict, apiv1.TypeTooManyUpdates,
				"incident %s already keeps %d updates, the most an incident keeps", id, model.MaxIncidentUpdates)
		case err != nil: // the rules were checked above: a bug, not the client's
			return inc, false, s.storeProblem(r, err, "incident "+id)
		}
		return next, true, nil
	}, save)
	if p != nil {
		writeProblem(w, r, p)
		return
	}
	s.log.Info("incident update posted", "incident", id, "endpoint", updated.EndpointID, "status", string(u.Status), "updates", len(updated.Updates), "notify", u.Notify)
	writeJSON(w, http.StatusCreated, incidentView(updated))
}

// saveNoticed writes inc, whose last update asks to be notified, together
// with that update's notice on the endpoint's tracker (one SaveTracker,
// compare-and-set on both): once it returns the notice is as durable as
// the update, and the store lists the outbox as pending for the alerter.
// A stale tracker or incident is store.ErrConflict, which changeIncidentBy
// retries on fresh state.
func (s *server) saveNoticed(ctx context.Context, inc model.Incident) (model.Incident, error) {
	t, err := s.store.GetTracker(ctx, inc.EndpointID)
	if err != nil {
		return inc, err
	}
	t.EndpointID = inc.EndpointID
	t.QueueUpdateNotice(inc.ID, len(inc.Updates))
	if err := s.store.SaveTracker(ctx, t, inc); err != nil {
		return inc, err
	}
	inc.Version++
	return inc, nil
}
