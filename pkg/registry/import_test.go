package registry_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/api"
	apiv1 "github.com/mcpmon/mcpmon/pkg/api/v1"
	"github.com/mcpmon/mcpmon/pkg/registry"
	"github.com/mcpmon/mcpmon/pkg/store/bolt"
)

// fixtureRegistry serves testdata/servers.json the way the MCP Registry's
// v0.1 API does (docs/reference/api/openapi.yaml and
// official-registry-api.md): GET /v0.1/servers with limit (capped at 100),
// an opaque cursor returned in metadata.nextCursor, updated_since (entries
// updated after it), and deleted entries hidden unless updated_since is
// given.
type fixtureRegistry struct {
	t  *testing.T
	mu sync.Mutex
	// entries are raw JSON objects so the fixture serves exactly the
	// published shape, not this package's structs.
	entries  []map[string]any
	requests []url.Values
	srv      *httptest.Server
}

func newFixtureRegistry(t *testing.T) *fixtureRegistry {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "servers.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Servers []map[string]any `json:"servers"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	f := &fixtureRegistry{t: t, entries: doc.Servers}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v0.1/servers", f.list)
	f.srv = httptest.NewServer(mux)
	t.Cleanup(f.srv.Close)
	return f
}

func official(e map[string]any) map[string]any {
	return e["_meta"].(map[string]any)["io.modelcontextprotocol.registry/official"].(map[string]any)
}

func server(e map[string]any) map[string]any { return e["server"].(map[string]any) }

func (f *fixtureRegistry) list(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	q := r.URL.Query()
	f.requests = append(f.requests, q)
	limit := 30
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			http.Error(w, `{"error":"invalid limit"}`, http.StatusBadRequest)
			return
		}
		limit = min(n, 100)
	}
	var since time.Time
	if s := q.Get("updated_since"); s != "" {
		var err error
		if since, err = time.Parse(time.RFC3339Nano, s); err != nil {
			http.Error(w, `{"error":"invalid updated_since"}`, http.StatusBadRequest)
			return
		}
	}
	offset := 0
	if c := q.Get("cursor"); c != "" {
		b, err := base64.RawURLEncoding.DecodeString(c)
		if err != nil || !strings.HasPrefix(string(b), "off:") {
			http.Error(w, `{"error":"invalid cursor"}`, http.StatusBadRequest)
			return
		}
		offset, _ = strconv.Atoi(strings.TrimPrefix(string(b), "off:"))
	}
	var match []map[string]any
	for _, e := range f.entries {
		m := official(e)
		updated, _ := time.Parse(time.RFC3339Nano, m["updatedAt"].(string))
		if since.IsZero() && m["status"] == "deleted" {
			continue
		}
		if !since.IsZero() && !updated.After(since) {
			continue
		}
		match = append(match, e)
	}
	page := match[min(offset, len(match)):min(offset+limit, len(match))]
	out := map[string]any{"servers": page, "metadata": map[string]any{"count": len(page)}}
	if offset+limit < len(match) {
		out["metadata"].(map[string]any)["nextCursor"] = base64.RawURLEncoding.EncodeToString([]byte("off:" + strconv.Itoa(offset+limit)))
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}

// update changes the entry of server name at version (latest if "").
func (f *fixtureRegistry) update(name, version string, at time.Time, change func(e map[string]any)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, e := range f.entries {
		s := server(e)
		if s["name"] == name && (version == "" && official(e)["isLatest"] == true || s["version"] == version) {
			change(e)
			official(e)["updatedAt"] = at.UTC().Format(time.RFC3339Nano)
			return
		}
	}
	f.t.Fatalf("fixture has no %s %s", name, version)
}

// endpointsOverHTTP implements registry.Endpoints against mcpmon's API, as
// pkg/client does.
type endpointsOverHTTP struct {
	base string
	http *http.Client
}

var _ registry.Endpoints = (*endpointsOverHTTP)(nil)

func (c *endpointsOverHTTP) do(ctx context.Context, method, path, ctype string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return err
	}
	if in != nil {
		req.Header.Set("Content-Type", ctype)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode >= 300 {
		return fmt.Errorf("%s %s: HTTP %d: %s", method, path, resp.StatusCode, b)
	}
	if out != nil {
		return json.Unmarshal(b, out)
	}
	return nil
}

func (c *endpointsOverHTTP) ListEndpoints(ctx context.Context, selector string) ([]apiv1.EndpointView, error) {
	var all []apiv1.EndpointView
	cursor := ""
	for {
		q := url.Values{"limit": {"2"}} // small pages: the adapter must follow cursors
		if selector != "" {
			q.Set("selector", selector)
		}
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		var page apiv1.EndpointList
		if err := c.do(ctx, http.MethodGet, "/v1/endpoints?"+q.Encode(), "", nil, &page); err != nil {
			return nil, err
		}
		all = append(all, page.Endpoints...)
		if page.NextCursor == "" {
			return all, nil
		}
		cursor = page.NextCursor
	}
}

func (c *endpointsOverHTTP) CreateEndpoint(ctx context.Context, in apiv1.EndpointInput) (apiv1.EndpointView, error) {
	var v apiv1.EndpointView
	err := c.do(ctx, http.MethodPost, "/v1/endpoints", "application/json", in, &v)
	return v, err
}

func (c *endpointsOverHTTP) PatchEndpoint(ctx context.Context, id string, patch any) (apiv1.EndpointView, error) {
	var v apiv1.EndpointView
	err := c.do(ctx, http.MethodPatch, "/v1/endpoints/"+url.PathEscape(id), "application/merge-patch+json", patch, &v)
	return v, err
}

func (c *endpointsOverHTTP) DeleteEndpoint(ctx context.Context, id string) error {
	return c.do(ctx, http.MethodDelete, "/v1/endpoints/"+url.PathEscape(id), "", nil, nil)
}

// newMcpmon serves a real mcpmon API over a bolt store (auth off; no target
// validator, and the registry URLs are example.com names that are never
// probed).
func newMcpmon(t *testing.T) *endpointsOverHTTP {
	t.Helper()
	st, err := bolt.Open(filepath.Join(t.TempDir(), "mcpmon.db"), bolt.Options{SweepInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	n := 0
	var mu sync.Mutex
	srv := httptest.NewServer(api.New(api.Options{Store: st, Logger: slog.New(slog.DiscardHandler), NewID: func() string {
		mu.Lock()
		defer mu.Unlock()
		n++
		return fmt.Sprintf("ep%02d", n)
	}}))
	t.Cleanup(srv.Close)
	return &endpointsOverHTTP{base: srv.URL, http: srv.Client()}
}

func importer(t *testing.T, f *fixtureRegistry, eps registry.Endpoints, progress func(registry.Progress)) *registry.Importer {
	t.Helper()
	c, err := registry.NewClient(f.srv.URL, registry.ClientOptions{HTTP: f.srv.Client(), PageSize: 2, Progress: progress})
	if err != nil {
		t.Fatal(err)
	}
	return &registry.Importer{Registry: c, Endpoints: eps}
}

func names(vs []apiv1.EndpointView) []string {
	var out []string
	for _, v := range vs {
		out = append(out, v.Name)
	}
	slices.Sort(out)
	return out
}

func items(rep registry.Report, action string) []string {
	var out []string
	for _, it := range rep.Items {
		if it.Action == action {
			s := it.Name
			if s == "" {
				s = it.Server
			}
			out = append(out, s)
		}
	}
	slices.Sort(out)
	return out
}

func TestImportFromFixtureRegistryIntoMcpmon(t *testing.T) {
	ctx := t.Context()
	f := newFixtureRegistry(t)
	eps := newMcpmon(t)
	var pages []registry.Progress
	im := importer(t, f, eps, func(p registry.Progress) { pages = append(pages, p) })

	user, err := eps.CreateEndpoint(ctx, apiv1.EndpointInput{Name: "my own", URL: "https://beta.example.com/mcp", Labels: map[string]string{"team": "me"}})
	if err != nil {
		t.Fatal(err)
	}

	wantImported := []string{
		"com.example/alpha (sse)",
		"com.example/alpha (streamable-http)",
		"com.example/beta (streamable-http)",
		"com.example/dup (streamable-http)",
		"com.example/region (streamable-http)",
	}

	// A dry run plans the import and changes nothing.
	dry, err := im.Import(ctx, registry.Options{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := items(dry, registry.ActionCreate); !slices.Equal(got, wantImported) {
		t.Errorf("dry run would create %q, want %q", got, wantImported)
	}
	if all, _ := eps.ListEndpoints(ctx, ""); len(all) != 1 {
		t.Fatalf("dry run changed mcpmon: %q", names(all))
	}

	// The first import creates exactly the expected endpoints and reports
	// every skip with its reason.
	pages = nil
	first, err := im.Import(ctx, registry.Options{Schedule: "@every 5m", Timeout: "15s"})
	if err != nil {
		t.Fatal(err)
	}
	if first.Created != 5 || first.Failed != 0 {
		t.Fatalf("first import: %+v", first)
	}
	if len(pages) != 4 || pages[0].Page != 1 || pages[3].Total != 8 {
		t.Errorf("progress = %+v, want 4 pages of 2 reaching 8 entries (deleted one hidden)", pages)
	}
	imported, err := eps.ListEndpoints(ctx, "source=mcp-registry")
	if err != nil {
		t.Fatal(err)
	}
	if got := names(imported); !slices.Equal(got, wantImported) {
		t.Errorf("imported = %q, want %q", got, wantImported)
	}
	byName := map[string]apiv1.EndpointView{}
	for _, v := range imported {
		byName[v.Name] = v
	}
	if v := byName["com.example/alpha (sse)"]; v.Transport != "sse" || v.URL != "https://alpha.example.com/sse" || v.Schedule != "@every 5m" || v.Timeout != "15s" ||
		v.Labels["mcp-registry/version"] != "1.1.0" || v.Labels["mcp-registry/server"] != "com.example/alpha" || v.Labels["mcp-registry/status"] != "active" {
		t.Errorf("alpha sse = %+v", v)
	}
	if v := byName["com.example/region (streamable-http)"]; v.URL != "https://eu.region.example.com/mcp" || v.Headers["X-Region"] != apiv1.Redacted {
		t.Errorf("region = %+v, want the URL variable and header filled from defaults", v)
	}
	wantSkips := map[string]string{
		"com.example/old":   "deprecated",
		"com.example/keyed": "requires header X-API-Key",
		"com.example/stdio": "no remotes",
		"com.example/dup":   "same URL as remote 1",
	}
	for _, it := range first.Items {
		if it.Action != registry.ActionSkip {
			continue
		}
		if want, ok := wantSkips[it.Server]; !ok || !strings.Contains(it.Reason, want) {
			t.Errorf("skip %s: %q, want a reason with %q", it.Server, it.Reason, want)
		}
		delete(wantSkips, it.Server)
	}
	if len(wantSkips) > 0 {
		t.Errorf("not reported as skipped: %v", wantSkips)
	}
	if want := time.Date(2026, 10, 5, 10, 0, 0, 0, time.UTC); !first.HighWater.Equal(want) {
		t.Errorf("high water = %v, want %v", first.HighWater, want)
	}

	// A re-import is a no-op.
	again, err := im.Import(ctx, registry.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if again.Created+again.Updated+again.Removed+again.Failed != 0 || again.Unchanged != 5 {
		t.Errorf("re-import: %+v", again)
	}

	// A sync with nothing new reads an empty delta and changes nothing.
	quiet, err := im.Import(ctx, registry.Options{Since: first.HighWater})
	if err != nil {
		t.Fatal(err)
	}
	if quiet.Entries != 0 || len(quiet.Items) != 0 || !quiet.HighWater.Equal(first.HighWater) {
		t.Errorf("empty sync: %+v", quiet)
	}

	// The registry deletes beta and moves alpha's SSE remote; a sync reads
	// only those entries, removes exactly beta's endpoint and updates alpha
	// in place.
	t1 := time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC)
	f.update("com.example/beta", "", t1, func(e map[string]any) { official(e)["status"] = "deleted" })
	f.update("com.example/alpha", "", t1.Add(time.Minute), func(e map[string]any) {
		server(e)["remotes"].([]any)[1].(map[string]any)["url"] = "https://sse.alpha.example.com/sse"
	})
	alphaSSE := byName["com.example/alpha (sse)"]
	sync1, err := im.Import(ctx, registry.Options{Since: first.HighWater})
	if err != nil {
		t.Fatal(err)
	}
	if sync1.Entries != 2 || sync1.Removed != 1 || sync1.Updated != 1 || sync1.Created != 0 || sync1.Failed != 0 {
		t.Fatalf("sync: %+v", sync1)
	}
	if got := items(sync1, registry.ActionRemove); !slices.Equal(got, []string{"com.example/beta (streamable-http)"}) {
		t.Errorf("sync removed %q", got)
	}
	if !sync1.HighWater.Equal(t1.Add(time.Minute)) {
		t.Errorf("sync high water = %v", sync1.HighWater)
	}
	last := f.requests[len(f.requests)-1]
	if last.Get("updated_since") != first.HighWater.Format(time.RFC3339Nano) {
		t.Errorf("sync asked with updated_since=%q", last.Get("updated_since"))
	}
	imported, _ = eps.ListEndpoints(ctx, "source=mcp-registry")
	if got := names(imported); len(got) != 4 || slices.Contains(got, "com.example/beta (streamable-http)") {
		t.Errorf("after sync: %q", got)
	}
	for _, v := range imported {
		if v.Name == "com.example/alpha (sse)" && (v.ID != alphaSSE.ID || v.URL != "https://sse.alpha.example.com/sse" || v.Schedule != "@every 5m") {
			t.Errorf("alpha sse after sync = %+v, want the same endpoint with the new URL and its schedule kept", v)
		}
	}

	// The user's endpoint (same URL as beta, no source label) was never
	// touched.
	all, _ := eps.ListEndpoints(ctx, "")
	for _, v := range all {
		if v.ID == user.ID && (v.Version != user.Version || v.Labels["team"] != "me") {
			t.Errorf("user endpoint changed: %+v", v)
		}
	}
	if len(all) != 5 {
		t.Errorf("all endpoints = %q", names(all))
	}

	// A dry-run sync of a further change reports it and changes nothing.
	f.update("com.example/alpha", "", t1.Add(time.Hour), func(e map[string]any) { official(e)["status"] = "deprecated" })
	drySync, err := im.Import(ctx, registry.Options{Since: sync1.HighWater, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := items(drySync, registry.ActionRemove); len(got) != 2 {
		t.Errorf("dry sync would remove %q, want alpha's two", got)
	}
	if after, _ := eps.ListEndpoints(ctx, "source=mcp-registry"); len(after) != 4 {
		t.Errorf("dry sync changed mcpmon: %q", names(after))
	}
	var table bytes.Buffer
	if err := drySync.WriteTable(&table); err != nil || !strings.Contains(table.String(), "would remove") {
		t.Errorf("table = %q, %v", table.String(), err)
	}
}

func TestFullImportRefusesAnEmptyRegistry(t *testing.T) {
	ctx := t.Context()
	f := newFixtureRegistry(t)
	eps := newMcpmon(t)
	im := importer(t, f, eps, nil)
	if _, err := im.Import(ctx, registry.Options{}); err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	f.entries = nil
	f.mu.Unlock()
	_, err := im.Import(ctx, registry.Options{})
	if !errors.Is(err, registry.ErrEmptyRegistry) {
		t.Fatalf("err = %v, want ErrEmptyRegistry", err)
	}
	if left, _ := eps.ListEndpoints(ctx, "source=mcp-registry"); len(left) != 5 {
		t.Errorf("endpoints left = %d, want all 5", len(left))
	}
}

func TestCreateLimitDefersAndKeepsTheHighWater(t *testing.T) {
	ctx := t.Context()
	f := newFixtureRegistry(t)
	eps := newMcpmon(t)
	im := importer(t, f, eps, nil)
	rep, err := im.Import(ctx, registry.Options{MaxCreate: 2})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Created != 2 || !rep.HighWater.IsZero() {
		t.Fatalf("limited import: created %d, high water %v", rep.Created, rep.HighWater)
	}
	rep, err = im.Import(ctx, registry.Options{MaxCreate: 2})
	if err != nil || rep.Created != 2 || rep.Unchanged != 2 {
		t.Fatalf("second limited import: %+v, %v", rep, err)
	}
}

func TestClientErrorsNameThePage(t *testing.T) {
	tests := []struct {
		name    string
		handler http.HandlerFunc
		want    []string
	}{
		{"server error", func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Query().Get("cursor") != "" {
				http.Error(w, "boom", http.StatusBadGateway)
				return
			}
			_, _ = io.WriteString(w, `{"servers":[],"metadata":{"nextCursor":"c1"}}`)
		}, []string{"page 1"}}, // an empty page ends the listing whatever the cursor says
		{"second page fails", func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Query().Get("cursor") != "" {
				http.Error(w, "boom", http.StatusBadGateway)
				return
			}
			_, _ = io.WriteString(w, `{"servers":[{"server":{"name":"a/b","version":"1"}}],"metadata":{"nextCursor":"c1"}}`)
		}, []string{"page 2", "cursor=c1", "HTTP 502", "try again later"}},
		{"not a registry", func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.WriteString(w, `<html>hello</html>`)
		}, []string{"page 1", "/v0.1/servers", "not an MCP registry", "check that --url"}},
		{"a looping cursor", func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.WriteString(w, `{"servers":[{"server":{"name":"a/b","version":"1"}}],"metadata":{"nextCursor":"same"}}`)
		}, []string{"page 2", "repeats"}},
		{"too large", func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.WriteString(w, `{"servers":[`+strings.Repeat(" ", 4096)+`]}`)
		}, []string{"larger than 1024 bytes"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(tt.handler)
			defer srv.Close()
			c, err := registry.NewClient(srv.URL+"/v0.1/servers/", registry.ClientOptions{HTTP: srv.Client(), MaxPageBytes: 1024})
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.List(t.Context(), registry.ListOptions{})
			if tt.name == "server error" {
				if err != nil {
					t.Fatalf("empty first page: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}
