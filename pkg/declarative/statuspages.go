package declarative

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	apiv1 "github.com/mcpmon/mcpmon/pkg/api/v1"
)

// Status pages in the apply file: a `statusPages:` list in the API's
// input shape, matched with the server's pages by slug (a page's slug is
// unique across the deployment). A page holds no secret, so it needs no
// resolving, and its update is the whole page (PUT), which the plan's
// field list describes.
//
//	statusPages:
//	  - slug: acme
//	    title: Acme status
//	    groups:
//	      - {name: Search, selector: {team: search}}

// KindStatusPage is the Kind of a Change to a status page; a Change
// without a Kind is to an endpoint.
const KindStatusPage = "status-page"

// Loaded is what LoadAll read: the endpoints, the status pages and whether
// any file has a statusPages key at all (prune deletes the server's pages
// only then, so a file of endpoints alone leaves the pages be).
type Loaded struct {
	Endpoints     []Desired
	StatusPages   []apiv1.StatusPageInput
	DeclaresPages bool
}

// PlanStatusPages compares desired pages (unique slugs) with current (the
// server's pages of the tenant) and returns the creates, updates and, with
// prune, deletes that make the server match, each kind by slug.
func PlanStatusPages(desired []apiv1.StatusPageInput, current []apiv1.StatusPageView, prune bool) (Plan, error) {
	bySlug := map[string]apiv1.StatusPageView{}
	for _, v := range current {
		bySlug[v.Slug] = v
	}
	seen := map[string]bool{}
	var creates, updates, deletes []Change
	for _, d := range desired {
		if seen[d.Slug] {
			return Plan{}, fmt.Errorf("status page slug %q is declared twice: slugs must be unique", d.Slug)
		}
		seen[d.Slug] = true
		in := d
		cur, ok := bySlug[d.Slug]
		if !ok {
			creates = append(creates, Change{Action: Create, Kind: KindStatusPage, Name: d.Slug, Page: &in})
			continue
		}
		if fields := pageDiff(d, cur); len(fields) > 0 {
			updates = append(updates, Change{Action: Update, Kind: KindStatusPage, Name: d.Slug, ID: cur.ID, Fields: fields, Page: &in})
		}
	}
	if prune {
		for _, v := range current {
			if !seen[v.Slug] {
				deletes = append(deletes, Change{Action: Delete, Kind: KindStatusPage, Name: v.Slug, ID: v.ID})
			}
		}
	}
	for _, cs := range [][]Change{creates, updates, deletes} {
		sort.SliceStable(cs, func(i, j int) bool { return cs[i].Name < cs[j].Name })
	}
	return Plan{Changes: append([]Change{}, slices.Concat(creates, updates, deletes)...)}, nil
}

// pageDiff lists the fields of cur that d changes, comparing what the
// server stores (text trimmed; no groups and an empty list alike).
func pageDiff(d apiv1.StatusPageInput, cur apiv1.StatusPageView) []FieldChange {
	var out []FieldChange
	for _, f := range []struct{ field, from, to string }{
		{"title", cur.Title, strings.TrimSpace(d.Title)},
		{"description", cur.Description, strings.TrimSpace(d.Description)},
		{"logoUrl", cur.LogoURL, strings.TrimSpace(d.LogoURL)},
		{"host", cur.Host, strings.TrimSpace(d.Host)},
	} {
		if f.from != f.to {
			out = append(out, FieldChange{Field: f.field, From: f.from, To: f.to})
		}
	}
	if !sameGroups(d.Groups, cur.Groups) {
		out = append(out, FieldChange{Field: "groups", From: showGroups(cur.Groups), To: showGroups(d.Groups)})
	}
	return out
}

func sameGroups(want, cur []apiv1.PageGroupInput) bool {
	if len(want) != len(cur) {
		return false
	}
	for i := range want {
		if strings.TrimSpace(want[i].Name) != cur[i].Name || !sameMap(want[i].Selector, cur[i].Selector) {
			return false
		}
	}
	return true
}

func showGroups(gs []apiv1.PageGroupInput) string {
	if len(gs) == 0 {
		return "none"
	}
	parts := make([]string, len(gs))
	for i, g := range gs {
		parts[i] = strings.TrimSpace(g.Name) + showMap(g.Selector)
	}
	return strings.Join(parts, ", ")
}

// ExportStatusPages turns the server's pages into the file's statusPages
// list, in slug order, which plans no change against the same server.
func ExportStatusPages(views []apiv1.StatusPageView) []apiv1.StatusPageInput {
	views = slices.Clone(views)
	sort.Slice(views, func(i, j int) bool { return views[i].Slug < views[j].Slug })
	out := make([]apiv1.StatusPageInput, 0, len(views))
	for _, v := range views {
		in := apiv1.StatusPageInput{Slug: v.Slug, Title: v.Title, Description: v.Description, LogoURL: v.LogoURL, Host: v.Host}
		for _, g := range v.Groups {
			pg := apiv1.PageGroupInput{Name: g.Name}
			if len(g.Selector) > 0 {
				pg.Selector = maps.Clone(g.Selector)
			}
			in.Groups = append(in.Groups, pg)
		}
		out = append(out, in)
	}
	return out
}
