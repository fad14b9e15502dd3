package status_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/mcpmon/mcpmon/pkg/clock"
	"github.com/mcpmon/mcpmon/pkg/conformance"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/msg"
	"github.com/mcpmon/mcpmon/pkg/status"
	"github.com/mcpmon/mcpmon/pkg/testpeers"
)

// secretDetail is a failing rule's detail as a probe stores it: mcpmon's
// words around what the server answered, here naming a private host.
const secretDetail = "a request with Origin https://rebind.mcpmon.invalid was answered HTTP 200 by " + privateHost

// twoOfThree is a 2025-11-25 conformance with two rules passing, one
// failing with a detail that must stay private, one n/a, and two entries
// no catalog rule has (a corrupt or hostile record).
func twoOfThree() *msg.Conformance {
	return &msg.Conformance{Era: conformance.Era20251125, CheckedAt: now, Rules: []msg.RuleResult{
		{ID: conformance.RuleInitializeSchema, Outcome: msg.ConformancePass},
		{ID: conformance.RuleBatchRefused, Outcome: msg.ConformancePass},
		{ID: conformance.RuleForeignOrigin, Outcome: msg.ConformanceFail, Detail: secretDetail},
		{ID: conformance.RuleToolsListSchema, Outcome: msg.ConformanceNA, Detail: "tools/list not read"},
		{ID: `<script>alert("rule")</script>`, Outcome: msg.ConformanceFail, Detail: secretDetail},
		{ID: conformance.RuleNoSession, Outcome: msg.ConformanceFail, Detail: "not a rule of 2025-11-25"},
	}}
}

// conformanceFixture is fixture() with c on the latest result and the
// endpoint opted in or not.
func conformanceFixture(c *msg.Conformance, optIn bool) *fakeStore {
	f := fixture()
	f.eps[0].PublicConformance = optIn
	r := f.results[internalID]
	r.Conformance = c
	f.results[internalID] = r
	return f
}

// TestConformanceLineOnlyWhenOptedIn: the page and its JSON carry the
// conformance line, and the conformance badge is served, only for an
// endpoint whose owner opted in; the line counts the era's judged rules,
// names the failing ones by ID and links the rules, and never shows a
// rule's detail or a rule the catalog does not define.
func TestConformanceLineOnlyWhenOptedIn(t *testing.T) {
	quiet := serve(t, conformanceFixture(twoOfThree(), false), clock.NewFake(now))
	_, page := get(t, quiet.URL+"/status/acme-mcp")
	_, js := get(t, quiet.URL+"/status/acme-mcp.json")
	for what, body := range map[string]string{"page": page, "JSON": js} {
		if strings.Contains(body, "MCP spec") || strings.Contains(body, "conformance") {
			t.Errorf("%s of an endpoint that did not opt in shows conformance:\n%s", what, body)
		}
	}
	if resp, _ := get(t, quiet.URL+"/badge/acme-mcp/conformance.svg"); resp.StatusCode != http.StatusNotFound {
		t.Errorf("conformance badge of an endpoint that did not opt in: %d, want 404", resp.StatusCode)
	}

	srv := serve(t, conformanceFixture(twoOfThree(), true), clock.NewFake(now))
	_, page = get(t, srv.URL+"/status/acme-mcp")
	for _, want := range []string{
		"MCP spec: 2 of 3 checks pass (era 2025-11-25); failing: <code>foreign-origin-refused</code>.",
		`<a href="` + status.ConformanceRulesURL + `">`,
		`src="/badge/acme-mcp/conformance.svg"`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	var v status.JSONView
	resp, js := get(t, srv.URL+"/status/acme-mcp.json")
	if err := json.Unmarshal([]byte(js), &v); err != nil {
		t.Fatal(err)
	}
	c := v.Conformance
	if c == nil || c.Era == nil || *c.Era != conformance.Era20251125 || c.Passed != 2 || c.Checked != 3 ||
		strings.Join(c.Failing, ",") != conformance.RuleForeignOrigin || c.RulesURL != status.ConformanceRulesURL ||
		c.Text != "MCP spec: 2 of 3 checks pass (era 2025-11-25)" {
		t.Errorf("JSON conformance = %+v, want 2 of 3 in 2025-11-25 with foreign-origin-refused failing", c)
	}
	badge, svg := get(t, srv.URL+"/badge/acme-mcp/conformance.svg")
	all := page + js + svg
	for _, h := range []http.Header{resp.Header, badge.Header} {
		for k, vs := range h {
			all += k + ": " + strings.Join(vs, ",") + "\n"
		}
	}
	for _, private := range []string{privateHost, "answered HTTP 200", "<script>alert(\"rule\")", "alert(&#34;rule&#34;)", "tools/list not read", conformance.RuleNoSession} {
		if strings.Contains(all, private) {
			t.Errorf("public responses show %q", private)
		}
	}
}

// TestConformanceBadgePassFailUnknown: the badge says how many judged
// rules pass, green when all do and red when one fails, and "unknown" in
// grey before any probe judged a rule (no result, no conformance, or an
// era no rule applies to); it is cached and tagged like the state badge.
func TestConformanceBadgePassFailUnknown(t *testing.T) {
	allPass := twoOfThree()
	allPass.Rules[2].Outcome = msg.ConformancePass
	for _, tc := range []struct {
		name          string
		c             *msg.Conformance
		message, fill string
	}{
		{"pass", allPass, "3/3 pass", "#4c1"},
		{"fail", twoOfThree(), "2/3 pass", "#e05d44"},
		{"unknown", nil, "unknown", "#9f9f9f"},
		{"unknown era", &msg.Conformance{Era: "1999-01-01", Rules: []msg.RuleResult{{ID: conformance.RuleBatchRefused, Outcome: msg.ConformancePass}}}, "unknown", "#9f9f9f"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := serve(t, conformanceFixture(tc.c, true), clock.NewFake(now))
			resp, svg := get(t, srv.URL+"/badge/acme-mcp/conformance.svg")
			if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "image/svg+xml" {
				t.Fatalf("conformance badge: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
			}
			if want := `aria-label="` + status.ConformanceBadgeLabel + `: ` + tc.message + `"`; !strings.Contains(svg, want) {
				t.Errorf("badge lacks %s:\n%s", want, svg)
			}
			if !strings.Contains(svg, `fill="`+tc.fill+`"`) || !strings.Contains(svg, "textLength=") {
				t.Errorf("badge is not %s with measured text:\n%s", tc.fill, svg)
			}
			if cc := resp.Header.Get("Cache-Control"); cc != status.CacheControl {
				t.Errorf("Cache-Control %q", cc)
			}
			tag := resp.Header.Get("ETag")
			if !etagShape.MatchString(tag) {
				t.Errorf("ETag %q", tag)
			}
			if again, _ := get(t, srv.URL+"/badge/acme-mcp/conformance.svg", "If-None-Match", tag); again.StatusCode != http.StatusNotModified {
				t.Errorf("If-None-Match: %d, want 304", again.StatusCode)
			}
			_, state := get(t, srv.URL+"/badge/acme-mcp.svg")
			if state == svg || !strings.Contains(state, "down") {
				t.Errorf("the state badge changed: %s", state)
			}
		})
	}
	if resp, _ := get(t, serve(t, conformanceFixture(nil, true), clock.NewFake(now)).URL+"/badge/nope/conformance.svg"); resp.StatusCode != http.StatusNotFound {
		t.Errorf("conformance badge of an unknown slug: %d, want 404", resp.StatusCode)
	}
}

// TestConformanceLineEscapesHostileText: an endpoint and a server named
// to break out of the markup leave the page, its conformance line and the
// badge as text.
func TestConformanceLineEscapesHostileText(t *testing.T) {
	f := conformanceFixture(twoOfThree(), true)
	f.eps[0].Name = `"><script>alert("name")</script>`
	r := f.results[internalID]
	r.ServerName, r.ServerVersion = `<img src=x onerror=alert(1)>`, `"><svg onload=alert(2)>`
	r.Conformance.Era = `2025-11-25"><script>alert("era")</script>`
	f.results[internalID] = r
	srv := serve(t, f, clock.NewFake(now))
	_, page := get(t, srv.URL+"/status/acme-mcp")
	_, svg := get(t, srv.URL+"/badge/acme-mcp/conformance.svg")
	for what, body := range map[string]string{"page": page, "badge": svg} {
		for _, bad := range []string{"<script", "<img src=x", "<svg onload", "alert(\"era\")"} {
			if strings.Contains(body, bad) {
				t.Errorf("%s carries %q", what, bad)
			}
		}
	}
	if !strings.Contains(page, "MCP spec: not checked yet") || !strings.Contains(svg, "unknown") {
		t.Errorf("a stored era no rule applies to is not shown as unknown:\n%s", page)
	}
	if !strings.Contains(page, `alt="&#34;&gt;&lt;script&gt;alert(&#34;name&#34;)&lt;/script&gt;: down"`) {
		t.Error("the badge's alt text does not carry the escaped name")
	}
}

// TestStatusPageShowsConformanceOfOptedInEndpoints: a tenant's status
// page shows the line, in its HTML and JSON, for the members that opted
// in and for no other.
func TestStatusPageShowsConformanceOfOptedInEndpoints(t *testing.T) {
	f := pageFixture(t, acmePage())
	for i, ep := range f.eps {
		if ep.ID == "ep-search" {
			f.eps[i].PublicConformance = true
		}
	}
	f.results["ep-search"] = msg.ProbeResult{EndpointID: "ep-search", Status: msg.StatusUp, Conformance: twoOfThree()}
	f.results["ep-auth"] = msg.ProbeResult{EndpointID: "ep-auth", Status: msg.StatusUp, Conformance: twoOfThree()}
	srv := serve(t, f, clock.NewFake(now))
	_, page := get(t, srv.URL+"/status/"+pageSlug)
	if n := strings.Count(page, "MCP spec: 2 of 3 checks pass (era 2025-11-25)"); n != 1 {
		t.Errorf("the page shows the conformance line %d times, want once (Search API only)", n)
	}
	var v status.PageJSONView
	_, js := get(t, srv.URL+"/status/"+pageSlug+".json")
	if err := json.Unmarshal([]byte(js), &v); err != nil {
		t.Fatal(err)
	}
	for _, g := range v.Groups {
		for _, ep := range g.Endpoints {
			if got, want := ep.Conformance != nil, ep.Slug == "acme-search"; got != want {
				t.Errorf("%s: conformance in the page JSON = %v, want %v", ep.Slug, got, want)
			}
		}
	}
	if strings.Contains(page+js, secretDetail) {
		t.Error("a rule's detail reached the status page")
	}
}

// TestConformanceRulesURLIsTheRulesPage: the line links the page that
// lists the rules, in this repository.
func TestConformanceRulesURLIsTheRulesPage(t *testing.T) {
	const blob = "https://github.com/mcpmon/mcpmon/blob/main/"
	path, ok := strings.CutPrefix(status.ConformanceRulesURL, blob)
	if !ok {
		t.Fatalf("ConformanceRulesURL %s is not a file of this repository's main branch", status.ConformanceRulesURL)
	}
	if doc := testpeers.RepoFile(t, path); !strings.Contains(doc, "| `"+conformance.RuleBatchRefused+"` |") {
		t.Errorf("%s does not list the rules", path)
	}
}

// TestOldEndpointRecordsHaveNoConformanceLine: a stored endpoint written
// before the field existed reads as not opted in.
func TestOldEndpointRecordsHaveNoConformanceLine(t *testing.T) {
	var ep model.Endpoint
	if err := json.Unmarshal([]byte(`{"id":"e1","name":"old","url":"https://x.example/mcp","public":true,"slug":"old-one"}`), &ep); err != nil {
		t.Fatal(err)
	}
	p := status.Build(status.Input{Endpoint: ep, Now: now, HasLatest: true, Latest: msg.ProbeResult{Conformance: twoOfThree()}})
	if p.Conformance != nil {
		t.Errorf("an old record shows conformance: %+v", p.Conformance)
	}
	b, _ := json.Marshal(model.Endpoint{ID: "e1"})
	if strings.Contains(string(b), "publicConformance") {
		t.Errorf("an endpoint that did not opt in stores the field: %s", b)
	}
}
