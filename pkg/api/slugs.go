// Slugs name an endpoint's public status page, JSON and badge
// (/status/{slug}, /badge/{slug}.svg, served by pkg/status). The public
// URLs carry no tenant, so a public endpoint's slug is unique across the
// deployment, not only within its tenant: another tenant's public slug is
// a 409 like one's own (which tells the asker only what the public URL
// already does). A private endpoint's slug reserves nothing.

package api

import (
	"net/http"
	"regexp"

	apiv1 "github.com/mcpmon/mcpmon/pkg/api/v1"
	"github.com/mcpmon/mcpmon/pkg/model"
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

// slugTaken answers 409 when e is public and another public endpoint, of
// any tenant, holds its slug. Only public slugs are reserved: a private
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
	return nil
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
