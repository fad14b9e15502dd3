package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/api"
	apiv1 "github.com/mcpmon/mcpmon/pkg/api/v1"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/store"
	"github.com/mcpmon/mcpmon/pkg/testpeers"
)

const acmePage = `{"slug":"acme","title":"Acme status","description":"Our servers.\nLive.",
	"logoUrl":"https://cdn.example.com/logo.png","host":"status.acme.example",
	"groups":[{"name":"Search","selector":{"team":"search"}},{"name":"All"}]}`

// TestStatusPageCRUD: a page is created, listed, read, replaced (keeping
// its ID and creation time) and deleted, and pkg/status reads what the
// API stored in the model's own type.
func TestStatusPageCRUD(t *testing.T) {
	h := newHarness(t)
	var created apiv1.StatusPageView
	resp := h.mustJSON("POST", "/v1/status-pages", acmePage, http.StatusCreated, &created)
	if resp.Header.Get("Location") != "/v1/status-pages/"+created.ID || created.Slug != "acme" || created.Tenant != model.DefaultTenant ||
		!created.CreatedAt.Equal(t0) || !created.UpdatedAt.Equal(t0) || len(created.Groups) != 2 ||
		created.Groups[0].Selector["team"] != "search" || created.Description != "Our servers.\nLive." {
		t.Fatalf("created %+v (Location %q)", created, resp.Header.Get("Location"))
	}

	doc, err := h.store.GetObject(t.Context(), store.KindStatusPage, created.ID)
	if err != nil {
		t.Fatal(err)
	}
	stored, err := model.DecodeStatusPage(doc)
	if err != nil || stored.Validate() != nil || stored.Host != "status.acme.example" || stored.Groups[1].Name != "All" {
		t.Fatalf("stored page %+v, %v", stored, err)
	}

	h.mustJSON("POST", "/v1/status-pages", `{"slug":"aardvark","title":"A"}`, http.StatusCreated, nil)
	var list apiv1.StatusPageList
	h.mustJSON("GET", "/v1/status-pages", "", http.StatusOK, &list)
	if len(list.Items) != 2 || list.Items[0].Slug != "aardvark" || list.Items[1].ID != created.ID {
		t.Fatalf("list %+v, want both pages in slug order", list)
	}

	h.clock.Advance(time.Hour)
	var replaced apiv1.StatusPageView
	h.mustJSON("PUT", "/v1/status-pages/"+created.ID, `{"slug":"acme","title":"Acme (new)"}`, http.StatusOK, &replaced)
	if replaced.ID != created.ID || replaced.Title != "Acme (new)" || replaced.Host != "" || len(replaced.Groups) != 0 ||
		!replaced.CreatedAt.Equal(t0) || !replaced.UpdatedAt.Equal(t0.Add(time.Hour)) {
		t.Fatalf("replaced %+v", replaced)
	}
	var got apiv1.StatusPageView
	h.mustJSON("GET", "/v1/status-pages/"+created.ID, "", http.StatusOK, &got)
	if got.Title != "Acme (new)" {
		t.Fatalf("after PUT, GET = %+v", got)
	}

	h.mustJSON("DELETE", "/v1/status-pages/"+created.ID, "", http.StatusNoContent, nil)
	h.mustJSON("GET", "/v1/status-pages/"+created.ID, "", http.StatusNotFound, nil)
	h.mustJSON("PUT", "/v1/status-pages/"+created.ID, `{"slug":"acme","title":"x"}`, http.StatusNotFound, nil)
	h.mustJSON("DELETE", "/v1/status-pages/"+created.ID, "", http.StatusNotFound, nil)
	h.mustJSON("GET", "/v1/status-pages", "", http.StatusOK, &list)
	if len(list.Items) != 1 {
		t.Fatalf("after delete, list %+v", list)
	}
}

// problemPointers decodes a problem and returns its field pointers.
func problemPointers(t *testing.T, b []byte) []string {
	t.Helper()
	var p apiv1.Problem
	if err := json.Unmarshal(b, &p); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	var out []string
	for _, fe := range p.Errors {
		out = append(out, fe.Pointer)
	}
	return out
}

// TestStatusPageProblemsNameEachField: every broken rule is a field
// error naming its JSON pointer, all of them in field order, and nothing
// is stored.
func TestStatusPageProblemsNameEachField(t *testing.T) {
	long := func(n int) string { return strings.Repeat("x", n) }
	for _, c := range []struct {
		name, body string
		want       []string
	}{
		{"missing slug and title", `{}`, []string{"#/slug", "#/title"}},
		{"bad slug", `{"slug":"Not A Slug","title":"t"}`, []string{"#/slug"}},
		{"short slug", `{"slug":"ab","title":"t"}`, []string{"#/slug"}},
		{"control character in the title", `{"slug":"acme","title":"a\u001b[31m"}`, []string{"#/title"}},
		{"bidi override in the title", `{"slug":"acme","title":"a\u202eb"}`, []string{"#/title"}},
		{"long title", `{"slug":"acme","title":"` + long(model.MaxPageTitle+1) + `"}`, []string{"#/title"}},
		{"newline in the title", `{"slug":"acme","title":"a\nb"}`, []string{"#/title"}},
		{"carriage return in the description", `{"slug":"acme","title":"t","description":"a\r\nb"}`, []string{"#/description"}},
		{"long description", `{"slug":"acme","title":"t","description":"` + long(model.MaxPageDescription+1) + `"}`, []string{"#/description"}},
		{"http logo", `{"slug":"acme","title":"t","logoUrl":"http://cdn.example.com/l.png"}`, []string{"#/logoUrl"}},
		{"logo with a secret", `{"slug":"acme","title":"t","logoUrl":"https://cdn.example.com/l.png?sig=abc"}`, []string{"#/logoUrl"}},
		{"host with a port", `{"slug":"acme","title":"t","host":"status.example.com:443"}`, []string{"#/host"}},
		{"IP host", `{"slug":"acme","title":"t","host":"203.0.113.9"}`, []string{"#/host"}},
		{"localhost", `{"slug":"acme","title":"t","host":"localhost"}`, []string{"#/host"}},
		{"a name under localhost", `{"slug":"acme","title":"t","host":"status.localhost"}`, []string{"#/host"}},
		{"the API's own host", `{"slug":"acme","title":"t","host":"mcpmon.example.com"}`, []string{"#/host"}},
		{"too many groups", `{"slug":"acme","title":"t","groups":[` + strings.Repeat(`{"name":"g"},`, model.MaxPageGroups) + `{"name":"g"}]}`, []string{"#/groups"}},
		{"group without a name", `{"slug":"acme","title":"t","groups":[{"name":"ok"},{"name":" "}]}`, []string{"#/groups/1/name"}},
		{"group name with a control character", `{"slug":"acme","title":"t","groups":[{"name":"a\u0007"}]}`, []string{"#/groups/0/name"}},
		{"selector label name", `{"slug":"acme","title":"t","groups":[{"name":"g","selector":{"bad key":"v","team":"x"}}]}`, []string{"#/groups/0/selector/bad key"}},
		{"selector label value", `{"slug":"acme","title":"t","groups":[{"name":"g","selector":{"a/b":"\u0000"}}]}`, []string{"#/groups/0/selector/a~1b"}},
		{"big selector", `{"slug":"acme","title":"t","groups":[{"name":"g","selector":{` + selectorJSON(model.MaxGroupSelector+1) + `}}]}`, []string{"#/groups/0/selector"}},
		{"unknown field", `{"slug":"acme","title":"t","theme":"dark"}`, []string{"#/theme"}},
		{"all at once", `{"slug":"x","title":"","description":"a\u0000","logoUrl":"ftp://x","host":"*.example.com","groups":[{"name":""}]}`,
			[]string{"#/slug", "#/title", "#/description", "#/logoUrl", "#/host", "#/groups/0/name"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			// The deployment's own name (--api-hosts) is no page's: a
			// tenant's page at / of it could pose as mcpmon's sign-in.
			h := newHarness(t, func(o *api.Options) { o.AllowedHosts = []string{"mcpmon.example.com:443", "127.0.0.1"} })
			for _, method := range []string{"POST", "PUT"} {
				path := "/v1/status-pages"
				if method == "PUT" {
					var v apiv1.StatusPageView
					h.mustJSON("POST", path, `{"slug":"existing","title":"t"}`, http.StatusCreated, &v)
					path += "/" + v.ID
				}
				resp, b := h.do(method, path, "", c.body)
				if resp.StatusCode != http.StatusBadRequest || resp.Header.Get("Content-Type") != apiv1.ProblemContentType {
					t.Fatalf("%s: %d %s, want 400 problem+json", method, resp.StatusCode, b)
				}
				if got := problemPointers(t, b); !slices.Equal(got, c.want) {
					t.Fatalf("%s: pointers %q, want %q (%s)", method, got, c.want, b)
				}
			}
			var list apiv1.StatusPageList
			h.mustJSON("GET", "/v1/status-pages", "", http.StatusOK, &list)
			if len(list.Items) != 1 || list.Items[0].Slug != "existing" {
				t.Fatalf("a refused page changed the store: %+v", list)
			}
		})
	}
}

func selectorJSON(n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = fmt.Sprintf(`"k%d":"v"`, i)
	}
	return strings.Join(parts, ",")
}

// TestStatusPagesOfAnotherTenantAre404: another tenant's key reads,
// replaces and deletes no page of tenant a, each answered exactly like a
// missing page, and lists only its own.
func TestStatusPagesOfAnotherTenantAre404(t *testing.T) {
	ah := newAuthHarness(t)
	resp, b := ah.call("POST", "/v1/status-pages", ah.keys["a/write"], acmePage)
	var page apiv1.StatusPageView
	if resp.StatusCode != http.StatusCreated || json.Unmarshal(b, &page) != nil || page.Tenant != "a" {
		t.Fatalf("create: %d %s", resp.StatusCode, b)
	}
	for _, c := range []struct{ method, body string }{
		{"GET", ""}, {"PUT", `{"slug":"stolen","title":"mine now"}`}, {"DELETE", ""},
	} {
		resp, b := ah.call(c.method, "/v1/status-pages/"+page.ID, ah.keys["b/admin"], c.body)
		mresp, mb := ah.call(c.method, "/v1/status-pages/nosuchid", ah.keys["b/admin"], c.body)
		if resp.StatusCode != http.StatusNotFound || mresp.StatusCode != http.StatusNotFound ||
			problemDetail(b, page.ID) != problemDetail(mb, "nosuchid") {
			t.Errorf("%s another tenant's page: %d %s; a missing one: %d %s; want the same 404", c.method, resp.StatusCode, b, mresp.StatusCode, mb)
		}
	}
	_, b = ah.call("GET", "/v1/status-pages", ah.keys["b/admin"], "")
	if ids := listIDs(t, b, "items"); len(ids) != 0 {
		t.Errorf("tenant b lists %v", ids)
	}
	resp, b = ah.call("GET", "/v1/status-pages/"+page.ID, ah.keys["a/read"], "")
	var got apiv1.StatusPageView
	if resp.StatusCode != http.StatusOK || json.Unmarshal(b, &got) != nil || got.Title != "Acme status" {
		t.Fatalf("tenant a after b's attempts: %d %s", resp.StatusCode, b)
	}
}

// TestStatusPageQuota: a tenant past --max-status-pages-per-tenant gets
// the quota problem; another tenant is not counted, and a delete frees a
// place.
func TestStatusPageQuota(t *testing.T) {
	ah := newAuthHarness(t, withQuotas(api.Quotas{MaxStatusPages: 2}))
	create := func(key, slug string) (*http.Response, []byte) {
		return ah.call("POST", "/v1/status-pages", ah.keys[key], fmt.Sprintf(`{"slug":%q,"title":"t"}`, slug))
	}
	var first apiv1.StatusPageView
	for i, slug := range []string{"page-one", "page-two"} {
		resp, b := create("a/write", slug)
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("page %d: %d %s", i, resp.StatusCode, b)
		}
		if i == 0 {
			_ = json.Unmarshal(b, &first)
		}
	}
	resp, b := create("a/write", "page-three")
	wantQuotaProblem(t, resp, b, "--max-status-pages-per-tenant")
	if resp, b := create("b/admin", "page-b"); resp.StatusCode != http.StatusCreated {
		t.Fatalf("tenant b at a's limit: %d %s", resp.StatusCode, b)
	}
	// A replacement is no new page.
	if resp, b := ah.call("PUT", "/v1/status-pages/"+first.ID, ah.keys["a/write"], `{"slug":"page-one","title":"again"}`); resp.StatusCode != http.StatusOK {
		t.Fatalf("PUT at the limit: %d %s", resp.StatusCode, b)
	}
	if resp, b := ah.call("DELETE", "/v1/status-pages/"+first.ID, ah.keys["a/write"], ""); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("delete: %d %s", resp.StatusCode, b)
	}
	if resp, b := create("a/write", "page-three"); resp.StatusCode != http.StatusCreated {
		t.Fatalf("after a delete: %d %s", resp.StatusCode, b)
	}
}

// TestStatusPageNamesAreOneNamespace: a page's slug is refused while
// another page (of any tenant) or a public endpoint holds it, an endpoint
// cannot go public under a page's slug, a host serves one page, and a
// page keeps its own names when replaced. (A host holds its name once
// verified: statuspages_host_test.go.)
func TestStatusPageNamesAreOneNamespace(t *testing.T) {
	z := testpeers.NewDNSZone(t)
	ah := newAuthHarness(t, withDNS(z))
	conflict := func(what string, resp *http.Response, b []byte, pointers ...string) {
		t.Helper()
		if resp.StatusCode != http.StatusConflict || resp.Header.Get("Content-Type") != apiv1.ProblemContentType {
			t.Fatalf("%s: %d %s, want 409 problem+json", what, resp.StatusCode, b)
		}
		if got := problemPointers(t, b); !slices.Equal(got, pointers) {
			t.Fatalf("%s: pointers %q, want %q (%s)", what, got, pointers, b)
		}
	}
	resp, b := ah.call("POST", "/v1/status-pages", ah.keys["a/write"], acmePage)
	var acme apiv1.StatusPageView
	if resp.StatusCode != http.StatusCreated || json.Unmarshal(b, &acme) != nil {
		t.Fatalf("create: %d %s", resp.StatusCode, b)
	}
	z.SetTXT(challenge, acme.HostVerification.Value)
	if resp, b := ah.call("POST", "/v1/status-pages/"+acme.ID+"/verify-host", ah.keys["a/write"], ""); resp.StatusCode != http.StatusOK {
		t.Fatalf("verify-host: %d %s", resp.StatusCode, b)
	}

	resp, b = ah.call("POST", "/v1/status-pages", ah.keys["b/admin"], `{"slug":"acme","title":"squat"}`)
	conflict("another tenant's page slug", resp, b, "#/slug")
	resp, b = ah.call("POST", "/v1/status-pages", ah.keys["b/admin"], `{"slug":"other","title":"t","host":"status.acme.example"}`)
	conflict("another page's host", resp, b, "#/host")
	resp, b = ah.call("POST", "/v1/status-pages", ah.keys["a/write"], `{"slug":"acme","title":"t","host":"status.acme.example"}`)
	conflict("both names", resp, b, "#/slug", "#/host")

	// Endpoints: a public one cannot take a page's slug; a private one
	// reserves nothing and may carry it.
	resp, b = ah.call("POST", "/v1/endpoints", ah.keys["b/admin"], `{"name":"e","url":"https://mcp.example.com/mcp","public":true,"slug":"acme"}`)
	conflict("public endpoint under a page slug", resp, b, "#/slug")
	resp, b = ah.call("POST", "/v1/endpoints", ah.keys["a/write"], `{"name":"e","url":"https://mcp.example.com/mcp","slug":"acme"}`)
	var private apiv1.EndpointView
	if resp.StatusCode != http.StatusCreated || json.Unmarshal(b, &private) != nil {
		t.Fatalf("private endpoint with a page's slug: %d %s", resp.StatusCode, b)
	}
	resp, b = ah.call("PATCH", "/v1/endpoints/"+private.ID, ah.keys["a/write"], `{"public":true}`)
	conflict("making an endpoint public under a page slug", resp, b, "#/slug")

	resp, b = ah.call("POST", "/v1/endpoints", ah.keys["b/admin"], `{"name":"pub","url":"https://mcp.example.com/mcp","public":true,"slug":"public-ep"}`)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("public endpoint: %d %s", resp.StatusCode, b)
	}
	resp, b = ah.call("POST", "/v1/status-pages", ah.keys["a/write"], `{"slug":"public-ep","title":"t"}`)
	conflict("a page under a public endpoint's slug", resp, b, "#/slug")

	// A page keeps its own names; freed names are free.
	resp, b = ah.call("PUT", "/v1/status-pages/"+acme.ID, ah.keys["a/write"], acmePage)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("PUT keeping its own slug and host: %d %s", resp.StatusCode, b)
	}
	if resp, b := ah.call("DELETE", "/v1/status-pages/"+acme.ID, ah.keys["a/write"], ""); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("delete: %d %s", resp.StatusCode, b)
	}
	resp, b = ah.call("POST", "/v1/status-pages", ah.keys["b/admin"], `{"slug":"acme","title":"t","host":"status.acme.example"}`)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("names after the delete: %d %s", resp.StatusCode, b)
	}
}
