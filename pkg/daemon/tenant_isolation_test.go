package daemon

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/auth"
	"github.com/mcpmon/mcpmon/pkg/config"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/msg"
	"github.com/mcpmon/mcpmon/pkg/store"
)

// tenantDaemon is a running `mcpmon run` with a write key for each of two
// tenants, ta and tb.
type tenantDaemon struct {
	d      *Daemon
	ta, tb apiClient
}

func startTenants(t *testing.T, mut func(*config.Options)) tenantDaemon {
	t.Helper()
	o := embeddedOptions(t)
	o.AllowPrivateTargets = true
	o.RateLimit = 0 // the load below is one tenant's on purpose
	if mut != nil {
		mut(&o)
	}
	var banner bytes.Buffer
	d, err := Start(t.Context(), RoleAll, o, Deps{Stdout: &banner})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Stop(); _ = d.Wait() })
	kr := auth.NewKeyring(d.Store(), auth.Options{})
	key := func(tenant string) apiClient {
		k, _, err := kr.Create(t.Context(), auth.NewKey{Name: tenant + "-write", Tenant: tenant, Scope: auth.ScopeWrite})
		if err != nil {
			t.Fatal(err)
		}
		return apiClient{addr: d.Addr(), key: k}
	}
	return tenantDaemon{d: d, ta: key("ta"), tb: key("tb")}
}

// send makes one request with a JSON body and returns the status and body.
func (c apiClient) send(t *testing.T, method, path string, body any) (int, []byte) {
	t.Helper()
	var r io.Reader
	if body != nil {
		raw, ok := body.([]byte)
		if !ok {
			raw, _ = json.Marshal(body)
		}
		r = bytes.NewReader(raw)
	}
	resp := c.do(t, method, path, r)
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, raw
}

func windowBody(ids []string) map[string]any {
	return map[string]any{"name": "w", "endpointIds": ids, "start": "2026-12-01T00:00:00Z", "end": "2026-12-01T01:00:00Z"}
}

func idList(n int, prefix string) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%08d", prefix, i)
	}
	return out
}

// TestMaintenanceWindowOverACapIsRefused: a window past any cap (endpoint
// IDs, one ID's length, selector, name, the body) is refused with a 4xx
// problem naming the field and the limit, and nothing is stored.
func TestMaintenanceWindowOverACapIsRefused(t *testing.T) {
	td := startTenants(t, nil)
	long := func(n int) string { return strings.Repeat("x", n) }
	sel := map[string]string{}
	for i := range model.MaxWindowSelector + 1 {
		sel[fmt.Sprintf("k%d", i)] = "v"
	}
	huge := []byte(`{"name":"w","endpointIds":["` + long(model.MaxWindowBytes) + `"],"start":"2026-12-01T00:00:00Z","end":"2026-12-01T01:00:00Z"}`)
	for _, tc := range []struct {
		name    string
		body    any
		status  int
		pointer string
		limit   string
	}{
		{"too many endpoint IDs", windowBody(idList(model.MaxWindowEndpointIDs+1, "ep")), 400, "#/endpointIds", "1000"},
		{"an endpoint ID too long", windowBody([]string{"ok", long(model.MaxWindowIDLen + 1)}), 400, "#/endpointIds/1", "64"},
		{"name too long", map[string]any{"name": long(model.MaxWindowNameLen + 1), "endpointIds": []string{"a"}, "start": "2026-12-01T00:00:00Z", "end": "2026-12-01T01:00:00Z"}, 400, "#/name", "200"},
		{"too many selector labels", map[string]any{"selector": sel, "start": "2026-12-01T00:00:00Z", "end": "2026-12-01T01:00:00Z"}, 400, "#/selector", "32"},
		{"selector value too long", map[string]any{"selector": map[string]string{"team": long(model.MaxWindowLabelValLen + 1)}, "start": "2026-12-01T00:00:00Z", "end": "2026-12-01T01:00:00Z"}, 400, "#/selector/team", "255"},
		{"body past the document cap", huge, 413, "", fmt.Sprint(model.MaxWindowBytes)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, raw := td.ta.send(t, http.MethodPost, "/v1/maintenance", tc.body)
			if status != tc.status || !strings.Contains(string(raw), tc.limit) {
				t.Fatalf("POST = %d %s, want %d naming the limit %s", status, raw, tc.status, tc.limit)
			}
			if tc.pointer != "" && !strings.Contains(string(raw), `"pointer":"`+tc.pointer+`"`) {
				t.Fatalf("problem %s does not name the field %s", raw, tc.pointer)
			}
		})
	}
	// At the caps exactly, a window is stored.
	if status, raw := td.ta.send(t, http.MethodPost, "/v1/maintenance", windowBody(idList(model.MaxWindowEndpointIDs, "ep"))); status != http.StatusCreated {
		t.Fatalf("a window at the caps = %d %s, want 201", status, raw)
	}
	_, raw := td.ta.send(t, http.MethodGet, "/v1/maintenance", nil)
	var list struct{ Maintenance []json.RawMessage }
	if err := json.Unmarshal(raw, &list); err != nil || len(list.Maintenance) != 1 {
		t.Fatalf("after the refusals the tenant lists %s (%v), want only the window at the caps", raw, err)
	}
}

// TestForeignIDAnswersLikeAMissingOne: another tenant's endpoint and
// maintenance window answer exactly what a missing ID does — without
// being read: records that would fail to open or decode are never
// touched, because ownership is decided from the tenant index first.
func TestForeignIDAnswersLikeAMissingOne(t *testing.T) {
	td := startTenants(t, nil)
	ctx := t.Context()
	epID := td.ta.register(t, map[string]any{"name": "a", "url": "http://127.0.0.1:9/mcp", "schedule": "@every 1h", "paused": true})
	status, raw := td.ta.send(t, http.MethodPost, "/v1/maintenance", windowBody([]string{epID}))
	if status != http.StatusCreated {
		t.Fatalf("create window: %d %s", status, raw)
	}
	var w struct{ ID string }
	_ = json.Unmarshal(raw, &w)

	// Make ta's records unreadable the way a foreign read would notice: a
	// header that claims to be sealed but does not open, a window whose
	// fields do not decode (its tenant still does, so it stays indexed).
	backend := td.d.Store().(interface{ Unwrap() store.Store }).Unwrap()
	e, err := backend.GetEndpoint(ctx, epID)
	if err != nil {
		t.Fatal(err)
	}
	e.Headers = map[string]string{"X-Broken": "sealed:v1:nokey:AAAA"}
	if _, err := backend.UpdateEndpoint(ctx, e); err != nil {
		t.Fatal(err)
	}
	if err := backend.PutObject(ctx, model.MaintenanceKind, w.ID, []byte(`{"id":"`+w.ID+`","tenant":"ta","endpointIds":{"not":"a list"}}`)); err != nil {
		t.Fatal(err)
	}

	missingEP, missingW := strings.Repeat("z", len(epID)), strings.Repeat("z", len(w.ID))
	for _, tc := range []struct{ foreign, missing string }{
		{"/v1/endpoints/" + epID, "/v1/endpoints/" + missingEP},
		{"/v1/endpoints/" + epID + "/verdicts", "/v1/endpoints/" + missingEP + "/verdicts"},
		{"/v1/maintenance/" + w.ID, "/v1/maintenance/" + missingW},
	} {
		fs, fb := td.tb.send(t, http.MethodGet, tc.foreign, nil)
		ms, mb := td.tb.send(t, http.MethodGet, tc.missing, nil)
		fb = bytes.ReplaceAll(bytes.ReplaceAll(fb, []byte(epID), []byte(missingEP)), []byte(w.ID), []byte(missingW))
		if fs != http.StatusNotFound || ms != http.StatusNotFound || !bytes.Equal(fb, mb) {
			t.Errorf("GET %s as another tenant = %d %s\nGET %s (missing)       = %d %s\nwant the same 404", tc.foreign, fs, fb, tc.missing, ms, mb)
		}
	}
	if fs, fb := td.tb.send(t, http.MethodDelete, "/v1/maintenance/"+w.ID, nil); fs != http.StatusNotFound {
		t.Errorf("DELETE of another tenant's window = %d %s, want 404", fs, fb)
	}
}

// readCost is the bytes the process allocates per request of path by c,
// the least of a few rounds (the daemon's own loops allocate too; the
// least round is the one they disturbed least).
func readCost(t *testing.T, c apiClient, path string) uint64 {
	t.Helper()
	const rounds, per = 3, 10
	best := ^uint64(0)
	var ms runtime.MemStats
	for range rounds {
		runtime.GC()
		runtime.ReadMemStats(&ms)
		before := ms.TotalAlloc
		for range per {
			if status, raw := c.send(t, http.MethodGet, path, nil); status != http.StatusOK {
				t.Fatalf("GET %s = %d %s", path, status, raw)
			}
		}
		runtime.ReadMemStats(&ms)
		best = min(best, (ms.TotalAlloc-before)/per)
	}
	return best
}

// TestOneTenantAtEveryCapDoesNotSlowAnother: with tenant tb at its caps —
// every maintenance window it may hold, each with the most endpoint IDs,
// and hundreds of incidents newer than ta's — tenant ta's reads of its
// windows, incidents and endpoints, and its window create, cost at most
// twice what they did before tb was loaded (its create: twice, plus the
// store's rewrite of one page of neighbours). Cost is bytes allocated per
// request, which unlike wall time does not depend on the machine's load.
func TestOneTenantAtEveryCapDoesNotSlowAnother(t *testing.T) {
	const maxWindows, bIncidents = 30, 400
	td := startTenants(t, func(o *config.Options) { o.MaxMaintenancePerTenant = maxWindows })
	ctx := t.Context()
	st := td.d.Store()
	for i := range 3 {
		id := td.ta.register(t, map[string]any{"name": fmt.Sprintf("a%d", i), "url": "http://127.0.0.1:9/mcp", "schedule": "@every 1h", "paused": true})
		if status, raw := td.ta.send(t, http.MethodPost, "/v1/maintenance", windowBody([]string{id})); status != http.StatusCreated {
			t.Fatalf("ta's window: %d %s", status, raw)
		}
	}
	opened := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	incident := func(tenant, ep string, at time.Time) model.Incident {
		return model.Incident{ID: msg.IncidentID(ep, at), EndpointID: ep, Tenant: tenant, State: model.IncidentResolved,
			OpenedWindow: at, OpenedAt: at, FirstFailure: at, Class: "refused", Reason: strings.Repeat("r", 200),
			Transitions: []model.Transition{{At: at, To: model.IncidentOpen, Reason: "down"}}}
	}
	for i := range 3 {
		if err := st.SaveTracker(ctx, model.Tracker{EndpointID: fmt.Sprintf("a-old-%d", i)}, incident("ta", fmt.Sprintf("a-old-%d", i), opened.Add(time.Duration(i)*time.Minute))); err != nil {
			t.Fatal(err)
		}
	}

	createCost := func() uint64 {
		best := ^uint64(0)
		var ms runtime.MemStats
		for range 4 {
			runtime.GC()
			runtime.ReadMemStats(&ms)
			start := ms.TotalAlloc
			if status, raw := td.ta.send(t, http.MethodPost, "/v1/maintenance", windowBody([]string{"a0"})); status != http.StatusCreated {
				t.Fatalf("ta's create: %d %s", status, raw)
			}
			runtime.ReadMemStats(&ms)
			best = min(best, ms.TotalAlloc-start)
		}
		return best
	}
	createBefore := createCost()
	// Read after the creates, so ta holds as many windows in both
	// measurements.
	paths := []string{"/v1/maintenance", "/v1/incidents", "/v1/endpoints"}
	before := map[string]uint64{}
	for _, p := range paths {
		before[p] = readCost(t, td.ta, p)
	}

	// tb at every cap: the most windows, each with the most IDs of the
	// longest length, and incidents all newer than ta's.
	ids := idList(model.MaxWindowEndpointIDs, strings.Repeat("b", model.MaxWindowIDLen-9))
	for i := range maxWindows {
		if status, raw := td.tb.send(t, http.MethodPost, "/v1/maintenance", windowBody(ids)); status != http.StatusCreated {
			t.Fatalf("tb's window %d: %d %s", i, status, raw)
		}
	}
	if status, _ := td.tb.send(t, http.MethodPost, "/v1/maintenance", windowBody(ids)); status != http.StatusConflict {
		t.Fatalf("tb's window past its quota = %d, want 409", status)
	}
	var incs []model.Incident
	for i := range bIncidents {
		incs = append(incs, incident("tb", fmt.Sprintf("b-%d", i), opened.Add(time.Hour+time.Duration(i)*time.Minute)))
	}
	if err := st.SaveTracker(ctx, model.Tracker{EndpointID: "b-bulk"}, incs...); err != nil {
		t.Fatal(err)
	}

	for _, p := range paths {
		after := readCost(t, td.ta, p)
		t.Logf("ta GET %s: %d B/request before tb was loaded, %d after (%.2fx)", p, before[p], after, float64(after)/float64(before[p]))
		if after > 2*before[p] {
			t.Errorf("ta GET %s allocates %d B/request with tb at its caps, %d without: more than 2x", p, after, before[p])
		}
	}
	createAfter := createCost()
	t.Logf("ta POST /v1/maintenance: %d B before tb was loaded, %d after (%.2fx)", createBefore, createAfter, float64(createAfter)/float64(createBefore))
	// A create is a write: the embedded store rewrites the B+tree leaf the
	// new key lands in, which may hold a neighbouring window of tb's (each
	// at most MaxWindowBytes). That is bounded, not tb's count of windows
	// (decoding them all costs tens of times more).
	if limit := 2*createBefore + 2*model.MaxWindowBytes; createAfter > limit {
		t.Errorf("ta's window create allocates %d B with tb at its caps, %d without: more than %d", createAfter, createBefore, limit)
	}
}
