// GET /v1/endpoints/{id}/events: one page of an endpoint's change events
// (store.Events), newest first, with ?kind= to keep one kind, ?limit= and
// ?cursor= as on every list. Events are reached through their endpoint, so
// another tenant's endpoint is a 404 like a missing one.

package api

import (
	"context"
	"encoding/hex"
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"

	apiv1 "github.com/mcpmon/mcpmon/pkg/api/v1"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/store"
)

// cursorEvents binds a cursor to the event list; its ID is the ID of the
// page's last event (IDs order the history, so it is the whole cursor).
const cursorEvents = "events"

// EventLister is the part of the store the event list reads.
type EventLister interface {
	ListEvents(ctx context.Context, endpointID string, f store.EventFilter) ([]model.ChangeEvent, error)
}

func eventView(e model.ChangeEvent) apiv1.EventView {
	v := apiv1.EventView{
		ID: e.ID, EndpointID: e.EndpointID, Kind: e.Kind, Fingerprint: e.Fingerprint,
		ObservedAt: e.ObservedAt, RecordedAt: e.RecordedAt, Region: e.Region, ProbeRunID: e.ProbeRunID,
		Source: e.Source, Severity: e.Severity, Message: e.Message, Before: e.Before, After: e.After,
		Diff: e.Diff, Details: e.Details,
	}
	if sup := e.Suppressed; sup != nil {
		v.Suppressed = &apiv1.EventSuppression{Count: sup.Count, Since: sup.Since, Last: sup.Last}
	}
	return v
}

func (s *server) listEvents(w http.ResponseWriter, r *http.Request) {
	id := chi.URLParam(r, "id")
	limit, cur, p := pageParams(r, cursorEvents)
	if p != nil {
		writeProblem(w, r, p)
		return
	}
	kind := r.URL.Query().Get("kind")
	if kind != "" && !model.IsEventKind(kind) {
		writeProblem(w, r, invalid(apiv1.FieldError{Pointer: "?kind", Detail: "must be one of " + strings.Join(model.EventKinds(), ", ")}))
		return
	}
	if _, p := s.endpointOf(r, id); p != nil {
		writeProblem(w, r, p)
		return
	}
	f := store.EventFilter{Kind: kind, Limit: limit + 1}
	if cur != nil {
		if _, err := hex.DecodeString(cur.ID); err != nil || len(cur.ID) != 32 {
			writeProblem(w, r, invalid(apiv1.FieldError{Pointer: "?cursor", Detail: "is not a cursor of this list; pass nextCursor from the previous page unchanged, or omit it to start over"}))
			return
		}
		f.Before = cur.ID
	}
	var evs []model.ChangeEvent
	if el, ok := s.store.(EventLister); ok {
		var err error
		if evs, err = el.ListEvents(r.Context(), id, f); err != nil {
			writeProblem(w, r, s.storeProblem(r, err, "events of endpoint "+id))
			return
		}
	}
	evs, next := cutPage(evs, limit, func(e model.ChangeEvent) cursor { return cursor{Kind: cursorEvents, ID: e.ID} })
	out := make([]apiv1.EventView, 0, len(evs))
	for _, e := range evs {
		out = append(out, eventView(e))
	}
	writeJSON(w, http.StatusOK, struct {
		Events     []apiv1.EventView `json:"events"`
		NextCursor string            `json:"nextCursor,omitempty"`
	}{out, next})
}
