// Slugs name an endpoint's public status page, JSON and badge
// (/status/{slug}, /badge/{slug}.svg, served by pkg/status). The public
// URLs carry no tenant, so a slug is unique across the deployment, not
// only within its tenant: another tenant's slug is a 409 like one's own
// (which tells the asker only that the name is in use, as any public URL
// already does).

package api

import (
	"net/http"
	"regexp"

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

// slugTaken answers 409 when another endpoint of any tenant holds e's
// slug. The check reads the registry before the write, not inside it: two
// concurrent writes of one new slug can both pass. pkg/status then serves
// the slug's oldest holder (a deterministic choice), so the race costs the
// second owner a page that does not show, never a page showing the wrong
// endpoint's data to the first.
func (s *server) slugTaken(r *http.Request, e store.Endpoint) *Problem {
	if e.Slug == "" {
		return nil
	}
	all, err := s.store.ListEndpoints(r.Context())
	if err != nil {
		return s.storeProblem(r, err, "endpoints (slug check)")
	}
	for _, o := range all {
		if o.Slug == e.Slug && o.ID != e.ID {
			p := problemf(http.StatusConflict, TypeInvalidRequest, "slug %q is already in use", e.Slug)
			p.Errors = []FieldError{{Pointer: "#/slug", Detail: "is already in use; slugs are unique across the deployment"}}
			return p
		}
	}
	return nil
}
