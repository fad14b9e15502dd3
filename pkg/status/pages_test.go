package status_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mmcdole/gofeed/atom"

	"github.com/mcpmon/mcpmon/pkg/clock"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/msg"
	"github.com/mcpmon/mcpmon/pkg/status"
	"github.com/mcpmon/mcpmon/pkg/store"
)

const (
	pageSlug    = "acme"
	pageHost    = "status.acme.test"
	otherTenant = "globex-tenant"
	otherName   = "Globex Search"
)

// pageFixture is a store with tenant acme's status page over two groups
// of its public endpoints, and endpoints the page must not show: acme's
// private one, and another tenant's public one whose labels match.
func pageFixture(t *testing.T, sp model.StatusPage) *fakeStore {
	t.Helper()
	opened := now.Add(-3 * time.Hour)
	resolved := opened.Add(20 * time.Minute)
	older := now.Add(-48 * time.Hour)
	olderEnd := older.Add(5 * time.Minute)
	f := &fakeStore{
		eps: []model.Endpoint{
			{ID: "ep-search", Tenant: "acme", Name: "Search API", Public: true, Slug: "acme-search", Labels: map[string]string{"tier": "core"},
				URL: "https://" + privateHost + "/search?token=" + secretToken, Headers: map[string]string{"Authorization": secretHeader}},
			{ID: "ep-auth", Tenant: "acme", Name: "Auth API", Public: true, Slug: "acme-auth", Labels: map[string]string{"tier": "core"}},
			{ID: "ep-docs", Tenant: "acme", Name: "Docs MCP", Public: true, Slug: "acme-docs", Labels: map[string]string{"tier": "extra"}},
			{ID: "ep-private", Tenant: "acme", Name: "Private Billing", Slug: "acme-billing", Labels: map[string]string{"tier": "core"}},
			{ID: "ep-globex", Tenant: otherTenant, Name: otherName, Public: true, Slug: "globex-search", Labels: map[string]string{"tier": "core"}},
		},
		verdicts: map[string]msg.Verdict{
			"ep-search": {EndpointID: "ep-search", Window: now.Add(-time.Minute), State: msg.StateUp},
			"ep-auth":   {EndpointID: "ep-auth", Window: now.Add(-2 * time.Minute), State: msg.StateDown, Class: "http_5xx", Reason: secretReason},
			"ep-docs":   {EndpointID: "ep-docs", Window: now.Add(-time.Minute), State: msg.StateUp},
			"ep-globex": {EndpointID: "ep-globex", Window: now.Add(-time.Minute), State: msg.StateDown},
		},
		results: map[string]msg.ProbeResult{},
		incidents: map[string][]model.Incident{
			"ep-search": {{ID: "inc-search", EndpointID: "ep-search", State: model.IncidentResolved, OpenedWindow: opened, FirstFailure: opened,
				Class: "timeout", Reason: secretReason + " " + secretError, ResolvedAt: &resolved,
				Updates: []model.IncidentUpdate{
					{At: opened.Add(2 * time.Minute), Status: model.UpdateInvestigating, Message: "Looking into timeouts.", By: "KEYNAME"},
					{At: opened.Add(8 * time.Minute), Status: model.UpdateIdentified, Message: "A bad index <b>rebuild</b>.", By: "KEYNAME"},
					{At: opened.Add(19 * time.Minute), Status: model.UpdateMonitoring, Message: "Rolled back, watching.", By: "KEYNAME"},
				}}},
			"ep-docs": {{ID: "inc-docs", EndpointID: "ep-docs", State: model.IncidentResolved, OpenedWindow: older, FirstFailure: older,
				Class: "dns", ResolvedAt: &olderEnd}},
			"ep-globex": {{ID: "inc-globex", EndpointID: "ep-globex", State: model.IncidentOpen, OpenedWindow: opened, FirstFailure: opened, Class: "refused"}},
		},
		rollups: map[string][]model.Rollup{},
	}
	putPage(t, f, sp)
	return f
}

func putPage(t *testing.T, f *fakeStore, sp model.StatusPage) {
	t.Helper()
	doc, err := json.Marshal(sp)
	if err != nil {
		t.Fatal(err)
	}
	if f.objects == nil {
		f.objects = map[string]map[string][]byte{}
	}
	if f.objects[store.KindStatusPage] == nil {
		f.objects[store.KindStatusPage] = map[string][]byte{}
	}
	f.objects[store.KindStatusPage][sp.ID] = doc
}

func acmePage() model.StatusPage {
	return model.StatusPage{ID: "page-acme-internal", Tenant: "acme", Slug: pageSlug, Title: "Acme status",
		Description: "Public MCP servers of Acme.", Host: pageHost, CreatedAt: now.Add(-time.Hour),
		Groups: []model.PageGroup{{Name: "Core APIs", Selector: map[string]string{"tier": "core"}}, {Name: "Extras", Selector: map[string]string{"tier": "extra"}}}}
}

// TestStatusPageShowsItsTenantsGroupsInOrder: each group lists the page
// tenant's public endpoints its selector matches, by name, groups in the
// page's order; acme's private endpoint and the other tenant's matching
// public one show in no response.
func TestStatusPageShowsItsTenantsGroupsInOrder(t *testing.T) {
	srv := serve(t, pageFixture(t, acmePage()), clock.NewFake(now))
	resp, page := get(t, srv.URL+"/status/"+pageSlug)
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("%d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	order := []string{"Acme status", "Public MCP servers of Acme.", "1 of 3 endpoints has a problem.", "Core APIs",
		`href="/status/acme-auth">Auth API`, "Auth API is down.", `href="/status/acme-search">Search API`, "Search API is operational.",
		"Extras", `href="/status/acme-docs">Docs MCP`, "Recent incidents"}
	at := -1
	for _, want := range order {
		i := strings.Index(page[max(at, 0):], want)
		if i < 0 {
			t.Fatalf("page lacks %q after offset %d:\n%s", want, at, page)
		}
		at += i + 1
	}
	var v status.PageJSONView
	_, js := get(t, srv.URL+"/status/"+pageSlug+".json")
	if err := json.Unmarshal([]byte(js), &v); err != nil {
		t.Fatal(err)
	}
	var groups []string
	for _, g := range v.Groups {
		var slugs []string
		for _, e := range g.Endpoints {
			slugs = append(slugs, e.Slug)
		}
		groups = append(groups, g.Name+"="+strings.Join(slugs, ","))
	}
	if want := []string{"Core APIs=acme-auth,acme-search", "Extras=acme-docs"}; !slices.Equal(groups, want) {
		t.Errorf("JSON groups %v, want %v", groups, want)
	}
	if v.Slug != pageSlug || v.Title != "Acme status" || v.State != "down" || v.LogoURL != nil {
		t.Errorf("JSON head %+v", v)
	}
	_, feed := get(t, srv.URL+"/status/"+pageSlug+"/feed.atom")
	for what, body := range map[string]string{"page": page, "json": js, "feed": feed} {
		for _, secret := range []string{otherName, "globex", otherTenant, "Private Billing", "acme-billing", "page-acme-internal", "ep-search",
			secretHeader, secretToken, privateHost, secretReason, "ERRSECRET", "KEYNAME", pageHost, "connection refused"} {
			if strings.Contains(body, secret) {
				t.Errorf("%s shows %q", what, secret)
			}
		}
	}
}

// TestStatusPageIncidentsAcrossEndpointsNewestFirst: the page lists its
// endpoints' incidents newest first, each with its updates newest first
// and their times, escaped.
func TestStatusPageIncidentsAcrossEndpointsNewestFirst(t *testing.T) {
	srv := serve(t, pageFixture(t, acmePage()), clock.NewFake(now))
	_, page := get(t, srv.URL+"/status/"+pageSlug)
	order := []string{`href="/status/acme-search">Search API</a>: timed out`, "<strong>Monitoring</strong> <span class=\"message\">Rolled back, watching.",
		"A bad index &lt;b&gt;rebuild&lt;/b&gt;.", "Looking into timeouts.", `href="/status/acme-docs">Docs MCP</a>: DNS failure`}
	at := strings.Index(page, "Recent incidents")
	for _, want := range order {
		i := strings.Index(page[at:], want)
		if i < 0 {
			t.Fatalf("incidents lack %q in order:\n%s", want, page[strings.Index(page, "Recent incidents"):])
		}
		at += i
	}
	if !strings.Contains(page, `<time datetime="2026-05-20T09:19:00Z">2026-05-20 09:19 UTC</time>`) {
		t.Error("the newest update's time is not shown")
	}
	var v status.PageJSONView
	_, js := get(t, srv.URL+"/status/"+pageSlug+".json")
	if err := json.Unmarshal([]byte(js), &v); err != nil {
		t.Fatal(err)
	}
	if len(v.Incidents) != 2 || v.Incidents[0].Endpoint != "acme-search" || len(v.Incidents[0].Updates) != 3 ||
		v.Incidents[0].Updates[0].Status != "monitoring" || v.Incidents[1].Endpoint != "acme-docs" || v.Incidents[1].End == nil {
		t.Errorf("JSON incidents %s", js)
	}
}

// TestStatusPageFeedHasEveryEventOfItsEndpoints: the page's feed parses as
// Atom and has, newest first, the resolution, the three updates and the
// opening of one endpoint's incident and the other's two events, under the
// same entry IDs as the endpoints' own feeds, and nothing of the other
// tenant.
func TestStatusPageFeedHasEveryEventOfItsEndpoints(t *testing.T) {
	srv := serve(t, pageFixture(t, acmePage()), clock.NewFake(now))
	resp, body := get(t, srv.URL+"/status/"+pageSlug+"/feed.atom")
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != status.FeedContentType {
		t.Fatalf("%d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	f := parseAtom(t, body)
	if self := link(f.Links, "self"); self != "/status/"+pageSlug+"/feed.atom" {
		t.Errorf("self link %q", self)
	}
	var events []string
	for _, e := range f.Entries {
		events = append(events, e.ID[strings.LastIndex(e.ID, "incident/")+len("incident/")+20:]+" "+link(e.Links, "alternate"))
	}
	want := []string{"/resolved /status/acme-search", "/updated/3 /status/acme-search", "/updated/2 /status/acme-search",
		"/updated/1 /status/acme-search", "/opened /status/acme-search", "/resolved /status/acme-docs", "/opened /status/acme-docs"}
	if !slices.Equal(events, want) {
		t.Errorf("entries %v, want %v", events, want)
	}
	_, epFeed := get(t, srv.URL+"/status/acme-search/feed.atom")
	ef := parseAtom(t, epFeed)
	if ef.ID == f.ID {
		t.Error("the page's feed has the endpoint feed's ID")
	}
	pageIDs := entryIDs(f)
	for _, id := range entryIDs(ef) {
		if !slices.Contains(pageIDs, id) {
			t.Errorf("endpoint entry %s is not in the page's feed under the same ID", id)
		}
	}
	if strings.Contains(body, otherName) || strings.Contains(body, "connection refused") {
		t.Error("the feed shows the other tenant's incident")
	}
}

// TestStatusPageFeedIsBounded: however many incidents a page's endpoints
// had, the feed holds the FeedEntries newest events.
func TestStatusPageFeedIsBounded(t *testing.T) {
	f := pageFixture(t, acmePage())
	for i := range 80 {
		start := now.Add(-time.Duration(i+10) * time.Hour)
		end := start.Add(time.Minute)
		f.incidents["ep-auth"] = append(f.incidents["ep-auth"], model.Incident{ID: "inc-many-" + string(rune('a'+i%26)) + string(rune('a'+i/26)),
			EndpointID: "ep-auth", State: model.IncidentResolved, OpenedWindow: start, FirstFailure: start, Class: "timeout", ResolvedAt: &end})
	}
	srv := serve(t, f, clock.NewFake(now))
	_, body := get(t, srv.URL+"/status/"+pageSlug+"/feed.atom")
	if n := len(parseAtom(t, body).Entries); n != status.FeedEntries {
		t.Errorf("%d entries, want %d", n, status.FeedEntries)
	}
	var v status.PageJSONView
	_, js := get(t, srv.URL+"/status/"+pageSlug+".json")
	if err := json.Unmarshal([]byte(js), &v); err != nil {
		t.Fatal(err)
	}
	if len(v.Incidents) != status.PageIncidents {
		t.Errorf("%d incidents in the JSON, want %d", len(v.Incidents), status.PageIncidents)
	}
}

func parseAtom(t *testing.T, body string) *atom.Feed {
	t.Helper()
	f, err := (&atom.Parser{}).Parse(strings.NewReader(body))
	if err != nil {
		t.Fatalf("atom: %v\n%s", err, body)
	}
	if f.ID == "" || f.Title == "" || f.UpdatedParsed == nil || len(f.Authors) == 0 {
		t.Errorf("feed lacks a required element: %+v", f)
	}
	for i, e := range f.Entries {
		if !strings.HasPrefix(e.ID, "tag:") || e.Title == "" || e.UpdatedParsed == nil || e.Summary == "" {
			t.Errorf("entry %d lacks a required element: %+v", i, e)
		}
	}
	return f
}

// TestStatusPageEscapesHostileText: a title, description and group name
// written to break out of the markup are shown as text, and a logo that is
// not a plain https URL is not shown at all.
func TestStatusPageEscapesHostileText(t *testing.T) {
	sp := acmePage()
	sp.Title = `</title><script>alert("t")</script>`
	sp.Description = `"><img src=x onerror=alert(1)>`
	sp.Groups[0].Name = `<iframe src="https://evil.test">`
	sp.LogoURL = "javascript:alert(1)"
	srv := serve(t, pageFixture(t, sp), clock.NewFake(now))
	resp, page := get(t, srv.URL+"/status/"+pageSlug)
	for _, bad := range []string{"<script", "<img src=x", "<iframe", "javascript:", `id="logo"`} {
		if strings.Contains(page, bad) {
			t.Errorf("page carries %q", bad)
		}
	}
	for _, want := range []string{"&lt;/title&gt;&lt;script&gt;alert(&#34;t&#34;)&lt;/script&gt;", "&#34;&gt;&lt;img src=x onerror=alert(1)&gt;",
		"&lt;iframe src=&#34;https://evil.test&#34;&gt;"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks the escaped %q", want)
		}
	}
	if got := resp.Header.Get("Content-Security-Policy"); !strings.Contains(got, "img-src 'self';") {
		t.Errorf("CSP %q names another image origin", got)
	}
}

// TestStatusPageLogoOriginIsAllowedForThatPageOnly: a page's https logo
// is shown, and its exact origin joins img-src on that page's HTML only.
func TestStatusPageLogoOriginIsAllowedForThatPageOnly(t *testing.T) {
	sp := acmePage()
	sp.LogoURL = "https://CDN.acme.test:8443/brand/logo.png?v=2"
	srv := serve(t, pageFixture(t, sp), clock.NewFake(now))
	resp, page := get(t, srv.URL+"/status/"+pageSlug)
	if !strings.Contains(page, `<img id="logo" src="https://CDN.acme.test:8443/brand/logo.png?v=2"`) {
		t.Errorf("page lacks the logo:\n%s", page)
	}
	if got, want := resp.Header.Get("Content-Security-Policy"), "img-src 'self' https://cdn.acme.test:8443;"; !strings.Contains(got, want) {
		t.Errorf("CSP %q lacks %q", got, want)
	}
	for _, path := range []string{"/status/acme-search", "/status/" + pageSlug + ".json", "/status/" + pageSlug + "/feed.atom"} {
		if got := resp0(t, srv.URL+path).Header.Get("Content-Security-Policy"); strings.Contains(got, "acme.test") {
			t.Errorf("%s CSP %q names the logo's origin", path, got)
		}
	}
}

func resp0(t *testing.T, url string) *http.Response {
	t.Helper()
	resp, _ := get(t, url)
	return resp
}

func TestLogoOrigin(t *testing.T) {
	for raw, want := range map[string]string{
		"https://cdn.example.com/logo.svg":       "https://cdn.example.com",
		"https://Cdn.Example.com:444/a.png?x=1":  "https://cdn.example.com:444",
		"http://cdn.example.com/logo.svg":        "",
		"javascript:alert(1)":                    "",
		"https://user:pw@cdn.example.com/l.png":  "",
		"https://10.0.0.1/l.png":                 "https://10.0.0.1",
		"https://[::1]/l.png":                    "", // the CSP origin shape is a name or an IPv4 address
		"https://cdn.example.com/l.png?token=ab": "", // model.LogoURLProblem: a credential-like parameter
		"https://cdn.example.com;script-src *":   "",
		"https://cdn.example.com'/l.png":         "",
		"//cdn.example.com/logo.svg":             "",
		"https:cdn.example.com":                  "",
		"https://" + strings.Repeat("a", 2100):   "",
		"https://xn--bcher-kva.example/logo.png": "https://xn--bcher-kva.example",
	} {
		got, ok := status.LogoOrigin(raw)
		if got != want || ok != (want != "") {
			t.Errorf("LogoOrigin(%q) = %q, %v; want %q", raw, got, ok, want)
		}
	}
}

// TestStatusPageETagAnd304: the page's three responses carry strong tags
// of their own and answer 304 to them.
func TestStatusPageETagAnd304(t *testing.T) {
	srv := serve(t, pageFixture(t, acmePage()), clock.NewFake(now))
	tags := map[string]bool{}
	for _, path := range []string{"/status/" + pageSlug, "/status/" + pageSlug + ".json", "/status/" + pageSlug + "/feed.atom"} {
		resp, _ := get(t, srv.URL+path)
		tag := resp.Header.Get("ETag")
		if !etagShape.MatchString(tag) || tags[tag] || resp.Header.Get("Cache-Control") != status.CacheControl {
			t.Errorf("%s ETag %q Cache-Control %q", path, tag, resp.Header.Get("Cache-Control"))
		}
		tags[tag] = true
		if again, body := get(t, srv.URL+path, "If-None-Match", tag); again.StatusCode != http.StatusNotModified || body != "" {
			t.Errorf("%s with If-None-Match: %d", path, again.StatusCode)
		}
	}
}

// TestPageSlugWinsOverAnEndpointSlug: a slug held by both a page and a
// public endpoint (a race the API's check cannot rule out) serves the
// page, and the endpoint keeps its badge.
func TestPageSlugWinsOverAnEndpointSlug(t *testing.T) {
	sp := acmePage()
	sp.Slug = "acme-search"
	srv := serve(t, pageFixture(t, sp), clock.NewFake(now))
	if _, page := get(t, srv.URL+"/status/acme-search"); !strings.Contains(page, "Acme status") {
		t.Error("the page's slug does not serve the page")
	}
	if resp, svg := get(t, srv.URL+"/badge/acme-search.svg"); resp.StatusCode != http.StatusOK || !strings.Contains(svg, "operational") {
		t.Errorf("the endpoint's badge: %d", resp.StatusCode)
	}
}

// TestUnknownPageAndPageBadgeAre404: a slug no page or endpoint has is 404
// in every form, and a page has no badge.
func TestUnknownPageAndPageBadgeAre404(t *testing.T) {
	srv := serve(t, pageFixture(t, acmePage()), clock.NewFake(now))
	for _, path := range []string{"/status/nope", "/status/nope.json", "/status/nope/feed.atom", "/badge/" + pageSlug + ".svg", "/status/acme-billing"} {
		if resp, _ := get(t, srv.URL+path); resp.StatusCode != http.StatusNotFound {
			t.Errorf("%s: %d, want 404", path, resp.StatusCode)
		}
	}
}

// TestCustomHostServesItsPageAtTheRoot: the page's host (any case, any
// port) gets the page at /, its JSON at /index.json and its feed at
// /feed.atom; its other paths, other methods and every other host reach
// the next handler.
func TestCustomHostServesItsPageAtTheRoot(t *testing.T) {
	f := pageFixture(t, acmePage())
	c := status.NewCache(status.Options{Store: f, Clock: clock.NewFake(now)})
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "next handler") })
	h := status.Hosts(c)(next)
	do := func(method, host, path string) (*http.Response, string) {
		req := httptest.NewRequest(method, path, nil)
		req.Host = host
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Result(), rec.Body.String()
	}
	for _, tc := range []struct{ method, host, path, want, ctype string }{
		{"GET", "status.acme.test", "/", "Acme status", "text/html; charset=utf-8"},
		{"GET", "Status.ACME.test:8443", "/", "Acme status", "text/html; charset=utf-8"},
		{"GET", "status.acme.test.", "/index.json", `"slug":"acme"`, "application/json"},
		{"GET", "status.acme.test", "/feed.atom", "<feed", status.FeedContentType},
		{"GET", "status.acme.test", "/metrics", "next handler", ""},
		{"GET", "status.acme.test", "/index.html", "next handler", ""},
		{"POST", "status.acme.test", "/", "next handler", ""},
		{"GET", "other.acme.test", "/", "next handler", ""},
		{"GET", "127.0.0.1:8080", "/", "next handler", ""},
		{"GET", "", "/", "next handler", ""},
	} {
		resp, body := do(tc.method, tc.host, tc.path)
		if !strings.Contains(body, tc.want) || tc.ctype != "" && resp.Header.Get("Content-Type") != tc.ctype {
			t.Errorf("%s %s%s: %q %q, want %q", tc.method, tc.host, tc.path, resp.Header.Get("Content-Type"), body[:min(len(body), 80)], tc.want)
		}
	}
	if resp, _ := do("HEAD", pageHost, "/"); resp.StatusCode != http.StatusOK || resp.Header.Get("ETag") == "" {
		t.Errorf("HEAD /: %d", resp.StatusCode)
	}
	// Unknown hosts, on a fresh index, read nothing.
	reads := f.reads.Load()
	for range 20 {
		do("GET", "unknown.example", "/")
		do("GET", pageHost, "/")
	}
	if n := f.reads.Load() - reads; n != 0 {
		t.Errorf("%d store reads for 40 host requests on a fresh cache, want 0", n)
	}
}

// TestFreshStatusPageReadsNoStore: after the first request, the page's
// HTML, JSON and feed and an unknown slug read nothing within the TTL;
// after it, one refresh reads the index and each endpoint once.
func TestFreshStatusPageReadsNoStore(t *testing.T) {
	f := pageFixture(t, acmePage())
	clk := clock.NewFake(now)
	srv := serve(t, f, clk)
	get(t, srv.URL+"/status/"+pageSlug)
	first := f.reads.Load()
	// Three index reads (endpoints, pages, maintenance windows), then
	// four per endpoint on the page.
	if first != 3+3*4 {
		t.Fatalf("the first request read %d times, want %d", first, 3+3*4)
	}
	for range 30 {
		for _, path := range []string{"/status/" + pageSlug, "/status/" + pageSlug + ".json", "/status/" + pageSlug + "/feed.atom", "/status/no-such-page"} {
			get(t, srv.URL+path)
		}
	}
	if n := f.reads.Load(); n != first {
		t.Fatalf("%d store reads for 120 requests on a fresh cache, want 0", n-first)
	}
	clk.Advance(status.DefaultTTL)
	get(t, srv.URL+"/status/"+pageSlug+".json")
	if n := f.reads.Load(); n != 2*first {
		t.Fatalf("refresh after the TTL read %d times, want %d", n-first, first)
	}
}

// TestStatusPageEditShowsAfterTheTTL: a changed page document is rendered
// anew once the index is re-read, and a deleted page is 404.
func TestStatusPageEditShowsAfterTheTTL(t *testing.T) {
	f := pageFixture(t, acmePage())
	clk := clock.NewFake(now)
	srv := serve(t, f, clk)
	get(t, srv.URL+"/status/"+pageSlug)
	sp := acmePage()
	sp.Title = "Acme platform status"
	sp.Groups = sp.Groups[1:]
	putPage(t, f, sp)
	if _, page := get(t, srv.URL+"/status/"+pageSlug); strings.Contains(page, "Acme platform status") {
		t.Error("an edit showed before the TTL: the cache read the store per request")
	}
	clk.Advance(status.DefaultTTL)
	_, page := get(t, srv.URL+"/status/"+pageSlug)
	if !strings.Contains(page, "Acme platform status") || strings.Contains(page, "Core APIs") {
		t.Errorf("the edit did not show after the TTL:\n%s", page)
	}
	delete(f.objects[store.KindStatusPage], sp.ID)
	clk.Advance(status.DefaultTTL)
	if resp, _ := get(t, srv.URL+"/status/"+pageSlug); resp.StatusCode != http.StatusNotFound {
		t.Errorf("a deleted page: %d", resp.StatusCode)
	}
}

// TestOldPageDocumentsRender: a page document with only the fields a
// first release wrote (no groups, host, logo or times) renders, and an
// unreadable document is skipped without taking the others down.
func TestOldPageDocumentsRender(t *testing.T) {
	f := pageFixture(t, acmePage())
	f.objects[store.KindStatusPage]["page-min"] = []byte(`{"id":"page-min","slug":"minimal","title":"Minimal"}`)
	f.objects[store.KindStatusPage]["page-bad"] = []byte(`{"id":`)
	srv := serve(t, f, clock.NewFake(now))
	if resp, page := get(t, srv.URL+"/status/minimal"); resp.StatusCode != http.StatusOK || !strings.Contains(page, "No endpoints are on this page yet.") {
		t.Errorf("minimal page: %d", resp.StatusCode)
	}
	if resp, _ := get(t, srv.URL+"/status/"+pageSlug); resp.StatusCode != http.StatusOK {
		t.Errorf("a bad document took another page down: %d", resp.StatusCode)
	}
}

func TestPagesIndexResolvesRacesToTheOldest(t *testing.T) {
	t0 := now
	pages := []model.StatusPage{
		{ID: "b", Slug: "one", Host: "Status.Example.com", CreatedAt: t0},
		{ID: "a", Slug: "one", CreatedAt: t0},
		{ID: "c", Slug: "two", Host: "status.example.com.", CreatedAt: t0.Add(-time.Hour)},
		{ID: "d", Slug: "three", Host: "status.example.com:443", CreatedAt: t0.Add(time.Hour)},
		{ID: "e", Slug: ""},
	}
	bySlug, byHost := status.PagesIndex(pages, true)
	if bySlug["one"].ID != "a" || bySlug["two"].ID != "c" || bySlug["three"].ID != "d" || len(bySlug) != 3 {
		t.Errorf("by slug %v", bySlug)
	}
	if len(byHost) != 1 || byHost["status.example.com"] != "two" {
		t.Errorf("by host %v", byHost)
	}
}

// TestStatusPageSubscribeFormOnlyWhenSubscriptionsAreOn: with Subscribe
// the page carries a form posting to its subscribe route and its CSP lets
// forms post to this origin; without, neither (form-action 'none').
func TestStatusPageSubscribeFormOnlyWhenSubscriptionsAreOn(t *testing.T) {
	for _, on := range []bool{false, true} {
		srv := serveWith(t, status.Options{Store: pageFixture(t, acmePage()), Clock: clock.NewFake(now), Subscribe: on})
		resp, page := get(t, srv.URL+"/status/"+pageSlug)
		form := `<form class="subscribe" id="subscribe" method="post" action="/status/` + pageSlug + `/subscribe">`
		csp := resp.Header.Get("Content-Security-Policy")
		if got := strings.Contains(page, form); got != on {
			t.Errorf("Subscribe=%v: page has the subscription form: %v", on, got)
		}
		want := "form-action 'none'"
		if on {
			want = "form-action 'self'"
		}
		if !strings.Contains(csp, want) {
			t.Errorf("Subscribe=%v: CSP %q lacks %q", on, csp, want)
		}
		// An endpoint's own page never takes forms.
		if got := resp0(t, srv.URL+"/status/acme-search").Header.Get("Content-Security-Policy"); !strings.Contains(got, "form-action 'none'") {
			t.Errorf("Subscribe=%v: an endpoint page's CSP %q lets forms post", on, got)
		}
	}
}

// TestStatusPageListsAtMostPageMembers: groups are selectors, so a page of
// 20 groups each taking all of a tenant's 1,000 public endpoints rendered
// 20,000 entries (282 MB of HTML). A page lists at most PageMembers
// entries over its groups in order, and each group says how many it left
// out; the page's state still counts every endpoint, listed or not.
func TestStatusPageListsAtMostPageMembers(t *testing.T) {
	sp := model.StatusPage{ID: "p", Tenant: "acme", Slug: "big", Title: "Big"}
	groups := make([][]status.Page, 3)
	for g := range groups {
		sp.Groups = append(sp.Groups, model.PageGroup{Name: fmt.Sprintf("group %d", g)})
		for i := range 150 {
			p := status.Page{Slug: fmt.Sprintf("ep-%d-%d", g, i), Name: fmt.Sprintf("Endpoint %d-%d", g, i), State: "up"}
			if g == 2 && i == 149 {
				p.State = "down"
			}
			groups[g] = append(groups[g], p)
		}
	}
	v := status.BuildStatusPage(status.PageInput{Page: sp, Groups: groups, Now: now})
	r, err := status.RenderStatusPage(v)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(r.HTML), `<li class="member `); n != status.PageMembers {
		t.Errorf("HTML lists %d endpoints, want %d", n, status.PageMembers)
	}
	for _, want := range []string{"100 more endpoints in this group not listed", "150 more endpoints in this group not listed"} {
		if !strings.Contains(string(r.HTML), want) {
			t.Errorf("HTML does not say %q", want)
		}
	}
	var j status.PageJSONView
	if err := json.Unmarshal(r.JSON, &j); err != nil {
		t.Fatal(err)
	}
	var listed, omitted []int
	for _, g := range j.Groups {
		listed, omitted = append(listed, len(g.Endpoints)), append(omitted, g.Omitted)
	}
	if fmt.Sprint(listed, omitted) != "[150 50 0] [0 100 150]" {
		t.Errorf("JSON groups list %v and omit %v, want [150 50 0] and [0 100 150]", listed, omitted)
	}
	if j.State != "down" || j.Sentence != "1 of 450 endpoints has a problem." {
		t.Errorf("page state %q %q, want down counting the unlisted endpoint that is down", j.State, j.Sentence)
	}
}
