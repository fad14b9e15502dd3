// Slugs name an endpoint's public status page, JSON and badge
// (/status/{slug}, /badge/{slug}.svg) and a tenant's status page
// (/status/{slug}), all served by pkg/status. The public URLs carry no
// tenant, so public endpoints and status pages share one namespace across
// the deployment, not only within a tenant: another tenant's public slug
// is a 409 like one's own (which tells the asker only what the public URL
// already does). A private endpoint's slug reserves nothing. A status
// page's custom host is a public name in the same way: one page per host.

package api

import (
	"net/http"
	"regexp"
	"slices"

	apiv1 "github.com/mcpmon/mcpmon/pkg/api/v1"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/store"
)

// Slug bounds: lowercase letters, digits and inner hyphens, 3 to 63.
const (
	MinSlugLen = 3
	MaxSlugLen = 63
)

var slugRE = regexp.MustCompile(`^[a-z0-9][a-z0-9-]*[a-z0-9]$`)

// ValidSlug reports whether s is a well-formed slug.
func ValidSlug(s string) bool {
	return len(s) >= MinSlugLen && len(s) <= MaxSlugLen && slugRE.MatchString(s)
}

// slugProblem says why slug (with public) is not acceptable, or "".
func slugProblem(slug string, public bool) string {
	switch {
	case slug == "" && public:
		return "is required when public is true"
	case slug == "":
		return ""
	case !ValidSlug(slug):
		return "must be 3 to 63 lowercase letters, digits and hyphens, starting and ending with a letter or digit"
	}
	return ""
}

// slugTaken answers 409 when e is public and another public endpoint or a
// status page, of any tenant, holds its slug. Only public slugs are reserved: a private
// endpoint's slug serves nothing, so reserving it would let any tenant
// learn (by a 409) and squat another's names before they are published.
// Making an endpoint public is when its slug is checked.
//
// The check reads the registry before the write, not inside it: two
// concurrent writes of one new slug can both pass. pkg/status then serves
// the slug's oldest holder (a deterministic choice), so the race costs the
// second owner a page that does not show, never a page showing the wrong
// endpoint's data to the first.
func (s *server) slugTaken(r *http.Request, e model.Endpoint) *apiv1.Problem {
	if e.Slug == "" || !e.Public {
		return nil
	}
	all, err := s.store.ListEndpoints(r.Context())
	if err != nil {
		return s.storeProblem(r, err, "endpoints (slug check)")
	}
	if slugHeld(all, e) {
		p := problemf(http.StatusConflict, apiv1.TypeInvalidRequest, "slug %q is already in use", e.Slug)
		p.Errors = []apiv1.FieldError{{Pointer: "#/slug", Detail: "is already in use by a public status page; slugs of public endpoints are unique across the deployment"}}
		return p
	}
	pages, p := s.allStatusPages(r)
	if p != nil {
		return p
	}
	if slices.ContainsFunc(pages, func(o model.StatusPage) bool { return o.Slug == e.Slug }) {
		p := problemf(http.StatusConflict, apiv1.TypeInvalidRequest, "slug %q is already in use", e.Slug)
		p.Errors = []apiv1.FieldError{{Pointer: "#/slug", Detail: "is already in use by a status page; public endpoints and status pages share one slug namespace across the deployment"}}
		return p
	}
	return nil
}

// pageNamesTaken answers 409 when p's slug is held by another status page
// or a public endpoint, or p's host by another status page, of any
// tenant, with a field error for each. It has slugTaken's race (read
// before write) and the same outcome: pkg/status serves a name's oldest
// holder.
func (s *server) pageNamesTaken(r *http.Request, p model.StatusPage) *apiv1.Problem {
	pages, prob := s.allStatusPages(r)
	if prob != nil {
		return prob
	}
	endpoints, err := s.store.ListEndpoints(r.Context())
	if err != nil {
		return s.storeProblem(r, err, "endpoints (slug check)")
	}
	errs := pageNameConflicts(p, pages, endpoints, s.hostProof)
	if len(errs) == 0 {
		return nil
	}
	prob = problemf(http.StatusConflict, apiv1.TypeInvalidRequest, "the status page's public names are already in use; see errors")
	prob.Errors = errs
	return prob
}

// pageNameConflicts is the decision of pageNamesTaken: the field errors
// for p's slug held by another page (by ID) or a public endpoint, and for
// p's host held by another page. A page holds its host only while it may
// serve it (model.StatusPage.ServesHost with requireProof): a pending
// claim holds nothing, so a tenant who claims a name first cannot keep its
// owner from claiming and proving it.
func pageNameConflicts(p model.StatusPage, pages []model.StatusPage, endpoints []model.Endpoint, requireProof bool) []apiv1.FieldError {
	var errs []apiv1.FieldError
	switch {
	case slices.ContainsFunc(pages, func(o model.StatusPage) bool { return o.ID != p.ID && o.Slug == p.Slug }):
		errs = append(errs, apiv1.FieldError{Pointer: "#/slug", Detail: "is already in use by another status page; status page slugs are unique across the deployment"})
	case slices.ContainsFunc(endpoints, func(e model.Endpoint) bool { return e.Public && e.Slug == p.Slug }):
		errs = append(errs, apiv1.FieldError{Pointer: "#/slug", Detail: "is already in use by a public endpoint; public endpoints and status pages share one slug namespace across the deployment"})
	}
	if p.Host != "" && slices.ContainsFunc(pages, func(o model.StatusPage) bool {
		return o.ID != p.ID && o.Host == p.Host && o.ServesHost(requireProof)
	}) {
		errs = append(errs, apiv1.FieldError{Pointer: "#/host", Detail: "is already served by another status page"})
	}
	return errs
}

// allStatusPages reads every tenant's status pages (at most the
// per-tenant quota each) for the name checks; an undecodable one is
// logged and skipped.
func (s *server) allStatusPages(r *http.Request) ([]model.StatusPage, *apiv1.Problem) {
	docs, err := s.store.ListObjects(r.Context(), store.KindStatusPage)
	if err != nil {
		return nil, s.storeProblem(r, err, "status pages (slug check)")
	}
	out := make([]model.StatusPage, 0, len(docs))
	for id, doc := range docs {
		p, err := model.DecodeStatusPage(doc)
		if err != nil {
			s.log.Error("skipping undecodable status page", "id", id, "err", err)
			continue
		}
		if p.ID == "" {
			p.ID = id
		}
		out = append(out, p)
	}
	return out, nil
}

// slugHeld reports whether another public endpoint than e holds e's slug.
func slugHeld(all []model.Endpoint, e model.Endpoint) bool {
	for _, o := range all {
		if o.Public && o.Slug == e.Slug && o.ID != e.ID {
			return true
		}
	}
	return false
}
