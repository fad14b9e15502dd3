package api

import (
	"cmp"
	"encoding/json"
	"errors"
	"net/http"
	"slices"

	"github.com/go-chi/chi/v5"

	apiv1 "github.com/mcpmon/mcpmon/pkg/api/v1"
	"github.com/mcpmon/mcpmon/pkg/auth"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/store"
	"github.com/mcpmon/mcpmon/pkg/subscribe"
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
		v := apiv1.SubscriberView{ID: sub.ID, Kind: string(sub.KindOrEmail()), Address: sub.Shown(), State: string(sub.State), CreatedAt: sub.CreatedAt}
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

// createWebhookSubscriber registers a webhook subscriber of the caller's
// page. Only the page's tenant makes one, so it is confirmed at once (the
// owner is the subscriber); its URL passes the SSRF guard here and on
// every send, and it counts against the page's subscriber cap in the
// write's own transaction.
func (s *server) createWebhookSubscriber(w http.ResponseWriter, r *http.Request) {
	id := chi.URLParam(r, "id")
	if _, prob := s.loadStatusPage(r, id); prob != nil {
		writeProblem(w, r, prob)
		return
	}
	body, prob := s.readBody(w, r, false)
	if prob != nil {
		writeProblem(w, r, prob)
		return
	}
	var in apiv1.WebhookSubscriberInput
	if prob := decodeStrict(body, &in); prob != nil {
		writeProblem(w, r, prob)
		return
	}
	var errs []apiv1.FieldError
	if err := model.CheckWebhookURL(in.WebhookURL, s.httpHooks); err != nil {
		errs = append(errs, apiv1.FieldError{Pointer: "#/webhookUrl", Detail: err.Error()})
	} else if s.validURL != nil {
		if err := s.validURL(in.WebhookURL); err != nil {
			errs = append(errs, apiv1.FieldError{Pointer: "#/webhookUrl", Detail: err.Error()})
		}
	}
	if err := model.CheckWebhookSecret(in.Secret); err != nil {
		errs = append(errs, apiv1.FieldError{Pointer: "#/secret", Detail: err.Error()})
	}
	if len(errs) > 0 {
		writeProblem(w, r, invalid(errs...))
		return
	}
	now := s.clock.Now().UTC()
	sub := subscribe.SealWebhook(s.subSeal, model.Subscriber{ID: s.newID(), Page: id, State: model.SubscriberConfirmed,
		CreatedAt: now, ConfirmedAt: now}, in.WebhookURL, in.Secret)
	doc, err := json.Marshal(sub)
	if err != nil {
		writeProblem(w, r, problemf(http.StatusInternalServerError, "", "encoding subscriber failed"))
		return
	}
	err = s.store.PutObjectWithin(r.Context(), store.KindSubscriber, sub.ID, doc, s.maxSubs)
	if isQuota(err) {
		writeProblem(w, r, quotaProblem("subscribers of a status page", "--max-subscribers-per-page", s.maxSubs))
		return
	}
	if err != nil {
		writeProblem(w, r, s.storeProblem(r, err, "subscriber of status page "+id))
		return
	}
	w.Header().Set("Location", "/v1/status-pages/"+id+"/subscribers/"+sub.ID)
	at := sub.ConfirmedAt
	writeJSON(w, http.StatusCreated, apiv1.SubscriberView{ID: sub.ID, Kind: string(sub.Kind), Address: sub.Shown(),
		State: string(sub.State), CreatedAt: sub.CreatedAt, ConfirmedAt: &at})
}

// deleteSubscriber removes a subscriber (of any kind) of the caller's
// page; a subscriber of another page is the same 404 as a missing one.
func (s *server) deleteSubscriber(w http.ResponseWriter, r *http.Request) {
	id, subID := chi.URLParam(r, "id"), chi.URLParam(r, "subscriberId")
	if _, prob := s.loadStatusPage(r, id); prob != nil {
		writeProblem(w, r, prob)
		return
	}
	doc, err := s.store.GetObjectOf(r.Context(), store.KindSubscriber, id, subID)
	if err == nil {
		if sub, derr := model.DecodeSubscriber(doc); derr != nil || sub.Page != id {
			err = model.ErrNotFound
		}
	}
	if err == nil {
		err = s.store.DeleteObject(r.Context(), store.KindSubscriber, subID)
	}
	if err != nil {
		if errors.Is(err, model.ErrNotFound) {
			writeProblem(w, r, problemf(http.StatusNotFound, "", "subscriber %s not found", subID))
			return
		}
		writeProblem(w, r, s.storeProblem(r, err, "subscriber "+subID))
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
