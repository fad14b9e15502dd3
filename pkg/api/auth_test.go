package api_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/mcpmon/mcpmon/pkg/api"
	"github.com/mcpmon/mcpmon/pkg/api/apispec"
	apiv1 "github.com/mcpmon/mcpmon/pkg/api/v1"
	"github.com/mcpmon/mcpmon/pkg/auth"
	"github.com/mcpmon/mcpmon/pkg/model"
)

// What the process wires into Options.
var (
	_ api.Authenticator = (*auth.Keyring)(nil)
	_ api.KeyManager    = (*auth.Keyring)(nil)
)

// tenantRule is what a key of another tenant must see of tenant A's object.
type tenantRule int

const (
	// notFound: a request naming A's object is 404, as if it did not exist.
	notFound tenantRule = iota + 1
	// absent: a list does not show A's object.
	absent
	// ownTenant: what B creates lands in B's tenant: A's list does not show it.
	ownTenant
	// operator: the route is the default tenant's (the operator's) alone;
	// any other tenant's admin gets 404, as for a path that does not exist.
	operator
	// agentOnly: only an agent key opens the route; any other tenant's
	// admin key is 403 (what an agent of another tenant sees is
	// TestAgentExchangeStaysInItsTenantAndLocation's).
	agentOnly
)

// routeCase is one row of the route table: the scope a route needs, a sample
// request (placeholders {endpoint}, {incident}, {maintenance}, {page}, {key} name
// objects of tenant A, seeded fresh for each route) and how another tenant
// must see it.
type routeCase struct {
	scope  auth.Scope
	path   string
	body   string
	tenant tenantRule
	// object is the placeholder whose ID must not show in B's list (absent).
	object string
	// list is tenant A's list that must not show what B created (ownTenant).
	list string
}

// publicRoutes are the routes served without a key, by route to a sample
// path: the API's own documentation. Every other route needs a row in
// routeTable.
var publicRoutes = map[string]string{
	"GET /v1/openapi.json": "/v1/openapi.json",
	"GET /docs":            "/docs",
}

// routeTable has one row per route on the router. A route added to api.New
// without a row here fails TestEveryRouteRequiresAKey.
var routeTable = map[string]routeCase{
	"GET /v1/endpoints/": {scope: auth.ScopeRead, path: "/v1/endpoints", tenant: absent, object: "{endpoint}"},
	"POST /v1/endpoints/": {scope: auth.ScopeWrite, path: "/v1/endpoints", tenant: ownTenant, list: "/v1/endpoints",
		body: `{"name":"walk","url":"https://mcp.example.com/mcp","schedule":"@every 30s"}`},
	"GET /v1/endpoints/{id}":             {scope: auth.ScopeRead, path: "/v1/endpoints/{endpoint}", tenant: notFound},
	"PATCH /v1/endpoints/{id}":           {scope: auth.ScopeWrite, path: "/v1/endpoints/{endpoint}", body: `{"paused":true}`, tenant: notFound},
	"DELETE /v1/endpoints/{id}":          {scope: auth.ScopeWrite, path: "/v1/endpoints/{endpoint}", tenant: notFound},
	"GET /v1/endpoints/{id}/verdicts":    {scope: auth.ScopeRead, path: "/v1/endpoints/{endpoint}/verdicts", tenant: notFound},
	"GET /v1/endpoints/{id}/uptime":      {scope: auth.ScopeRead, path: "/v1/endpoints/{endpoint}/uptime?range=7d", tenant: notFound},
	"GET /v1/endpoints/{id}/history":     {scope: auth.ScopeRead, path: "/v1/endpoints/{endpoint}/history?days=30", tenant: notFound},
	"GET /v1/endpoints/{id}/catalog":     {scope: auth.ScopeRead, path: "/v1/endpoints/{endpoint}/catalog", tenant: notFound},
	"GET /v1/endpoints/{id}/events":      {scope: auth.ScopeRead, path: "/v1/endpoints/{endpoint}/events?kind=catalog_breaking", tenant: notFound},
	"GET /v1/endpoints/{id}/conformance": {scope: auth.ScopeRead, path: "/v1/endpoints/{endpoint}/conformance", tenant: notFound},
	"POST /v1/endpoints/{id}/probe":      {scope: auth.ScopeWrite, path: "/v1/endpoints/{endpoint}/probe", tenant: notFound},
	"GET /v1/incidents/":                 {scope: auth.ScopeRead, path: "/v1/incidents", tenant: absent, object: "{incident}"},
	"GET /v1/incidents/{id}":             {scope: auth.ScopeRead, path: "/v1/incidents/{incident}", tenant: notFound},
	"POST /v1/incidents/{id}/ack":        {scope: auth.ScopeWrite, path: "/v1/incidents/{incident}/ack", tenant: notFound},
	"POST /v1/incidents/{id}/updates": {scope: auth.ScopeWrite, path: "/v1/incidents/{incident}/updates", tenant: notFound,
		body: `{"status":"investigating","message":"walk"}`},
	"GET /v1/maintenance/": {scope: auth.ScopeRead, path: "/v1/maintenance", tenant: absent, object: "{maintenance}"},
	"POST /v1/maintenance/": {scope: auth.ScopeWrite, path: "/v1/maintenance", tenant: ownTenant, list: "/v1/maintenance",
		body: `{"name":"walk","endpointIds":["x"],"start":"2026-03-02T01:00:00Z","end":"2026-03-02T02:00:00Z"}`},
	"GET /v1/maintenance/{id}": {scope: auth.ScopeRead, path: "/v1/maintenance/{maintenance}", tenant: notFound},
	"PUT /v1/maintenance/{id}": {scope: auth.ScopeWrite, path: "/v1/maintenance/{maintenance}", tenant: notFound,
		body: `{"name":"walk","endpointIds":["x"],"start":"2026-03-02T01:00:00Z","end":"2026-03-02T02:00:00Z"}`},
	"DELETE /v1/maintenance/{id}": {scope: auth.ScopeWrite, path: "/v1/maintenance/{maintenance}", tenant: notFound},
	"GET /v1/status-pages/":       {scope: auth.ScopeRead, path: "/v1/status-pages", tenant: absent, object: "{page}"},
	"POST /v1/status-pages/": {scope: auth.ScopeWrite, path: "/v1/status-pages", tenant: ownTenant, list: "/v1/status-pages",
		body: `{"slug":"walk-page","title":"walk"}`},
	"GET /v1/status-pages/{id}": {scope: auth.ScopeRead, path: "/v1/status-pages/{page}", tenant: notFound},
	"PUT /v1/status-pages/{id}": {scope: auth.ScopeWrite, path: "/v1/status-pages/{page}", tenant: notFound,
		body: `{"slug":"walk-put","title":"walk"}`},
	"DELETE /v1/status-pages/{id}":                            {scope: auth.ScopeWrite, path: "/v1/status-pages/{page}", tenant: notFound},
	"POST /v1/status-pages/{id}/verify-host":                  {scope: auth.ScopeWrite, path: "/v1/status-pages/{page}/verify-host", tenant: notFound},
	"GET /v1/status-pages/{id}/subscribers":                   {scope: auth.ScopeRead, path: "/v1/status-pages/{page}/subscribers", tenant: notFound},
	"POST /v1/status-pages/{id}/subscribers":                  {scope: auth.ScopeWrite, path: "/v1/status-pages/{page}/subscribers", tenant: notFound},
	"DELETE /v1/status-pages/{id}/subscribers/{subscriberId}": {scope: auth.ScopeWrite, path: "/v1/status-pages/{page}/subscribers/nosuch", tenant: notFound},
	"GET /v1/keys/":                      {scope: auth.ScopeAdmin, path: "/v1/keys", tenant: absent, object: "{key}"},
	"POST /v1/keys/":                     {scope: auth.ScopeAdmin, path: "/v1/keys", body: `{"name":"walk","scope":"read"}`, tenant: ownTenant, list: "/v1/keys"},
	"DELETE /v1/keys/{id}":               {scope: auth.ScopeAdmin, path: "/v1/keys/{key}", tenant: notFound},
	"GET /v1/agents/":                    {scope: auth.ScopeWrite, path: "/v1/agents", tenant: absent, object: "{agent}"},
	"POST /v1/agents/":                   {scope: auth.ScopeWrite, path: "/v1/agents", body: `{"name":"walk-agent","location":"walk"}`, tenant: ownTenant, list: "/v1/agents"},
	"GET /v1/agents/{id}":                {scope: auth.ScopeWrite, path: "/v1/agents/{agent}", tenant: notFound},
	"DELETE /v1/agents/{id}":             {scope: auth.ScopeWrite, path: "/v1/agents/{agent}", tenant: notFound},
	"GET /v1/agent/commands":             {scope: auth.ScopeAgent, path: "/v1/agent/commands?wait=0s", tenant: agentOnly},
	"POST /v1/agent/results":             {scope: auth.ScopeAgent, path: "/v1/agent/results", body: `{"results":[]}`, tenant: agentOnly},
	"GET /v1/audit/":                     {scope: auth.ScopeAdmin, path: "/v1/audit", tenant: absent, object: "{endpoint}"},
	"GET /v1/dlq/":                       {scope: auth.ScopeAdmin, path: "/v1/dlq", tenant: operator},
	"GET /v1/dlq/{queue}/messages":       {scope: auth.ScopeAdmin, path: "/v1/dlq/verdicts/messages", tenant: operator},
	"POST /v1/dlq/{queue}/redrive":       {scope: auth.ScopeAdmin, path: "/v1/dlq/verdicts/redrive", body: `{}`, tenant: operator},
	"POST /v1/dlq/{queue}/purge":         {scope: auth.ScopeAdmin, path: "/v1/dlq/verdicts/purge", body: `{}`, tenant: operator},
	"POST /v1/status-page-hosts/release": {scope: auth.ScopeAdmin, path: "/v1/status-page-hosts/release", body: `{"host":"status.walk.example"}`, tenant: operator},
}

// authHarness is the real router with keys on, keys of every scope in
// tenant "a" and an admin key in tenant "b".
type authHarness struct {
	*harness
	keyring *auth.Keyring
	keys    map[string]string // "a/read", "a/write", "a/admin", "b/admin" → key
	seq     int
}

func newAuthHarness(t *testing.T, tweak ...func(*api.Options)) *authHarness {
	t.Helper()
	ah := &authHarness{keys: map[string]string{}}
	ah.harness = newHarness(t, append([]func(*api.Options){func(o *api.Options) {
		ah.keyring = auth.NewKeyring(o.Store, auth.Options{Clock: o.Clock})
		o.Authenticator, o.Keys = ah.keyring, ah.keyring
		// The route walks present hundreds of bad keys from one address;
		// the failure budget has its own test below.
		o.AuthFailures = auth.NewFailureLimiter(auth.FailureLimits{Burst: 1 << 20})
	}}, tweak...)...)
	for _, tk := range []struct {
		tenant string
		scope  auth.Scope
	}{{"a", auth.ScopeRead}, {"a", auth.ScopeWrite}, {"a", auth.ScopeAdmin}, {"b", auth.ScopeAdmin}, {"a", auth.ScopeAgent}} {
		nk := auth.NewKey{Name: string(tk.scope), Tenant: tk.tenant, Scope: tk.scope}
		if tk.scope == auth.ScopeAgent {
			nk.Location = "office"
		}
		secret, _, err := ah.keyring.Create(t.Context(), nk)
		if err != nil {
			t.Fatal(err)
		}
		ah.keys[tk.tenant+"/"+string(tk.scope)] = secret
	}
	return ah
}

// call sends a request with key ("" for none); state-changing requests are
// JSON so the content-type guard lets them through to the auth check.
func (ah *authHarness) call(method, path, key, body string) (*http.Response, []byte) {
	ah.t.Helper()
	req, err := http.NewRequestWithContext(ah.t.Context(), method, ah.srv.URL+path, strings.NewReader(body))
	if err != nil {
		ah.t.Fatal(err)
	}
	if method != http.MethodGet && method != http.MethodHead && method != http.MethodDelete {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := ah.srv.Client().Do(req)
	if err != nil {
		ah.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

// seed creates a fresh object of every kind in tenant A and returns the
// placeholder → ID map.
func (ah *authHarness) seed() map[string]string {
	ah.t.Helper()
	ah.seq++
	ids := map[string]string{}
	var ep apiv1.EndpointView
	resp, b := ah.call("POST", "/v1/endpoints", ah.keys["a/write"], fmt.Sprintf(`{"name":"a-%d","url":"https://mcp.example.com/mcp","schedule":"@every 30s"}`, ah.seq))
	if resp.StatusCode != http.StatusCreated || json.Unmarshal(b, &ep) != nil {
		ah.t.Fatalf("seed endpoint: %d %s", resp.StatusCode, b)
	}
	ids["{endpoint}"] = ep.ID
	ids["{incident}"] = seedIncident(ah.t, ah.harness, fmt.Sprintf("inc-a-%d", ah.seq), ep.ID, model.IncidentOpen).ID
	var m apiv1.MaintenanceView
	resp, b = ah.call("POST", "/v1/maintenance", ah.keys["a/write"], `{"name":"a","endpointIds":["x"],"start":"2026-03-02T01:00:00Z","end":"2026-03-02T02:00:00Z"}`)
	if resp.StatusCode != http.StatusCreated || json.Unmarshal(b, &m) != nil {
		ah.t.Fatalf("seed maintenance: %d %s", resp.StatusCode, b)
	}
	ids["{maintenance}"] = m.ID
	var page apiv1.StatusPageView
	resp, b = ah.call("POST", "/v1/status-pages", ah.keys["a/write"], fmt.Sprintf(`{"slug":"seed-%d","title":"a"}`, ah.seq))
	if resp.StatusCode != http.StatusCreated || json.Unmarshal(b, &page) != nil {
		ah.t.Fatalf("seed status page: %d %s", resp.StatusCode, b)
	}
	ids["{page}"] = page.ID
	_, k, err := ah.keyring.Create(ah.t.Context(), auth.NewKey{Name: fmt.Sprintf("victim-%d", ah.seq), Tenant: "a", Scope: auth.ScopeRead})
	if err != nil {
		ah.t.Fatal(err)
	}
	ids["{key}"] = k.ID
	_, ag, err := ah.keyring.Create(ah.t.Context(), auth.NewKey{Name: fmt.Sprintf("agent-%d", ah.seq), Tenant: "a", Scope: auth.ScopeAgent, Location: "office"})
	if err != nil {
		ah.t.Fatal(err)
	}
	ids["{agent}"] = ag.ID
	return ids
}

// placeholderIn returns the placeholder path names.
func placeholderIn(path string) string {
	for _, ph := range []string{"{endpoint}", "{incident}", "{maintenance}", "{page}", "{key}", "{agent}"} {
		if strings.Contains(path, ph) {
			return ph
		}
	}
	return ""
}

// problemDetail is a problem's detail and instance with id replaced, so
// two 404s compare equal when only the ID they name differs.
func problemDetail(body []byte, id string) string {
	var p apiv1.Problem
	if json.Unmarshal(body, &p) != nil {
		return string(body)
	}
	return strings.ReplaceAll(p.Title+"|"+p.Detail+"|"+p.Instance+"|"+p.Type, id, "ID")
}

// snapshot is what tenant a's admin sees of the seeded objects: another
// tenant's request must leave it as it was.
func (ah *authHarness) snapshot(ids map[string]string) string {
	ah.t.Helper()
	var out strings.Builder
	for _, path := range []string{"/v1/endpoints/{endpoint}", "/v1/incidents/{incident}", "/v1/maintenance/{maintenance}", "/v1/status-pages/{page}"} {
		resp, b := ah.call(http.MethodGet, fill(path, ids), ah.keys["a/admin"], "")
		fmt.Fprintf(&out, "%d %s\n", resp.StatusCode, b)
	}
	_, keys := ah.call(http.MethodGet, "/v1/keys", ah.keys["a/admin"], "")
	fmt.Fprintf(&out, "key listed: %v", hasID(keys, ids["{key}"]))
	return out.String()
}

func fill(path string, ids map[string]string) string {
	for ph, id := range ids {
		path = strings.ReplaceAll(path, ph, id)
	}
	return path
}

func smallerScope(s auth.Scope) auth.Scope {
	switch s {
	case auth.ScopeAdmin:
		return auth.ScopeWrite
	case auth.ScopeWrite:
		return auth.ScopeRead
	}
	return ""
}

func hasID(body []byte, id string) bool { return strings.Contains(string(body), `"id":"`+id+`"`) }

// TestEveryRouteRequiresAKey walks every route on the router and proves, for
// each: 401 (problem+json, WWW-Authenticate: Bearer) without a key or with a
// bad one, 403 with a key one scope too small, that the table's scope is
// enough, and that another tenant's key cannot see tenant A's objects.
func TestEveryRouteRequiresAKey(t *testing.T) {
	ah := newAuthHarness(t)
	routes, ok := api.New(api.Options{Store: ah.store}).(chi.Routes)
	if !ok {
		t.Fatal("api.New does not return a chi router")
	}
	walked := map[string]bool{}
	err := chi.Walk(routes, func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		walked[method+" "+route] = true
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for route, path := range publicRoutes {
		if !walked[route] {
			t.Errorf("publicRoutes has %s, which the router does not serve", route)
			continue
		}
		// Public on purpose, and only these: each answers a request
		// without a key.
		if resp, b := ah.call(http.MethodGet, path, "", ""); resp.StatusCode != http.StatusOK {
			t.Errorf("public %s without a key = %d %.200s, want 200", route, resp.StatusCode, b)
		}
	}
	// openapi.yaml names the scope each route needs: it must be the one
	// this table proves, and none for the public routes.
	spec, err := apispec.Load()
	if err != nil {
		t.Fatal(err)
	}
	scopes := spec.Scopes()
	for route := range walked {
		method, pattern, _ := strings.Cut(route, " ")
		op := method + " " + strings.TrimSuffix(pattern, "/")
		want := []string{}
		if rc, ok := routeTable[route]; ok {
			want = []string{string(rc.scope)}
		}
		if got, ok := scopes[op]; ok && !slices.Equal(got, want) {
			t.Errorf("openapi.yaml says %s needs scopes %q; the API enforces %q: fix its security requirement", op, got, want)
		}
	}
	for route := range walked {
		if _, ok := publicRoutes[route]; ok {
			continue
		}
		if _, ok := routeTable[route]; !ok {
			t.Errorf("route %s has no row in routeTable: add its scope, a sample path and its tenant rule", route)
		}
	}
	for route := range routeTable {
		if !walked[route] {
			t.Errorf("routeTable has %s, which the router does not serve", route)
		}
	}

	for route, rc := range routeTable {
		if !walked[route] {
			continue
		}
		method, _, _ := strings.Cut(route, " ")
		t.Run(route, func(t *testing.T) {
			ids := ah.seed()
			path := fill(rc.path, ids)

			for name, key := range map[string]string{"no key": "", "unknown key": auth.Generate(), "malformed key": "s3cret"} {
				resp, b := ah.call(method, path, key, rc.body)
				if resp.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") ||
					resp.Header.Get("Content-Type") != apiv1.ProblemContentType {
					t.Errorf("%s: %d %q %s, want 401 problem+json with WWW-Authenticate: Bearer", name, resp.StatusCode, resp.Header.Get("WWW-Authenticate"), b)
				}
			}
			if small := smallerScope(rc.scope); small != "" {
				resp, b := ah.call(method, path, ah.keys["a/"+string(small)], rc.body)
				if resp.StatusCode != http.StatusForbidden || resp.Header.Get("Content-Type") != apiv1.ProblemContentType {
					t.Errorf("%s key: %d %s, want 403 problem+json", small, resp.StatusCode, b)
				}
			}

			t.Run("other tenant", func(t *testing.T) {
				var problem string
				before := ah.snapshot(ids)
				resp, b := ah.call(method, path, ah.keys["b/admin"], rc.body)
				if after := ah.snapshot(ids); after != before {
					t.Errorf("tenant b's %s changed tenant a's objects:\nbefore %s\nafter  %s", route, before, after)
				}
				switch rc.tenant {
				case notFound:
					// Exactly what a missing object answers: no oracle.
					missing := strings.ReplaceAll(rc.path, "{endpoint}", "nosuchid")
					for _, ph := range []string{"{incident}", "{maintenance}", "{page}", "{key}", "{agent}"} {
						missing = strings.ReplaceAll(missing, ph, "nosuchid")
					}
					mresp, mb := ah.call(method, missing, ah.keys["b/admin"], rc.body)
					id := ids[placeholderIn(rc.path)]
					if resp.StatusCode != http.StatusNotFound || resp.Header.Get("Content-Type") != apiv1.ProblemContentType {
						problem = fmt.Sprintf("%d %s, want 404 problem+json", resp.StatusCode, b)
					} else if got, want := problemDetail(b, id), problemDetail(mb, "nosuchid"); mresp.StatusCode != http.StatusNotFound || got != want {
						problem = fmt.Sprintf("another tenant's object answers %q, a missing one %d %q: they must not differ", got, mresp.StatusCode, want)
					}
				case absent:
					if id := ids[rc.object]; resp.StatusCode != http.StatusOK || hasID(b, id) {
						problem = fmt.Sprintf("%d %s: want 200 without %s", resp.StatusCode, b, id)
					}
				case ownTenant:
					var created struct{ ID string }
					if resp.StatusCode >= 300 || json.Unmarshal(b, &created) != nil || created.ID == "" {
						t.Fatalf("%d %s, want it created", resp.StatusCode, b)
					}
					if _, list := ah.call(http.MethodGet, rc.list, ah.keys["a/admin"], ""); hasID(list, created.ID) {
						problem = fmt.Sprintf("tenant a's %s shows %s, created by tenant b", rc.list, created.ID)
					}
				case agentOnly:
					if resp.StatusCode != http.StatusForbidden || resp.Header.Get("Content-Type") != apiv1.ProblemContentType {
						problem = fmt.Sprintf("%d %s, want 403 problem+json: only an agent key opens it", resp.StatusCode, b)
					}
				case operator:
					if resp.StatusCode != http.StatusNotFound || resp.Header.Get("Content-Type") != apiv1.ProblemContentType {
						problem = fmt.Sprintf("%d %s, want 404 problem+json: only the operator's tenant sees it", resp.StatusCode, b)
					}
				default:
					t.Fatal("no tenant rule")
				}
				if problem != "" {
					t.Error(problem)
				}
			})

			// The table's scope is enough (last: it may delete the object).
			resp, b := ah.call(method, path, ah.keys["a/"+string(rc.scope)], rc.body)
			if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden {
				t.Errorf("%s key: %d %s, want the route to admit it", rc.scope, resp.StatusCode, b)
			}
		})
	}
}

// TestUnknownV1PathNeedsAKey: without a key, /v1 does not say which paths
// exist.
func TestUnknownV1PathNeedsAKey(t *testing.T) {
	ah := newAuthHarness(t)
	if resp, b := ah.call("GET", "/v1/nothing-here", "", ""); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("GET /v1/nothing-here without a key = %d %s, want 401", resp.StatusCode, b)
	}
	if resp, _ := ah.call("GET", "/v1/nothing-here", ah.keys["a/read"], ""); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("with a key = %d, want 404", resp.StatusCode)
	}
}

// TestKeyLifecycleOverTheAPI: an admin creates a key (shown once), lists it
// (never shown again), the key works, is revoked, and is refused.
func TestKeyLifecycleOverTheAPI(t *testing.T) {
	ah := newAuthHarness(t)
	admin := ah.keys["a/admin"]
	resp, b := ah.call("POST", "/v1/keys", admin, `{"name":"deploy","scope":"write","expiresIn":"720h"}`)
	var created apiv1.KeyView
	if resp.StatusCode != http.StatusCreated || json.Unmarshal(b, &created) != nil {
		t.Fatalf("create: %d %s", resp.StatusCode, b)
	}
	if !strings.HasPrefix(created.Key, auth.Prefix) || created.Tenant != "a" || created.Scope != string(auth.ScopeWrite) ||
		created.Expires == nil || !created.Expires.Equal(t0.Add(720*time.Hour)) || resp.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("created %+v (Cache-Control %q)", created, resp.Header.Get("Cache-Control"))
	}
	if resp, b := ah.call("POST", "/v1/keys", admin, `{"name":"deploy","scope":"read"}`); resp.StatusCode != http.StatusConflict {
		t.Fatalf("a second live key named deploy: %d %s, want 409", resp.StatusCode, b)
	}
	for _, body := range []string{`{"name":"","scope":"read"}`, `{"name":"x","scope":"root"}`, `{"name":"x","scope":"read","expiresIn":"-1h"}`,
		`{"name":"x","scope":"read","expires":"2020-01-01T00:00:00Z"}`, `{"name":"x","scope":"read","key":"mcpmon_chosen"}`} {
		if resp, b := ah.call("POST", "/v1/keys", admin, body); resp.StatusCode != http.StatusBadRequest {
			t.Errorf("create %s: %d %s, want 400", body, resp.StatusCode, b)
		}
	}

	if resp, b := ah.call("GET", "/v1/endpoints", created.Key, ""); resp.StatusCode != http.StatusOK {
		t.Fatalf("the new key: %d %s", resp.StatusCode, b)
	}
	ah.clock.Advance(time.Minute)
	if err := ah.keyring.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	_, b = ah.call("GET", "/v1/keys", admin, "")
	if strings.Contains(string(b), created.Key) || strings.Contains(string(b), `"key"`) {
		t.Fatalf("the list shows a key: %s", b)
	}
	var list struct{ Keys []apiv1.KeyView }
	if err := json.Unmarshal(b, &list); err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, k := range list.Keys {
		if k.Tenant != "a" {
			t.Errorf("tenant a's list shows %+v", k)
		}
		if k.ID == created.ID {
			found = true
			if k.LastUsed == nil || !k.LastUsed.Equal(t0) || k.Status != "active" {
				t.Errorf("listed %+v: want active, last used at %s", k, t0)
			}
		}
	}
	if !found {
		t.Fatalf("list %s lacks %s", b, created.ID)
	}

	resp, b = ah.call("DELETE", "/v1/keys/"+created.ID, admin, "")
	var revoked apiv1.KeyView
	if resp.StatusCode != http.StatusOK || json.Unmarshal(b, &revoked) != nil || revoked.Status != "revoked" {
		t.Fatalf("revoke: %d %s", resp.StatusCode, b)
	}
	resp, b = ah.call("GET", "/v1/endpoints", created.Key, "")
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(resp.Header.Get("WWW-Authenticate"), `error="invalid_token"`) ||
		strings.Contains(string(b), "revoked") {
		t.Fatalf("the revoked key: %d %q %s, want 401 invalid_token that does not say it was revoked", resp.StatusCode, resp.Header.Get("WWW-Authenticate"), b)
	}
	if strings.Contains(ah.logs.String(), created.Key) || strings.Contains(ah.transcript.String(), admin) {
		t.Fatal("a key is in the logs or a response")
	}
}

// TestKeysRouteWithoutKeyManagement: with auth off there is nothing to
// manage, and /v1/keys says why.
func TestKeysRouteWithoutKeyManagement(t *testing.T) {
	h := newHarness(t)
	resp, b := h.do("GET", "/v1/keys", "", "")
	if resp.StatusCode != http.StatusNotFound || !strings.Contains(string(b), "--auth none") {
		t.Fatalf("GET /v1/keys without a key manager = %d %s", resp.StatusCode, b)
	}
}

// TestFailedAuthenticationsAreLimitedPerAddress: past its budget an
// address gets 429 problem+json with Retry-After, whatever key it sends,
// and a bad key never says whether it was unknown, expired or revoked.
func TestFailedAuthenticationsAreLimitedPerAddress(t *testing.T) {
	ah := newAuthHarness(t, func(o *api.Options) {
		o.AuthFailures = auth.NewFailureLimiter(auth.FailureLimits{Burst: 2})
	})
	var details []string
	for range 2 {
		resp, b := ah.call(http.MethodGet, "/v1/endpoints", auth.Generate(), "")
		if resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("bad key within the budget = %d %s, want 401", resp.StatusCode, b)
		}
		details = append(details, problemDetail(b, ""))
	}
	if details[0] != details[1] || strings.Contains(details[0], "expired") || strings.Contains(details[0], "revoked") {
		t.Errorf("401 details %q", details)
	}
	resp, b := ah.call(http.MethodGet, "/v1/endpoints", ah.keys["a/read"], "")
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" || resp.Header.Get("Content-Type") != apiv1.ProblemContentType {
		t.Fatalf("a good key from an address over its budget = %d (Retry-After %q) %s, want 429 problem+json with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"), b)
	}
}
