package mcpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/mcpmon/mcpmon/pkg/api"
	apiv1 "github.com/mcpmon/mcpmon/pkg/api/v1"
	"github.com/mcpmon/mcpmon/pkg/auth"
	"github.com/mcpmon/mcpmon/pkg/clock"
	"github.com/mcpmon/mcpmon/pkg/mcpapi"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/msg"
	"github.com/mcpmon/mcpmon/pkg/store"
	"github.com/mcpmon/mcpmon/pkg/store/bolt"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// storedProber stands in for the scheduler, queue and prober of
// POST /v1/endpoints/{id}/probe: the slot's result is stored at once, as
// the prober stores it.
type storedProber struct{ st store.Store }

func (p storedProber) ProbeNow(ctx context.Context, ep model.Endpoint, slot time.Time) error {
	return p.st.PutLatestResult(ctx, msg.ProbeResult{
		Schema: msg.SchemaVersion, EndpointID: ep.ID, ProbeRunID: msg.ProbeRunID(ep.ID, slot), Slot: slot,
		StartedAt: slot, FinishedAt: slot.Add(30 * time.Millisecond), Status: msg.StatusUp, Class: "ok",
		ProtocolVersion: "2025-11-25", Phases: map[string]float64{msg.PhaseTotal: 0.03},
	})
}

// fixture is the real API (bolt store, keys on) with /mcp mounted as the
// process mounts it, keys of tenant a (read, write) and b (write), and an
// endpoint, an open incident and a status page of tenant a.
type fixture struct {
	srv      *httptest.Server
	st       *bolt.Store
	keys     map[string]string
	endpoint string
	incident string
	page     string
	// toolRequests counts the REST requests the tools made.
	toolRequests atomic.Int64
}

func newFixture(t *testing.T, tweak ...func(*api.Options)) *fixture {
	t.Helper()
	clk := clock.NewFake(t0)
	st, err := bolt.Open(filepath.Join(t.TempDir(), "mcpmon.db"), bolt.Options{Clock: clk, SweepInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	keyring := auth.NewKeyring(st, auth.Options{Clock: clk})
	n := 0
	f := &fixture{keys: map[string]string{}}
	opts := api.Options{
		Store: st, Authenticator: keyring, Keys: keyring, Clock: clk, Probes: storedProber{st},
		NewID: func() string { n++; return fmt.Sprintf("id%d", n) },
		MCP: func(rest http.Handler) http.Handler {
			counted := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				f.toolRequests.Add(1)
				rest.ServeHTTP(w, r)
			})
			return mcpapi.New(counted, mcpapi.Options{Version: "test"})
		},
	}
	for _, tw := range tweak {
		tw(&opts)
	}
	h := api.New(opts)
	f.srv, f.st = httptest.NewServer(h), st
	t.Cleanup(f.srv.Close)
	for _, k := range []struct {
		tenant string
		scope  auth.Scope
	}{{"a", auth.ScopeRead}, {"a", auth.ScopeWrite}, {"b", auth.ScopeWrite}} {
		secret, _, err := keyring.Create(t.Context(), auth.NewKey{Name: string(k.scope), Tenant: k.tenant, Scope: k.scope})
		if err != nil {
			t.Fatal(err)
		}
		f.keys[k.tenant+"/"+string(k.scope)] = secret
	}
	var ep apiv1.EndpointView
	f.rest(t, "POST", "/v1/endpoints", "a/write", `{"name":"docs","url":"https://mcp.example.com/mcp","headers":{"Authorization":"Bearer s3cret"},"labels":{"team":"search"}}`, http.StatusCreated, &ep)
	f.endpoint = ep.ID
	var page apiv1.StatusPageView
	f.rest(t, "POST", "/v1/status-pages", "a/write", `{"slug":"search","title":"Search status"}`, http.StatusCreated, &page)
	f.page = page.ID
	f.incident = msg.IncidentID(ep.ID, t0.Add(-10*time.Minute))
	inc := model.Incident{
		ID: f.incident, EndpointID: ep.ID, Tenant: "a", State: model.IncidentOpen, OpenedWindow: t0.Add(-10 * time.Minute),
		OpenedAt: t0.Add(-9 * time.Minute), FirstFailure: t0.Add(-11 * time.Minute), Class: "timeout", Reason: "probe timed out",
		Transitions: []model.Transition{{At: t0.Add(-9 * time.Minute), To: model.IncidentOpen, Reason: "2 of 3 windows down"}},
	}
	tr, err := st.GetTracker(t.Context(), ep.ID)
	if err != nil {
		t.Fatal(err)
	}
	tr.EndpointID = ep.ID
	if err := st.SaveTracker(t.Context(), tr, inc); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *fixture) rest(t *testing.T, method, path, key, body string, want int, into any) {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), method, f.srv.URL+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+f.keys[key])
	resp, err := f.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	_, _ = b.ReadFrom(resp.Body)
	if resp.StatusCode != want {
		t.Fatalf("%s %s = %d %s, want %d", method, path, resp.StatusCode, b.String(), want)
	}
	if into != nil {
		if err := json.Unmarshal(b.Bytes(), into); err != nil {
			t.Fatal(err)
		}
	}
}

// headerTransport adds headers to every request of an MCP client.
type headerTransport struct {
	header http.Header
	mu     sync.Mutex
	status []int
}

func (h *headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h.header {
		r.Header[k] = v
	}
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err == nil {
		h.mu.Lock()
		h.status = append(h.status, resp.StatusCode)
		h.mu.Unlock()
	}
	return resp, err
}

// connect opens a go-sdk client session as key ("" for none) speaking
// version ("" for the client's default).
func (f *fixture) connect(t *testing.T, key, version string) (*mcp.ClientSession, error) {
	t.Helper()
	ht := &headerTransport{header: http.Header{}}
	if key != "" {
		ht.header.Set("Authorization", "Bearer "+f.keys[key])
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "mcpapi-test", Version: "1"}, nil)
	cs, err := c.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: f.srv.URL + "/mcp", HTTPClient: &http.Client{Transport: ht}, MaxRetries: -1},
		&mcp.ClientSessionOptions{ProtocolVersion: version})
	if err == nil {
		t.Cleanup(func() { _ = cs.Close() })
	}
	return cs, err
}

func (f *fixture) mustConnect(t *testing.T, key, version string) *mcp.ClientSession {
	t.Helper()
	cs, err := f.connect(t, key, version)
	if err != nil {
		t.Fatalf("connect as %s: %v", key, err)
	}
	return cs
}

// call calls a tool and returns the result; a protocol error fails the test.
func call(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: protocol error %v", name, err)
	}
	return res
}

func text(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// validator compiles each tool's declared output schema.
func validators(t *testing.T, tools []*mcp.Tool) map[string]*jsonschema.Schema {
	t.Helper()
	out := map[string]*jsonschema.Schema{}
	for _, tl := range tools {
		raw, err := json.Marshal(tl.OutputSchema)
		if err != nil || tl.OutputSchema == nil {
			t.Fatalf("tool %s: output schema %v (%v)", tl.Name, tl.OutputSchema, err)
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
		if err != nil {
			t.Fatal(err)
		}
		c := jsonschema.NewCompiler()
		loc := "mcpmon:" + tl.Name
		if err := c.AddResource(loc, doc); err != nil {
			t.Fatal(err)
		}
		s, err := c.Compile(loc)
		if err != nil {
			t.Fatalf("tool %s: output schema does not compile: %v", tl.Name, err)
		}
		out[tl.Name] = s
	}
	return out
}

// structured re-reads a result's structured content as JSON, validates it
// against the tool's output schema and decodes it into into.
func structured(t *testing.T, schemas map[string]*jsonschema.Schema, name string, res *mcp.CallToolResult, into any) {
	t.Helper()
	if res.IsError {
		t.Fatalf("%s: tool error %s", name, text(res))
	}
	raw, err := json.Marshal(res.StructuredContent)
	if err != nil || res.StructuredContent == nil {
		t.Fatalf("%s: no structured content (%v)", name, err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	if err := schemas[name].Validate(inst); err != nil {
		t.Errorf("%s: structured content does not match the declared output schema: %v\n%s", name, err, raw)
	}
	if err := json.Unmarshal(raw, into); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if strings.Contains(string(raw), "s3cret") {
		t.Errorf("%s: a secret in the structured content: %s", name, raw)
	}
}

// TestEveryToolAnswersWithItsDeclaredSchema calls every tool, in both
// protocol eras the server speaks, and holds each structuredContent to the
// tool's outputSchema.
func TestEveryToolAnswersWithItsDeclaredSchema(t *testing.T) {
	for _, version := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(version, func(t *testing.T) {
			f := newFixture(t)
			cs := f.mustConnect(t, "a/write", version)
			tools, err := cs.ListTools(t.Context(), nil)
			if err != nil {
				t.Fatal(err)
			}
			schemas := validators(t, tools.Tools)
			called := map[string]bool{}
			for _, tl := range mcpapi.Tools() {
				if schemas[tl.Name] == nil {
					t.Errorf("tools/list lacks %s", tl.Name)
				}
			}

			var list apiv1.EndpointList
			structured(t, schemas, "list_endpoints", call(t, cs, "list_endpoints", map[string]any{"selector": "team=search", "limit": 10}), &list)
			called["list_endpoints"] = true
			if len(list.Endpoints) != 1 || list.Endpoints[0].ID != f.endpoint || list.Endpoints[0].Headers["Authorization"] != apiv1.Redacted {
				t.Errorf("list_endpoints = %+v, want the endpoint, its header redacted", list)
			}

			var probe mcpapi.ProbeOutcome
			structured(t, schemas, "probe_endpoint_now", call(t, cs, "probe_endpoint_now", map[string]any{"id": f.endpoint}), &probe)
			called["probe_endpoint_now"] = true
			if probe.Result == nil || probe.Result.ProbeRunID != msg.ProbeRunID(f.endpoint, t0) || probe.Result.Status != msg.StatusUp {
				t.Errorf("probe_endpoint_now = %+v, want the result of slot %s", probe, t0)
			}

			var detail mcpapi.EndpointDetail
			structured(t, schemas, "get_endpoint", call(t, cs, "get_endpoint", map[string]any{"id": f.endpoint, "range": "7d"}), &detail)
			called["get_endpoint"] = true
			if detail.Endpoint.ID != f.endpoint || detail.Endpoint.State != apiv1.StatePending || detail.Endpoint.LatestResult == nil ||
				detail.Endpoint.LatestResult.ProbeRunID != probe.Result.ProbeRunID || detail.Uptime == nil || detail.Uptime.Range != "7d" {
				t.Errorf("get_endpoint = %+v, want state, the latest probe and 7d uptime", detail)
			}

			var incs mcpapi.IncidentList
			structured(t, schemas, "list_incidents", call(t, cs, "list_incidents", map[string]any{"state": "open"}), &incs)
			called["list_incidents"] = true
			if len(incs.Incidents) != 1 || incs.Incidents[0].ID != f.incident {
				t.Errorf("list_incidents = %+v, want %s", incs, f.incident)
			}

			var acked apiv1.IncidentView
			structured(t, schemas, "acknowledge_incident", call(t, cs, "acknowledge_incident", map[string]any{"id": f.incident, "by": "agent", "reason": "rollout"}), &acked)
			called["acknowledge_incident"] = true
			if acked.State != string(model.IncidentAcknowledged) || acked.AckedBy != "agent" {
				t.Errorf("acknowledge_incident = %+v, want acknowledged by agent", acked)
			}

			var mw apiv1.MaintenanceView
			structured(t, schemas, "create_maintenance_window", call(t, cs, "create_maintenance_window", map[string]any{
				"name": "rollout", "endpointIds": []string{f.endpoint}, "start": t0.Format(time.RFC3339), "end": t0.Add(time.Hour).Format(time.RFC3339)}), &mw)
			called["create_maintenance_window"] = true
			if mw.ID == "" || mw.Name != "rollout" || !mw.End.Equal(t0.Add(time.Hour)) {
				t.Errorf("create_maintenance_window = %+v", mw)
			}
			for _, tl := range mcpapi.Tools() {
				if !called[tl.Name] {
					t.Errorf("tool %s is not called by this test", tl.Name)
				}
			}
		})
	}
}

// TestToolsAnnotateWhatTheyDo: the annotations tools/list shows are the
// ones the catalog declares, and a tool that changes state is not
// announced read-only.
func TestToolsAnnotateWhatTheyDo(t *testing.T) {
	f := newFixture(t)
	cs := f.mustConnect(t, "a/read", "")
	tools, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]*mcp.Tool{}
	for _, tl := range tools.Tools {
		listed[tl.Name] = tl
	}
	for _, want := range mcpapi.Tools() {
		got := listed[want.Name]
		if got == nil || got.Annotations == nil || got.InputSchema == nil || got.OutputSchema == nil {
			t.Errorf("%s: listed %+v, want annotations and both schemas", want.Name, got)
			continue
		}
		a := got.Annotations
		if a.ReadOnlyHint != (want.Scope == "read") || a.DestructiveHint == nil || *a.DestructiveHint || a.IdempotentHint != want.Annotations.IdempotentHint {
			t.Errorf("%s (scope %s): annotations %+v", want.Name, want.Scope, a)
		}
	}
}

// TestReadKeyIsRefusedAWriteTool: the REST route's 403 comes back as a
// tool error naming the missing scope, and nothing changed.
func TestReadKeyIsRefusedAWriteTool(t *testing.T) {
	f := newFixture(t)
	cs := f.mustConnect(t, "a/read", "")
	for name, args := range map[string]map[string]any{
		"acknowledge_incident":      {"id": f.incident},
		"create_maintenance_window": {"name": "x", "endpointIds": []string{f.endpoint}, "start": t0.Format(time.RFC3339), "end": t0.Add(time.Hour).Format(time.RFC3339)},
		"probe_endpoint_now":        {"id": f.endpoint},
	} {
		res := call(t, cs, name, args)
		if !res.IsError || !strings.Contains(text(res), `403`) || !strings.Contains(text(res), `scope "write"`) {
			t.Errorf("%s with a read key: %v %q, want a tool error naming scope write", name, res.IsError, text(res))
		}
	}
	inc, err := f.st.GetIncident(t.Context(), f.incident)
	if err != nil || inc.State != model.IncidentOpen {
		t.Errorf("incident %+v (%v), want it still open", inc, err)
	}
	// The read tools work with it.
	if res := call(t, cs, "list_endpoints", nil); res.IsError {
		t.Errorf("list_endpoints with a read key: %s", text(res))
	}
}

// TestOtherTenantsIDAnswersLikeAMissingOne: tenant b naming tenant a's
// endpoint, incident or status page gets what a missing ID gets.
func TestOtherTenantsIDAnswersLikeAMissingOne(t *testing.T) {
	f := newFixture(t)
	cs := f.mustConnect(t, "b/write", "")
	for _, tc := range []struct {
		tool, id string
	}{{"get_endpoint", f.endpoint}, {"probe_endpoint_now", f.endpoint}, {"acknowledge_incident", f.incident}} {
		theirs := call(t, cs, tc.tool, map[string]any{"id": tc.id})
		missing := call(t, cs, tc.tool, map[string]any{"id": "nosuch"})
		got, want := strings.ReplaceAll(text(theirs), tc.id, "ID"), strings.ReplaceAll(text(missing), "nosuch", "ID")
		if !theirs.IsError || !strings.Contains(got, "404") || got != want {
			t.Errorf("%s of tenant a's %s: %q; of a missing ID: %q: they must be one 404", tc.tool, tc.id, got, want)
		}
	}
	var list apiv1.EndpointList
	res := call(t, cs, "list_endpoints", nil)
	raw, _ := json.Marshal(res.StructuredContent)
	if json.Unmarshal(raw, &list) != nil || len(list.Endpoints) != 0 {
		t.Errorf("tenant b's list_endpoints = %s, want none of tenant a's", raw)
	}
	pages, err := cs.ListResources(t.Context(), nil)
	if err != nil || len(pages.Resources) != 0 {
		t.Errorf("tenant b's resources/list = %+v, %v; want none", pages, err)
	}
	_, errTheirs := cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: "mcpmon://status-pages/" + f.page})
	_, errMissing := cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: "mcpmon://status-pages/nosuch"})
	if errTheirs == nil || errMissing == nil ||
		strings.ReplaceAll(errTheirs.Error(), f.page, "ID") != strings.ReplaceAll(errMissing.Error(), "nosuch", "ID") {
		t.Errorf("reading tenant a's page: %v; a missing one: %v; want one not-found", errTheirs, errMissing)
	}
}

// TestStatusPagesAreResources: the tenant's pages are listed and read as
// their REST representation.
func TestStatusPagesAreResources(t *testing.T) {
	f := newFixture(t)
	cs := f.mustConnect(t, "a/read", "")
	list, err := cs.ListResources(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	uri := "mcpmon://status-pages/" + f.page
	if len(list.Resources) != 1 || list.Resources[0].URI != uri || list.Resources[0].Name != "search" {
		t.Fatalf("resources/list = %+v, want the status page", list.Resources)
	}
	res, err := cs.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: uri})
	if err != nil {
		t.Fatal(err)
	}
	var page apiv1.StatusPageView
	if len(res.Contents) != 1 || json.Unmarshal([]byte(res.Contents[0].Text), &page) != nil || page.ID != f.page || page.Title != "Search status" {
		t.Errorf("resources/read = %+v, want the page's JSON", res.Contents)
	}
	// The tenant's data, read with its key: no intermediary may cache it
	// (the SDK's default is "public"; the list was sent with an empty scope).
	tools, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for what, c := range map[string]mcp.Cacheable{"resources/list": list.Cacheable, "resources/read": res.Cacheable, "tools/list": tools.Cacheable} {
		if c.CacheScope != "private" || c.TTLMs != 0 {
			t.Errorf("%s cache hint %+v, want private with ttl 0", what, c)
		}
	}
}

// TestInputsAreBounded: an input beyond its schema's bounds is refused
// before any REST request is made.
func TestInputsAreBounded(t *testing.T) {
	f := newFixture(t)
	cs := f.mustConnect(t, "a/write", "")
	for name, args := range map[string]map[string]any{
		"get_endpoint":              {"id": strings.Repeat("a", 129)},
		"probe_endpoint_now":        {"id": "../keys"},
		"list_endpoints":            {"limit": 1000},
		"acknowledge_incident":      {"id": f.incident, "reason": strings.Repeat("r", 1001)},
		"create_maintenance_window": {"name": strings.Repeat("n", 257), "endpointIds": []string{f.endpoint}},
	} {
		before := f.toolRequests.Load()
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: name, Arguments: args})
		if err == nil && !res.IsError {
			t.Errorf("%s with %v: accepted", name, args)
		}
		if n := f.toolRequests.Load() - before; n != 0 {
			t.Errorf("%s with %v: %d REST requests made, want it refused by the input schema", name, args, n)
		}
	}
	if inc, _ := f.st.GetIncident(t.Context(), f.incident); inc.State != model.IncidentOpen {
		t.Errorf("an over-long reason acknowledged the incident")
	}
}

// TestMCPWithoutAKeyIs401: /mcp answers a request without a key as /v1
// does, before the MCP server reads it.
func TestMCPWithoutAKeyIs401(t *testing.T) {
	f := newFixture(t)
	for _, key := range []string{"", "mcpmon_notakey"} {
		req, _ := http.NewRequestWithContext(t.Context(), "POST", f.srv.URL+"/mcp", strings.NewReader(initialize))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		resp, err := f.srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
			t.Errorf("key %q: %d %q, want 401 with a Bearer challenge", key, resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
		}
	}
	if _, err := f.connect(t, "", ""); err == nil {
		t.Error("a go-sdk client without a key connected")
	}
}

// TestDoorSpendsARequestToken: every request to /mcp is charged to the
// key's tenant at the door, so initialize and tools/list cannot outrun the
// tenant's rate; past it the answer is the REST 429. (The fixture's own
// setup spends tenant a's tokens; b is fresh.)
func TestDoorSpendsARequestToken(t *testing.T) {
	f := newFixture(t, func(o *api.Options) { o.Quotas = api.Quotas{RatePerSecond: 0.001, Burst: 3} })
	post := func(key string) *http.Response {
		t.Helper()
		req, _ := http.NewRequestWithContext(t.Context(), "POST", f.srv.URL+"/mcp", strings.NewReader(initialize))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+f.keys[key])
		resp, err := f.srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	for i := range 3 {
		if resp := post("b/write"); resp.StatusCode != http.StatusOK {
			t.Fatalf("initialize %d within the burst: %d", i+1, resp.StatusCode)
		}
	}
	resp := post("b/write")
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Content-Type") != apiv1.ProblemContentType || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("initialize past the burst: %d %q Retry-After %q, want 429 problem+json with Retry-After",
			resp.StatusCode, resp.Header.Get("Content-Type"), resp.Header.Get("Retry-After"))
	}
	if f.toolRequests.Load() != 0 {
		t.Errorf("initialize made %d REST requests, want 0", f.toolRequests.Load())
	}
}

// TestBatchesAreBoundedAndCharged: a JSON-RPC batch (the 2025-03-26 era
// allows them) costs one request token per message, more than 16 messages
// are refused with 400 before the MCP server reads any, and a body /v1
// would refuse (here nested past 64 levels) is refused at /mcp too. A batch
// of 5,000 tools/list fitted in 256 KiB and cost one token: a 99 MB answer.
func TestBatchesAreBoundedAndCharged(t *testing.T) {
	f := newFixture(t, func(o *api.Options) { o.Quotas = api.Quotas{RatePerSecond: 0.001, Burst: 20} })
	post := func(body string) (*http.Response, apiv1.Problem) {
		t.Helper()
		req, _ := http.NewRequestWithContext(t.Context(), "POST", f.srv.URL+"/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", "2025-03-26")
		req.Header.Set("Authorization", "Bearer "+f.keys["b/write"])
		resp, err := f.srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var p apiv1.Problem
		if resp.Header.Get("Content-Type") == apiv1.ProblemContentType {
			_ = json.NewDecoder(resp.Body).Decode(&p)
		}
		return resp, p
	}
	batch := func(n int) string {
		msgs := make([]string, n)
		for i := range msgs {
			msgs[i] = fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/list"}`, i)
		}
		return "[" + strings.Join(msgs, ",") + "]"
	}

	resp, p := post(batch(17))
	if resp.StatusCode != http.StatusBadRequest || len(p.Errors) != 1 || p.Errors[0].Pointer != "#" || !strings.Contains(p.Errors[0].Detail, "16") {
		t.Fatalf("a batch of 17: %d %+v, want 400 problem+json at # naming the limit of 16", resp.StatusCode, p)
	}
	deep := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_endpoint","arguments":{"id":"x","range":` +
		strings.Repeat("[", 100) + strings.Repeat("]", 100) + `}}}`
	if resp, p := post(deep); resp.StatusCode != http.StatusBadRequest || len(p.Errors) != 1 {
		t.Fatalf("arguments nested 100 deep: %d %+v, want 400 problem+json", resp.StatusCode, p)
	}
	if n := f.toolRequests.Load(); n != 0 {
		t.Fatalf("refused bodies made %d REST requests", n)
	}

	// 20 tokens: a batch of 16 spends 16 of them, so a batch of 5 is over
	// the rate and a batch of 4 still fits.
	if resp, _ := post(batch(16)); resp.StatusCode != http.StatusOK {
		t.Fatalf("a batch of 16: %d, want 200", resp.StatusCode)
	}
	if resp, p := post(batch(5)); resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("a batch of 5 with 4 tokens left: %d %+v, want 429 with Retry-After", resp.StatusCode, p)
	}
	if resp, _ := post(batch(4)); resp.StatusCode != http.StatusOK {
		t.Fatalf("a batch of 4 with 4 tokens left: %d, want 200", resp.StatusCode)
	}
	if resp, _ := post(initialize); resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("a message with no token left: %d, want 429", resp.StatusCode)
	}
}

const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

// TestForeignOriginIs403: a browser page of another origin is refused;
// the server's own origin and a client without one are served.
func TestForeignOriginIs403(t *testing.T) {
	f := newFixture(t)
	for origin, want := range map[string]int{
		"http://evil.example":                   http.StatusForbidden,
		"null":                                  http.StatusForbidden,
		strings.Replace(f.srv.URL, "1", "2", 1): http.StatusForbidden,
		f.srv.URL:                               http.StatusOK,
		"":                                      http.StatusOK,
	} {
		req, _ := http.NewRequestWithContext(t.Context(), "POST", f.srv.URL+"/mcp", strings.NewReader(initialize))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+f.keys["a/read"])
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		resp, err := f.srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("Origin %q: %d, want %d", origin, resp.StatusCode, want)
		}
	}
}

func TestForeignOrigin(t *testing.T) {
	for _, tc := range []struct {
		origin, host string
		foreign      bool
	}{
		{"", "mcpmon.example", false},
		{"https://mcpmon.example", "mcpmon.example", false},
		{"https://MCPMON.example", "mcpmon.example", false},
		{"http://127.0.0.1:8080", "127.0.0.1:8080", false},
		{"http://127.0.0.1:8081", "127.0.0.1:8080", true},
		{"https://evil.example", "mcpmon.example", true},
		{"null", "mcpmon.example", true},
		{"file://", "mcpmon.example", true},
		{"://bad", "mcpmon.example", true},
	} {
		if got := mcpapi.ForeignOrigin(tc.origin, tc.host); got != tc.foreign {
			t.Errorf("ForeignOrigin(%q, %q) = %v, want %v", tc.origin, tc.host, got, tc.foreign)
		}
	}
}
