package api

import (
	"cmp"
	"net/http"
	"slices"

	"github.com/go-chi/chi/v5"

	apiv1 "github.com/mcpmon/mcpmon/pkg/api/v1"
	"github.com/mcpmon/mcpmon/pkg/auth"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/store"
)

// listSubscribers shows the counts and masked addresses of a page's
// subscribers, read from the store's per-page index. Another tenant's
// page is the same 404 as a missing one.
func (s *server) listSubscribers(w http.ResponseWriter, r *http.Request) {
	id := chi.URLParam(r, "id")
	if _, err := s.store.GetObjectOf(r.Context(), store.KindStatusPage, auth.TenantFrom(r.Context()), id); err != nil {
		writeProblem(w, r, s.storeProblem(r, err, "status page "+id))
		return
	}
	docs, err := s.store.ListObjectsOf(r.Context(), store.KindSubscriber, id)
	if err != nil {
		writeProblem(w, r, s.storeProblem(r, err, "subscribers of status page "+id))
		return
	}
	out := apiv1.SubscribersView{Items: make([]apiv1.SubscriberView, 0, len(docs))}
	for _, doc := range docs {
		sub, err := model.DecodeSubscriber(doc)
		if err != nil || sub.Page != id {
			continue
		}
		v := apiv1.SubscriberView{ID: sub.ID, Address: cmp.Or(sub.Masked, "***"), State: string(sub.State), CreatedAt: sub.CreatedAt}
		if sub.State == model.SubscriberConfirmed {
			out.Confirmed++
			at := sub.ConfirmedAt
			v.ConfirmedAt = &at
		} else {
			out.Pending++
		}
		out.Items = append(out.Items, v)
	}
	slices.SortFunc(out.Items, func(a, b apiv1.SubscriberView) int { return cmp.Compare(a.ID, b.ID) })
	writeJSON(w, http.StatusOK, out)
}
