package api

import (
	"encoding/json"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/go-chi/chi/v5"

	apiv1 "github.com/mcpmon/mcpmon/pkg/api/v1"
	"github.com/mcpmon/mcpmon/pkg/auth"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/store"
	"github.com/mcpmon/mcpmon/pkg/subscribe"
)

// Status pages: a tenant's public pages (model.StatusPage), stored as the
// tenant kind store.KindStatusPage and served to the public by pkg/status.
// Every read and write goes through the store's tenant index, so another
// tenant's page is the same 404 as a missing one; the page's slug and host
// are public names, checked across every tenant (slugs.go).

func statusPageView(p model.StatusPage) apiv1.StatusPageView {
	v := apiv1.StatusPageView{
		ID: p.ID, Tenant: model.TenantOf(p.Tenant), Slug: p.Slug, Title: p.Title, Description: p.Description,
		LogoURL: p.LogoURL, Host: p.Host, HostVerification: hostVerificationView(p), CreatedAt: p.CreatedAt, UpdatedAt: p.UpdatedAt,
	}
	for _, g := range p.Groups {
		v.Groups = append(v.Groups, apiv1.PageGroupInput{Name: g.Name, Selector: g.Selector})
	}
	return v
}

// toStatusPage validates in and builds the page it describes (without ID,
// tenant or times). The rules of the stored page are the model's
// (model.StatusPage.Problems); the checks here add the slug's form, the
// display-text rules and the label syntax, the same as an endpoint's, and
// report every problem in field order.
func toStatusPage(in apiv1.StatusPageInput) (model.StatusPage, []apiv1.FieldError) {
	p := model.StatusPage{
		Slug: in.Slug, Title: strings.TrimSpace(in.Title), Description: strings.TrimSpace(in.Description),
		LogoURL: strings.TrimSpace(in.LogoURL), Host: strings.TrimSpace(in.Host),
	}
	for _, g := range in.Groups {
		p.Groups = append(p.Groups, model.PageGroup{Name: strings.TrimSpace(g.Name), Selector: g.Selector})
	}
	var errs []apiv1.FieldError
	bad := func(ptr, detail string) { errs = append(errs, apiv1.FieldError{Pointer: ptr, Detail: detail}) }
	ruled := map[string][]string{}
	for _, fe := range p.Problems() {
		ruled[fe.Field] = append(ruled[fe.Field], fe.Detail)
	}
	// field reports the model's problems of field, else the text check's.
	field := func(name, value string, text func(string) string) {
		if details, ok := ruled[name]; ok {
			for _, d := range details {
				bad("#/"+name, d)
			}
		} else if text != nil {
			if detail := text(value); detail != "" {
				bad("#/"+name, detail)
			}
		}
	}

	if p.Slug == "" {
		bad("#/slug", "is required")
	} else if detail := slugProblem(p.Slug, true); detail != "" {
		bad("#/slug", detail)
	}
	field("title", p.Title, textProblem)
	field("description", p.Description, multilineTextProblem)
	field("logoUrl", p.LogoURL, nil)
	field("host", p.Host, nil)
	field("groups", "", nil)
	if _, tooMany := ruled["groups"]; tooMany {
		return p, errs
	}
	for i, g := range p.Groups {
		at := "groups/" + strconv.Itoa(i)
		field(at+"/name", g.Name, textProblem)
		if _, ok := ruled[at+"/selector"]; ok {
			field(at+"/selector", "", nil)
			continue
		}
		for _, k := range slices.Sorted(maps.Keys(g.Selector)) {
			if detail := labelProblem(k, g.Selector[k]); detail != "" {
				bad("#/"+at+"/selector/"+pointerEscape(k), detail)
			}
		}
	}
	return p, errs
}

// listStatusPages serves every page of the tenant, in slug order, from
// the store's tenant index: at most --max-status-pages-per-tenant, so the
// list needs no paging.
func (s *server) listStatusPages(w http.ResponseWriter, r *http.Request) {
	docs, err := s.store.ListObjectsOf(r.Context(), store.KindStatusPage, auth.TenantFrom(r.Context()))
	if err != nil {
		writeProblem(w, r, s.storeProblem(r, err, "status pages"))
		return
	}
	out := make([]apiv1.StatusPageView, 0, len(docs))
	for id, doc := range docs {
		p, err := model.DecodeStatusPage(doc)
		if err != nil {
			s.log.Error("skipping undecodable status page", "id", id, "err", err)
			continue
		}
		out = append(out, statusPageView(p))
	}
	slices.SortFunc(out, func(a, b apiv1.StatusPageView) int { return strings.Compare(a.Slug+"\x00"+a.ID, b.Slug+"\x00"+b.ID) })
	writeJSON(w, http.StatusOK, apiv1.StatusPageList{Items: out})
}

func (s *server) getStatusPage(w http.ResponseWriter, r *http.Request) {
	p, prob := s.loadStatusPage(r, chi.URLParam(r, "id"))
	if prob != nil {
		writeProblem(w, r, prob)
		return
	}
	writeJSON(w, http.StatusOK, statusPageView(p))
}

// loadStatusPage reads page id if it is the request's tenant's; another
// tenant's is the same 404 as a missing one, decided from the store's
// tenant index before the document is read.
func (s *server) loadStatusPage(r *http.Request, id string) (model.StatusPage, *apiv1.Problem) {
	doc, err := s.store.GetObjectOf(r.Context(), store.KindStatusPage, auth.TenantFrom(r.Context()), id)
	if err != nil {
		return model.StatusPage{}, s.storeProblem(r, err, "status page "+id)
	}
	p, err := model.DecodeStatusPage(doc)
	if err != nil {
		s.log.Error("undecodable status page", "id", id, "err", err)
		return model.StatusPage{}, problemf(http.StatusInternalServerError, "", "status page %s is unreadable", id)
	}
	return p, nil
}

func (s *server) createStatusPage(w http.ResponseWriter, r *http.Request) {
	p, prob := s.readStatusPage(w, r)
	if prob != nil {
		writeProblem(w, r, prob)
		return
	}
	p = p.WithHostProof(model.StatusPage{}, model.NewHostToken()) // a host set starts pending
	p.ID = s.newID()
	p.Tenant = auth.TenantFrom(r.Context())
	p.CreatedAt = s.clock.Now().UTC()
	p.UpdatedAt = p.CreatedAt
	if prob := s.saveStatusPage(r, p, true); prob != nil {
		writeProblem(w, r, prob)
		return
	}
	w.Header().Set("Location", "/v1/status-pages/"+p.ID)
	writeJSON(w, http.StatusCreated, statusPageView(p))
}

// putStatusPage replaces an existing page whole (IDs are assigned by
// POST); its ID, tenant and creation time stay.
func (s *server) putStatusPage(w http.ResponseWriter, r *http.Request) {
	id := chi.URLParam(r, "id")
	p, prob := s.readStatusPage(w, r)
	if prob != nil {
		writeProblem(w, r, prob)
		return
	}
	old, prob := s.loadStatusPage(r, id)
	if prob != nil {
		writeProblem(w, r, prob)
		return
	}
	p = p.WithHostProof(old, model.NewHostToken()) // a host changed starts pending again
	p.ID, p.Tenant, p.CreatedAt = id, old.Tenant, old.CreatedAt
	p.UpdatedAt = s.clock.Now().UTC()
	if prob := s.saveStatusPage(r, p, false); prob != nil {
		writeProblem(w, r, prob)
		return
	}
	writeJSON(w, http.StatusOK, statusPageView(p))
}

// readStatusPage reads a page's body, at most model.MaxStatusPageBytes of
// it (413 beyond), before anything decodes it, and validates it.
func (s *server) readStatusPage(w http.ResponseWriter, r *http.Request) (model.StatusPage, *apiv1.Problem) {
	r.Body = http.MaxBytesReader(w, r.Body, model.MaxStatusPageBytes)
	body, p := s.readBody(w, r, false)
	if p != nil {
		return model.StatusPage{}, p
	}
	var in apiv1.StatusPageInput
	if p := decodeStrict(body, &in); p != nil {
		return model.StatusPage{}, p
	}
	page, errs := toStatusPage(in)
	errs = append(errs, s.ownHostTaken(page)...)
	if len(errs) > 0 {
		return page, invalid(errs...)
	}
	return page, nil
}

// saveStatusPage stores p once its slug and host are free (slugs.go); a
// new page only while its tenant holds fewer than the quota, counted by
// the store in the write's own transaction.
func (s *server) saveStatusPage(r *http.Request, p model.StatusPage, create bool) *apiv1.Problem {
	if prob := s.pageNamesTaken(r, p); prob != nil {
		return prob
	}
	doc, err := json.Marshal(p)
	if err != nil {
		s.log.Error("encode status page", "id", p.ID, "err", err)
		return problemf(http.StatusInternalServerError, "", "encoding status page failed")
	}
	if len(doc) > model.MaxStatusPageBytes {
		return problemf(http.StatusRequestEntityTooLarge, "", "a status page may be at most %d bytes stored", model.MaxStatusPageBytes)
	}
	limit := 0
	if create {
		limit = s.quotas.MaxStatusPages
	}
	err = s.store.PutObjectWithin(r.Context(), store.KindStatusPage, p.ID, doc, limit)
	if isQuota(err) {
		return quotaProblem("status pages", "--max-status-pages-per-tenant", s.quotas.MaxStatusPages)
	}
	if err != nil {
		return s.storeProblem(r, err, "status page "+p.ID)
	}
	return nil
}

func (s *server) deleteStatusPage(w http.ResponseWriter, r *http.Request) {
	id := chi.URLParam(r, "id")
	if _, p := s.loadStatusPage(r, id); p != nil {
		writeProblem(w, r, p)
		return
	}
	if err := s.store.DeleteObject(r.Context(), store.KindStatusPage, id); err != nil {
		writeProblem(w, r, s.storeProblem(r, err, "status page "+id))
		return
	}
	// The page is gone, so the deletion succeeded: subscribers left by an
	// error here are orphans that subscribe.Prune deletes.
	if _, err := subscribe.DeletePageSubscribers(r.Context(), s.store, id); err != nil {
		s.log.Warn("status page deleted; its subscribers are left to the prune", "page", id, "err", err)
	}
	w.WriteHeader(http.StatusNoContent)
}
