package status

import (
	"cmp"
	"encoding/json"
	"fmt"
	"html/template"
	"net"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/msg"
)

// PageIncidents bounds the incidents a status page and an endpoint's page,
// and their JSON, list: the newest by start, across the page's endpoints.
// The feeds are built from all of the last Days days' incidents before
// this cut (Page.Entries), so an old incident's late resolution still
// reaches them.
const PageIncidents = 50

// PageMembers bounds the endpoint entries a status page's HTML and JSON
// list, over all its groups in order: a group past it lists how many it
// leaves out (GroupView.Omitted). The page's state, sentence, incidents
// and feed still count every member. Groups are selectors, so 20 groups
// each taking a tenant's 1,000 public endpoints made one page of 282 MB,
// 14 s and 2.4 GB to render, which any visitor could ask for.
const PageMembers = 200

// PageInput is what a status page is built from: the page's document and,
// per group in order, the public model of each endpoint in it.
type PageInput struct {
	Page model.StatusPage
	// Groups holds, per Page.Groups entry, its members' endpoint pages in
	// the order they are shown.
	Groups [][]Page
	Now    time.Time
}

// StatusPageView is the public model of a tenant's status page: what its
// HTML, JSON and feed show, and nothing else. Its endpoints are Pages, so
// it inherits their guarantee: no URL, header, address, error text, tenant
// or internal ID.
type StatusPageView struct {
	Slug        string
	Title       string
	Description string
	// Logo is the logo's URL when it is a plain https URL (LogoOrigin its
	// origin, added to the page's img-src); empty otherwise.
	Logo       string
	LogoOrigin string
	// State and Sentence sum up the page's endpoints.
	State    string // up, down, maintenance, no_data
	Sentence string
	Groups   []GroupView
	// Incidents are the page's endpoints' incidents, newest first, at most
	// PageIncidents.
	Incidents []PageIncident
	// Entries are the page's feed entries, newest first, at most
	// FeedEntries.
	Entries []FeedEntry
	// Since is the newest last-verdict window among the page's endpoints.
	Since     time.Time
	Generated time.Time
	// Subscribe shows the e-mail subscription form (Options.Subscribe);
	// the page's CSP then lets forms post to this origin.
	Subscribe bool

	id    string    // the page's ID: names its feed, never rendered
	turns time.Time // the earliest of its endpoints' Page.turns
}

// GroupView is one titled group of a page.
type GroupView struct {
	Name      string
	Endpoints []Page
	// Omitted counts the group's endpoints left out past PageMembers.
	Omitted int
}

// PageIncident is an incident row with the endpoint it belongs to.
type PageIncident struct {
	EndpointSlug string
	EndpointName string
	IncidentRow
}

// BuildStatusPage is the pure status page builder.
func BuildStatusPage(in PageInput) StatusPageView {
	sp := in.Page
	v := StatusPageView{Slug: sp.Slug, Title: sp.Title, Description: sp.Description, Generated: in.Now.UTC(), id: sp.ID}
	if v.Title == "" {
		v.Title = sp.Slug
	}
	if origin, ok := LogoOrigin(sp.LogoURL); ok {
		v.Logo, v.LogoOrigin = sp.LogoURL, origin
	}
	seen := map[string]bool{}
	var unique []Page
	for i, g := range sp.Groups {
		gv := GroupView{Name: g.Name}
		if i < len(in.Groups) {
			gv.Endpoints = in.Groups[i]
		}
		for _, p := range gv.Endpoints {
			if !seen[p.Slug] {
				seen[p.Slug] = true
				unique = append(unique, p)
			}
		}
		v.Groups = append(v.Groups, gv)
	}
	v.State, v.Sentence = pageState(unique)
	listed := 0
	for i := range v.Groups {
		g := &v.Groups[i]
		if room := max(PageMembers-listed, 0); len(g.Endpoints) > room {
			g.Endpoints, g.Omitted = g.Endpoints[:room:room], len(g.Endpoints)-room
		}
		listed += len(g.Endpoints)
	}
	var entries []FeedEntry
	for _, p := range unique {
		if p.Since.After(v.Since) {
			v.Since = p.Since
		}
		v.turns = earliest(v.turns, p.turns)
		for _, row := range p.Incidents {
			v.Incidents = append(v.Incidents, PageIncident{EndpointSlug: p.Slug, EndpointName: p.Name, IncidentRow: row})
		}
		entries = append(entries, p.Entries...)
	}
	slices.SortFunc(v.Incidents, func(a, b PageIncident) int {
		if c := b.Start.Compare(a.Start); c != 0 {
			return c
		}
		return cmp.Compare(a.Key, b.Key)
	})
	if len(v.Incidents) > PageIncidents {
		v.Incidents = v.Incidents[:PageIncidents]
	}
	v.Entries = newestEntries(entries)
	return v
}

// problem reports whether an endpoint's state is a problem for the page
// and the overview summing it up: a paused or pending endpoint is not,
// and neither is one under planned maintenance.
func problem(state string) bool {
	switch state {
	case string(msg.StateUp), "paused", "pending", StateMaintenance:
		return false
	}
	return true
}

// inMaintenance counts the endpoints in the state "maintenance".
func inMaintenance(eps []Page) int {
	n := 0
	for _, p := range eps {
		if p.State == StateMaintenance {
			n++
		}
	}
	return n
}

func isAre(n int) string {
	if n == 1 {
		return "is"
	}
	return "are"
}

// earliest is the earlier of two instants, zero being none.
func earliest(a, b time.Time) time.Time {
	if a.IsZero() || !b.IsZero() && b.Before(a) {
		return b
	}
	return a
}

// pageState sums up a page's endpoints as the overview does (problem):
// an endpoint under maintenance makes the page "maintenance" only when
// no other has a problem.
func pageState(eps []Page) (state, sentence string) {
	bad := 0
	for _, p := range eps {
		if problem(p.State) {
			bad++
		}
	}
	switch maint := inMaintenance(eps); {
	case len(eps) == 0:
		return string(msg.StateNoData), "No endpoints are on this page yet."
	case bad == 0 && maint > 0:
		return StateMaintenance, fmt.Sprintf("No problems; %d of %d endpoints %s under planned maintenance.", maint, len(eps), isAre(maint))
	case bad == 0:
		return string(msg.StateUp), "All systems operational."
	case bad == 1:
		return string(msg.StateDown), fmt.Sprintf("1 of %d endpoints has a problem.", len(eps))
	}
	return string(msg.StateDown), fmt.Sprintf("%d of %d endpoints have problems.", bad, len(eps))
}

// logoOriginShape is the origin a page's CSP may name: a lower-case DNS
// name (or IPv4 address) with an optional port. Anything else (an IPv6
// literal, characters that could end the CSP directive) drops the logo.
var logoOriginShape = regexp.MustCompile(`^https://[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*(:[0-9]{1,5})?$`)

// LogoOrigin is the https origin of a logo URL, and whether the URL may be
// shown: the page's own rule (model.LogoURLProblem, which the API applied
// when the page was written) and an origin the CSP can name as it is.
func LogoOrigin(raw string) (string, bool) {
	if raw == "" || model.LogoURLProblem(raw) != "" {
		return "", false
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", false
	}
	origin := "https://" + strings.ToLower(u.Host)
	if !logoOriginShape.MatchString(origin) {
		return "", false
	}
	return origin, true
}

// HostName is a Host header as page hosts are compared: the port
// stripped, lower case, without a trailing dot.
func HostName(hostport string) string {
	h := hostport
	if host, _, err := net.SplitHostPort(hostport); err == nil {
		h = host
	}
	return strings.TrimSuffix(strings.ToLower(h), ".")
}

// PagesIndex maps each page slug, and each page's custom host (HostName
// form) that it may serve (model.StatusPage.ServesHost: with requireProof,
// a verified or grandfathered host only), to its page. A host no page may
// serve is not in byHost, so it is answered like a host no page has.
// Slugs and served hosts are checked for uniqueness before a write, but
// not atomically with it: two pages that won a race for one slug or host
// resolve to the oldest, then the lowest ID, so a URL never flips between
// them.
func PagesIndex(all []model.StatusPage, requireProof bool) (bySlug map[string]model.StatusPage, byHost map[string]string) {
	bySlug = map[string]model.StatusPage{}
	byHost = map[string]string{}
	older := func(a, b model.StatusPage) bool {
		return a.CreatedAt.Before(b.CreatedAt) || a.CreatedAt.Equal(b.CreatedAt) && a.ID < b.ID
	}
	hostOwner := map[string]model.StatusPage{}
	for _, p := range all {
		if p.Slug == "" {
			continue
		}
		if o, dup := bySlug[p.Slug]; dup && older(o, p) {
			continue
		}
		bySlug[p.Slug] = p
	}
	for _, p := range bySlug {
		h := HostName(p.Host)
		if h == "" || !p.ServesHost(requireProof) {
			continue
		}
		if o, dup := hostOwner[h]; dup && older(o, p) {
			continue
		}
		hostOwner[h] = p
		byHost[h] = p.Slug
	}
	return bySlug, byHost
}

// RenderedPage is one status page's three representations, and the CSP
// its HTML is served with.
type RenderedPage struct {
	View                         StatusPageView
	HTML, JSON, Feed             []byte
	ETagHTML, ETagJSON, ETagFeed string
	CSP                          string
	built                        time.Time
	turns                        time.Time        // StatusPageView.turns
	source                       model.StatusPage // the document it was built from
}

// RenderStatusPage renders v's HTML, JSON and feed with their ETags.
func RenderStatusPage(v StatusPageView) (*RenderedPage, error) {
	r := &RenderedPage{View: v, built: v.Generated, turns: v.turns, CSP: pageCSP(v.LogoOrigin, v.Subscribe)}
	var b strings.Builder
	if err := pages.ExecuteTemplate(&b, "statuspage", struct {
		StatusPageView
		CSS template.CSS
		Max int
	}{v, css, PageMembers}); err != nil {
		return nil, fmt.Errorf("render status page %s: %w", v.Slug, err)
	}
	r.HTML = []byte(b.String())
	j, err := json.Marshal(PageJSONOf(v))
	if err != nil {
		return nil, err
	}
	r.JSON = append(j, '\n')
	feed, updated, err := renderAtom(atomHead{
		id: tagPrefix + "page/" + PublicKey(v.id), title: v.Title + " incidents",
		subtitle: "Incidents of the endpoints on " + v.Title + " opened, updated and resolved, newest first.",
		slug:     v.Slug, generated: v.Generated,
	}, v.Entries)
	if err != nil {
		return nil, err
	}
	r.Feed = feed
	r.ETagHTML, r.ETagJSON, r.ETagFeed = etag(v.Since, r.HTML), etag(v.Since, r.JSON), etag(updated, r.Feed)
	return r, nil
}

// pageCSP is csp with the logo's origin added to img-src, for the one page
// that shows it, and form-action 'self' for a page with the subscription
// form.
func pageCSP(logoOrigin string, subscribe bool) string {
	out := csp
	if logoOrigin != "" {
		out = strings.Replace(out, "img-src 'self'", "img-src 'self' "+logoOrigin, 1)
	}
	if subscribe {
		out = strings.Replace(out, "form-action 'none'", "form-action 'self'", 1)
	}
	return out
}

// PageJSONView is GET /status/{slug}.json of a status page.
type PageJSONView struct {
	Slug        string  `json:"slug"`
	Title       string  `json:"title"`
	Description string  `json:"description"`
	LogoURL     *string `json:"logoUrl"` // null without a (showable) logo
	State       string  `json:"state"`   // up, down, maintenance, no_data
	Sentence    string  `json:"sentence"`
	// Groups are in the page's order, each with its endpoints.
	Groups []GroupJSON `json:"groups"`
	// Incidents are the page's endpoints' incidents, newest first.
	Incidents []PageIncidentJSON `json:"incidents"`
	UpdatedAt time.Time          `json:"updatedAt"`
}

// GroupJSON is one group of a page's JSON.
type GroupJSON struct {
	Name      string             `json:"name"`
	Endpoints []PageEndpointJSON `json:"endpoints"`
	// Omitted counts the endpoints left out past PageMembers.
	Omitted int `json:"omitted"`
}

// PageEndpointJSON is one endpoint of a group: the head of its own JSON.
type PageEndpointJSON struct {
	Slug      string     `json:"slug"`
	Name      string     `json:"name"`
	State     string     `json:"state"`
	StateText string     `json:"stateText"`
	Sentence  string     `json:"sentence"`
	Since     *time.Time `json:"since"`
	// MaintenanceUntil and ScheduledMaintenance: as in the endpoint's
	// own JSON.
	MaintenanceUntil     *time.Time `json:"maintenanceUntil"`
	ScheduledMaintenance []SpanJSON `json:"scheduledMaintenance"`
	Uptime30d            *float64   `json:"uptime30d"`
	Uptime90d            *float64   `json:"uptime90d"`
	// Conformance: as in the endpoint's own JSON, only when opted in.
	Conformance *ConformanceJSON `json:"conformance,omitempty"`
}

// PageIncidentJSON is one incident of a page's JSON: the endpoint's slug
// and name, then the fields of the endpoint JSON's incident.
type PageIncidentJSON struct {
	Endpoint     string `json:"endpoint"`
	EndpointName string `json:"endpointName"`
	IncidentJSON
}

// PageJSONOf is v's public JSON.
func PageJSONOf(v StatusPageView) PageJSONView {
	out := PageJSONView{Slug: v.Slug, Title: v.Title, Description: v.Description, State: v.State, Sentence: v.Sentence,
		Groups: make([]GroupJSON, 0, len(v.Groups)), Incidents: make([]PageIncidentJSON, 0, len(v.Incidents)), UpdatedAt: v.Generated}
	if v.Logo != "" {
		out.LogoURL = &v.Logo
	}
	for _, g := range v.Groups {
		gj := GroupJSON{Name: g.Name, Endpoints: make([]PageEndpointJSON, 0, len(g.Endpoints)), Omitted: g.Omitted}
		for _, p := range g.Endpoints {
			ej := PageEndpointJSON{Slug: p.Slug, Name: p.Name, State: p.State, StateText: p.StateWord, Sentence: p.Sentence,
				ScheduledMaintenance: spansJSON(p.Scheduled), Conformance: conformanceJSON(p.Conformance)}
			if !p.Since.IsZero() {
				since := p.Since
				ej.Since = &since
			}
			if !p.MaintenanceUntil.IsZero() {
				until := p.MaintenanceUntil
				ej.MaintenanceUntil = &until
			}
			if p.Uptime30.Measured {
				x := p.Uptime30.Value
				ej.Uptime30d = &x
			}
			if p.Uptime90.Measured {
				x := p.Uptime90.Value
				ej.Uptime90d = &x
			}
			gj.Endpoints = append(gj.Endpoints, ej)
		}
		out.Groups = append(out.Groups, gj)
	}
	for _, inc := range v.Incidents {
		out.Incidents = append(out.Incidents, PageIncidentJSON{Endpoint: inc.EndpointSlug, EndpointName: inc.EndpointName,
			IncidentJSON: incidentJSON(inc.IncidentRow)})
	}
	return out
}
