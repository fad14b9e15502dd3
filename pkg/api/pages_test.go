package api_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/mcpmon/mcpmon/pkg/api"
	"github.com/mcpmon/mcpmon/pkg/api/apispec"
	apiv1 "github.com/mcpmon/mcpmon/pkg/api/v1"
	"github.com/mcpmon/mcpmon/pkg/clock"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/msg"
	"github.com/mcpmon/mcpmon/pkg/store"
	"github.com/mcpmon/mcpmon/pkg/store/bolt"
	"github.com/mcpmon/mcpmon/pkg/store/redis"
	"github.com/mcpmon/mcpmon/pkg/testpeers"
)

// backends opens each store the API runs on, empty.
func backends(t *testing.T) map[string]func(t *testing.T) store.Store {
	return map[string]func(t *testing.T) store.Store{
		"bolt": func(t *testing.T) store.Store {
			st, err := bolt.Open(filepath.Join(t.TempDir(), "mcpmon.db"), bolt.Options{Clock: clock.NewFake(t0), SweepInterval: -1})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = st.Close() })
			return st
		},
		"redis": func(t *testing.T) store.Store {
			prefix := fmt.Sprintf("mcpmontest:pages%d:", rand.Uint64())
			st, err := redis.New(t.Context(), testpeers.RedisURL(t), redis.Options{Prefix: prefix, Clock: clock.NewFake(t0)})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				_ = st.Close()
				// Leave nothing behind in the shared Redis: only this
				// test's prefix, never FLUSHDB.
				o, err := goredis.ParseURL(testpeers.RedisURL(t))
				if err != nil {
					return
				}
				rdb := goredis.NewClient(o)
				defer rdb.Close()
				ctx := context.Background()
				for it := rdb.Scan(ctx, 0, prefix+"*", 1000).Iterator(); it.Next(ctx); {
					rdb.Del(ctx, it.Val())
				}
			})
			return st
		},
	}
}

type endpointPage struct {
	Endpoints  []apiv1.EndpointView `json:"endpoints"`
	NextCursor string               `json:"nextCursor"`
}

func getJSON(t *testing.T, srv *httptest.Server, path string, into any) {
	t.Helper()
	resp, err := srv.Client().Get(srv.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		var p apiv1.Problem
		_ = json.NewDecoder(resp.Body).Decode(&p)
		t.Fatalf("GET %s: %d %+v", path, resp.StatusCode, p)
	}
	if err := json.NewDecoder(resp.Body).Decode(into); err != nil {
		t.Fatal(err)
	}
}

// TestEndpointPagesReturnEachOnceWhileOthersChange: a walk of GET
// /v1/endpoints page by page, with creates, updates and deletes between
// pages, returns every endpoint that exists throughout exactly once, in ID
// order, and none deleted before its page — on both backends.
func TestEndpointPagesReturnEachOnceWhileOthersChange(t *testing.T) {
	n := testpeers.Size(1_000, 10_000)
	for name, open := range backends(t) {
		t.Run(name, func(t *testing.T) {
			st := open(t)
			rng := rand.New(rand.NewPCG(14, 2))
			newID := func() string { return fmt.Sprintf("%016x", rng.Uint64()) }
			srv := httptest.NewServer(apispec.Handler(t, api.New(api.Options{Store: st, Clock: clock.NewFake(t0), NewID: newID})))
			t.Cleanup(srv.Close)

			live := map[string]bool{}
			for range n {
				e, err := st.CreateEndpoint(t.Context(), model.Endpoint{ID: newID(), Name: "e", URL: "https://e.example/mcp", Schedule: "@every 1m", Timeout: time.Second})
				if err != nil {
					t.Fatal(err)
				}
				live[e.ID] = true
			}
			initial := slices.Sorted(func(yield func(string) bool) {
				for id := range live {
					yield(id)
				}
			})
			deleted := map[string]bool{}
			seen := map[string]int{}
			var order []string
			cursor, pages := "", 0
			for {
				path := "/v1/endpoints" // the default limit, 100
				if cursor != "" {
					path += "?cursor=" + url.QueryEscape(cursor)
				}
				var page endpointPage
				getJSON(t, srv, path, &page)
				pages++
				if len(page.Endpoints) > api.DefaultListLimit {
					t.Fatalf("page %d holds %d endpoints, over the default limit", pages, len(page.Endpoints))
				}
				for _, e := range page.Endpoints {
					if deleted[e.ID] {
						t.Fatalf("page %d returned %s, deleted before it was read", pages, e.ID)
					}
					seen[e.ID]++
					order = append(order, e.ID)
				}
				if page.NextCursor == "" {
					break
				}
				cursor = page.NextCursor
				// Between pages, over the API: creates on both sides of the
				// cursor, an update, and deletes of read and unread ones.
				for range 3 {
					resp, _ := doReq(t, srv, "POST", "/v1/endpoints", `{"name":"new","url":"https://new.example/mcp"}`)
					if resp.StatusCode != http.StatusCreated {
						t.Fatalf("create between pages: %d", resp.StatusCode)
					}
				}
				for range 3 {
					id := initial[rng.IntN(len(initial))]
					if !live[id] {
						continue
					}
					if resp, _ := doReq(t, srv, "DELETE", "/v1/endpoints/"+id, ""); resp.StatusCode != http.StatusNoContent {
						t.Fatalf("delete between pages: %d", resp.StatusCode)
					}
					delete(live, id)
					deleted[id] = true
				}
				if pages > n {
					t.Fatal("the walk does not end")
				}
			}
			if !slices.IsSorted(order) {
				t.Fatal("pages are not in ID order")
			}
			for id, c := range seen {
				if c != 1 {
					t.Fatalf("%s returned %d times", id, c)
				}
			}
			missing := 0
			for _, id := range initial {
				if live[id] && seen[id] != 1 {
					missing++
				}
			}
			if missing > 0 {
				t.Fatalf("%d endpoints that existed throughout were not returned", missing)
			}
			t.Logf("%d endpoints in %d pages, %d deleted during the walk", n, pages, len(deleted))
		})
	}
}

func doReq(t *testing.T, srv *httptest.Server, method, path, body string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

// wantFieldProblem asserts a 400 problem+json naming the query parameter.
func wantFieldProblem(t *testing.T, h *harness, path, param string) {
	t.Helper()
	resp, body := h.do("GET", path, "", "")
	if resp.StatusCode != http.StatusBadRequest || resp.Header.Get("Content-Type") != apiv1.ProblemContentType {
		t.Fatalf("GET %s = %d %s, want a 400 problem", path, resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	var p apiv1.Problem
	if err := json.Unmarshal(body, &p); err != nil {
		t.Fatal(err)
	}
	if len(p.Errors) != 1 || p.Errors[0].Pointer != "?"+param {
		t.Fatalf("GET %s: problem %+v, want one error naming ?%s", path, p, param)
	}
}

// TestEveryListRefusesBadCursorsAndLimits: a cursor that is not one the
// list handed out (garbage, edited, another list's) and a limit outside
// 1..1000 are 400 problems naming the parameter, on every list.
func TestEveryListRefusesBadCursorsAndLimits(t *testing.T) {
	h := newHarness(t)
	ep := h.create(`{"name":"a","url":"https://a.example/mcp"}`)
	enc := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	lists := []string{"/v1/endpoints", "/v1/incidents", "/v1/endpoints/" + ep.ID + "/verdicts", "/v1/maintenance", "/v1/audit"}
	for _, list := range lists {
		for _, c := range []string{
			"garbage", "!!!", enc(`{"v":1,"k":"endpoints"`), enc(`{"v":2,"k":"endpoints","id":"x"}`),
			enc(`{"v":1,"k":"keys","id":"x"}`), enc(`{"v":1,"k":"endpoints","id":"../x"}`),
			enc(`{"v":1,"k":"endpoints","id":"x","extra":1}`), strings.Repeat("A", 600),
		} {
			if list == "/v1/endpoints" && c == enc(`{"v":1,"k":"endpoints","id":"x"}`) {
				continue
			}
			wantFieldProblem(t, h, list+"?cursor="+url.QueryEscape(c), "cursor")
		}
		for _, l := range []string{"0", "-1", "1001", "x"} {
			wantFieldProblem(t, h, list+"?limit="+l, "limit")
		}
	}
}

// TestEndpointSelectorAndStateFilters: ?selector= keeps the endpoints whose
// labels match every term, ?state= those in one of the states, and a
// filtered page may be short or empty while nextCursor says more remain.
func TestEndpointSelectorAndStateFilters(t *testing.T) {
	h := newHarness(t)
	mk := func(name, labels string) apiv1.EndpointView {
		return h.create(fmt.Sprintf(`{"name":%q,"url":"https://%s.example/mcp","labels":%s}`, name, name, labels))
	}
	search := mk("search", `{"team":"search","env":"prod"}`)
	mk("searchdev", `{"team":"search","env":"dev"}`)
	mk("billing", `{"team":"billing","env":"prod"}`)
	mk("bare", `{}`)
	h.create(`{"name":"paused","url":"https://paused.example/mcp","paused":true}`)
	if _, err := h.store.RecordVerdict(t.Context(), msg.Verdict{Schema: 1, EndpointID: search.ID, Window: t0, WindowSecs: 60, State: msg.StateDown, Results: 1}); err != nil {
		t.Fatal(err)
	}
	ids := func(path string) []string {
		t.Helper()
		var out []string
		cursor := ""
		for {
			var page endpointPage
			p := path
			if cursor != "" {
				p += "&cursor=" + url.QueryEscape(cursor)
			}
			h.mustJSON("GET", p, "", http.StatusOK, &page)
			for _, e := range page.Endpoints {
				out = append(out, e.Name)
			}
			if page.NextCursor == "" {
				return out
			}
			cursor = page.NextCursor
		}
	}
	for _, c := range []struct {
		query string
		want  []string
	}{
		{"selector=team=search", []string{"search", "searchdev"}},
		{"selector=" + url.QueryEscape("team==search,env!=dev"), []string{"search"}},
		{"selector=" + url.QueryEscape("env!=prod"), []string{"bare", "paused", "searchdev"}},
		{"selector=" + url.QueryEscape("team in (search,billing),env notin (dev)"), []string{"billing", "search"}},
		{"state=down", []string{"search"}},
		{"state=pending", []string{"bare", "billing", "searchdev"}},
		{"state=paused,down", []string{"paused", "search"}},
		{"state=pending&selector=team=search", []string{"searchdev"}},
	} {
		// limit=1: one endpoint read per page, so most pages are empty
		// and only the cursor carries the walk on.
		for _, limit := range []string{"1", "2", "100"} {
			got := ids("/v1/endpoints?limit=" + limit + "&" + c.query)
			slices.Sort(got)
			if !slices.Equal(got, c.want) {
				t.Fatalf("%s (limit %s) = %v, want %v", c.query, limit, got, c.want)
			}
		}
	}
	for _, bad := range []string{"team", "=x", "team=a(b", "team in (a,b", "-bad=x", "team=a,", "team=x=y"} {
		wantFieldProblem(t, h, "/v1/endpoints?selector="+url.QueryEscape(bad), "selector")
	}
	for _, bad := range []string{"sideways", "up,sideways", "open"} {
		wantFieldProblem(t, h, "/v1/endpoints?state="+bad, "state")
	}
}

// TestIncidentAndVerdictPagesWalkTheWholeList: the cursor pages of
// incidents (newest first, ties by ID) and verdicts (newest first) add up
// to the unpaged list.
func TestIncidentAndVerdictPagesWalkTheWholeList(t *testing.T) {
	h := newHarness(t)
	ep := h.create(`{"name":"a","url":"https://a.example/mcp"}`)
	for i := range 7 {
		if _, err := h.store.RecordVerdict(t.Context(), msg.Verdict{Schema: 1, EndpointID: ep.ID, Window: t0.Add(time.Duration(i-7) * time.Minute), WindowSecs: 60, State: msg.StateUp, Results: 1}); err != nil {
			t.Fatal(err)
		}
		// Pairs of incidents share an opening window.
		opened := t0.Add(time.Duration(i/2) * time.Hour)
		epID := fmt.Sprintf("ep%d", i)
		inc := model.Incident{ID: msg.IncidentID(epID, opened), EndpointID: epID, State: model.IncidentOpen, OpenedWindow: opened}
		if err := h.store.SaveTracker(t.Context(), model.Tracker{EndpointID: epID}, inc); err != nil {
			t.Fatal(err)
		}
	}
	walk := func(path, field string) []string {
		var out []string
		cursor := ""
		for {
			var page map[string]json.RawMessage
			p := path
			if cursor != "" {
				p += "&cursor=" + url.QueryEscape(cursor)
			}
			h.mustJSON("GET", p, "", http.StatusOK, &page)
			var items []struct {
				ID     string    `json:"id"`
				Window time.Time `json:"window"`
			}
			if err := json.Unmarshal(page[field], &items); err != nil {
				t.Fatal(err)
			}
			for _, it := range items {
				out = append(out, it.ID+it.Window.String())
			}
			cursor = ""
			if raw, ok := page["nextCursor"]; ok {
				_ = json.Unmarshal(raw, &cursor)
			}
			if cursor == "" {
				return out
			}
		}
	}
	for _, c := range []struct{ path, field string }{
		{"/v1/incidents?", "incidents"}, {"/v1/incidents?state=open&", "incidents"},
		{"/v1/endpoints/" + ep.ID + "/verdicts?", "verdicts"},
	} {
		all := walk(c.path+"limit=1000", c.field)
		if len(all) != 7 {
			t.Fatalf("%s lists %d, want 7", c.path, len(all))
		}
		for _, limit := range []string{"1", "2", "3", "7"} {
			if got := walk(c.path+"limit="+limit, c.field); !slices.Equal(got, all) {
				t.Fatalf("%s in pages of %s = %v, want %v", c.path, limit, got, all)
			}
		}
	}
}

// TestMaintenancePagesWalkTheWholeList: maintenance windows page by ID.
func TestMaintenancePagesWalkTheWholeList(t *testing.T) {
	var n atomic.Int64
	h := newHarness(t, func(o *api.Options) { o.NewID = func() string { return fmt.Sprintf("m%02d", n.Add(1)) } })
	for range 5 {
		h.mustJSON("POST", "/v1/maintenance", `{"endpointIds":["x"],"start":"2026-03-01T13:00:00Z","end":"2026-03-01T14:00:00Z"}`, http.StatusCreated, nil)
	}
	var got []string
	cursor := ""
	for {
		var page struct {
			Maintenance []apiv1.MaintenanceView `json:"maintenance"`
			NextCursor  string                  `json:"nextCursor"`
		}
		p := "/v1/maintenance?limit=2"
		if cursor != "" {
			p += "&cursor=" + url.QueryEscape(cursor)
		}
		h.mustJSON("GET", p, "", http.StatusOK, &page)
		for _, m := range page.Maintenance {
			got = append(got, m.ID)
		}
		if cursor = page.NextCursor; cursor == "" {
			break
		}
	}
	if want := []string{"m01", "m02", "m03", "m04", "m05"}; !slices.Equal(got, want) {
		t.Fatalf("maintenance pages = %v, want %v", got, want)
	}
}

// TestAuditPagesSplitTies: audit entries written at one instant (the fake
// clock stands still) page by their IDs, so a page boundary inside the
// tie repeats and skips nothing.
func TestAuditPagesSplitTies(t *testing.T) {
	h := newHarness(t)
	for i := range 9 {
		h.create(fmt.Sprintf(`{"name":"e%d","url":"https://e.example/mcp"}`, i))
	}
	var all struct{ Entries []store.AuditEntry }
	h.mustJSON("GET", "/v1/audit?limit=1000", "", http.StatusOK, &all)
	if len(all.Entries) != 9 {
		t.Fatalf("audit holds %d entries, want 9", len(all.Entries))
	}
	for _, limit := range []string{"1", "2", "4"} {
		var got []string
		cursor := ""
		for {
			var page struct {
				Entries    []store.AuditEntry `json:"entries"`
				NextCursor string             `json:"nextCursor"`
			}
			p := "/v1/audit?limit=" + limit
			if cursor != "" {
				p += "&cursor=" + url.QueryEscape(cursor)
			}
			h.mustJSON("GET", p, "", http.StatusOK, &page)
			for _, e := range page.Entries {
				got = append(got, e.ID)
			}
			if cursor = page.NextCursor; cursor == "" {
				break
			}
		}
		var want []string
		for _, e := range all.Entries {
			want = append(want, e.ID)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("audit in pages of %s = %v, want %v", limit, got, want)
		}
	}
}
