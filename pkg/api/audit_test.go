package api_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/mcpmon/mcpmon/pkg/api"
	apiv1 "github.com/mcpmon/mcpmon/pkg/api/v1"
	"github.com/mcpmon/mcpmon/pkg/auth"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/store"
)

func auditList(t *testing.T, ah *authHarness, key, query string) []store.AuditEntry {
	t.Helper()
	resp, b := ah.call(http.MethodGet, "/v1/audit"+query, key, "")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /v1/audit%s: %d %s", query, resp.StatusCode, b)
	}
	var out struct{ Entries []store.AuditEntry }
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out.Entries
}

func keyID(t *testing.T, ah *authHarness, tenant, name string) string {
	t.Helper()
	keys, err := ah.keyring.List(t.Context(), tenant)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if k.Name == name {
			return k.ID
		}
	}
	t.Fatalf("no key %s/%s", tenant, name)
	return ""
}

// TestAuditRecordsWhoChangedWhat: every kind of change leaves one entry
// naming the key, the tenant, the action, the object and the fields sent —
// and no entry carries a header value, a sink or URL secret or a key.
func TestAuditRecordsWhoChangedWhat(t *testing.T) {
	ah := newAuthHarness(t)
	write, admin := ah.keys["a/write"], ah.keys["a/admin"]
	const (
		headerSecret  = "header-secret-1f9c"
		patchedSecret = "patched-secret-77aa"
		urlSecret     = "url-secret-3b0d"
		sinkSecret    = "sink-secret-c4e2"
	)
	mustStatus := func(want int, method, path, key, body string) []byte {
		t.Helper()
		resp, b := ah.call(method, path, key, body)
		if resp.StatusCode != want {
			t.Fatalf("%s %s: %d %s, want %d", method, path, resp.StatusCode, b, want)
		}
		return b
	}
	idOf := func(b []byte) string {
		var v struct{ ID string }
		if err := json.Unmarshal(b, &v); err != nil || v.ID == "" {
			t.Fatalf("no id in %s", b)
		}
		return v.ID
	}

	ep := idOf(mustStatus(http.StatusCreated, "POST", "/v1/endpoints", write,
		`{"name":"walk","url":"https://mcp.example.com/mcp?token=`+urlSecret+`","schedule":"@every 30s",`+
			`"headers":{"Authorization":"Bearer `+headerSecret+`"},"sinks":{"webhook":{"url":"https://hooks.example.com/`+sinkSecret+`"}}}`))
	mustStatus(http.StatusOK, "PATCH", "/v1/endpoints/"+ep, write, `{"headers":{"X-Api-Key":"`+patchedSecret+`"},"paused":true}`)
	mustStatus(http.StatusBadRequest, "PATCH", "/v1/endpoints/"+ep, write, `{"timeout":"forever"}`) // no entry
	inc := seedIncident(t, ah.harness, "inc-1", ep, model.IncidentOpen).ID
	mustStatus(http.StatusOK, "POST", "/v1/incidents/"+inc+"/ack", write, `{"by":"oncall","reason":"looking"}`)
	win := `{"name":"deploy","endpointIds":["` + ep + `"],"start":"2026-03-02T01:00:00Z","end":"2026-03-02T02:00:00Z"}`
	m := idOf(mustStatus(http.StatusCreated, "POST", "/v1/maintenance", write, win))
	mustStatus(http.StatusOK, "PUT", "/v1/maintenance/"+m, write, win)
	mustStatus(http.StatusNoContent, "DELETE", "/v1/maintenance/"+m, write, "")
	var created apiv1.KeyView
	if err := json.Unmarshal(mustStatus(http.StatusCreated, "POST", "/v1/keys", admin, `{"name":"deploy-bot","scope":"write"}`), &created); err != nil {
		t.Fatal(err)
	}
	mustStatus(http.StatusOK, "DELETE", "/v1/keys/deploy-bot", admin, "") // by name: the entry names the ID
	mustStatus(http.StatusNoContent, "DELETE", "/v1/endpoints/"+ep, write, "")

	writer := store.AuditActor{KeyID: keyID(t, ah, "a", "write"), Name: "write"}
	adm := store.AuditActor{KeyID: keyID(t, ah, "a", "admin"), Name: "admin"}
	want := []struct {
		actor                  store.AuditActor
		action, kind, id, summ string
		status                 int
	}{
		{writer, "delete", "endpoint", ep, "", 204},
		{adm, "revoke-key", "key", created.ID, "", 200},
		{adm, "create-key", "key", created.ID, "fields: name, scope", 201},
		{writer, "delete", "maintenance", m, "", 204},
		{writer, "update", "maintenance", m, "fields: end, endpointIds, name, start", 200},
		{writer, "silence", "maintenance", m, "fields: end, endpointIds, name, start", 201},
		{writer, "acknowledge", "incident", inc, "fields: by, reason", 200},
		{writer, "update", "endpoint", ep, "fields: headers, paused", 200},
		{writer, "create", "endpoint", ep, "fields: headers, name, schedule, sinks, url", 201},
	}
	resp, raw := ah.call(http.MethodGet, "/v1/audit", admin, "")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /v1/audit: %d %s", resp.StatusCode, raw)
	}
	for _, secret := range []string{headerSecret, patchedSecret, urlSecret, sinkSecret, created.Key, write, admin, "oncall", "looking"} {
		if strings.Contains(string(raw), secret) {
			t.Errorf("the audit log contains %q: %s", secret, raw)
		}
	}
	got := auditList(t, ah, admin, "")
	if len(got) != len(want) {
		t.Fatalf("got %d entries, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		g := got[i]
		if g.Actor != w.actor || g.Action != w.action || g.ObjectKind != w.kind || g.ObjectID != w.id ||
			g.Summary != w.summ || g.Status != w.status || g.Tenant != "a" || g.RequestID == "" || g.ID == "" || !g.Time.Equal(t0) {
			t.Errorf("entry %d = %+v\nwant %+v", i, g, w)
		}
	}

	if other := auditList(t, ah, ah.keys["b/admin"], ""); len(other) != 0 {
		t.Errorf("tenant b's audit log shows %+v", other)
	}
	if resp, b := ah.call(http.MethodGet, "/v1/audit", write, ""); resp.StatusCode != http.StatusForbidden {
		t.Errorf("a write key reads the audit log: %d %s", resp.StatusCode, b)
	}
}

// TestAuditQuery: since/until/limit select entries; bad values are 400
// naming the parameter; entries age out after the audit TTL.
func TestAuditQuery(t *testing.T) {
	ah := newAuthHarness(t)
	write, admin := ah.keys["a/write"], ah.keys["a/admin"]
	for i := range 3 {
		if resp, b := ah.call("POST", "/v1/maintenance", write, `{"name":"w","endpointIds":["x"],"start":"2026-03-02T01:00:00Z","end":"2026-03-02T02:00:00Z"}`); resp.StatusCode != http.StatusCreated {
			t.Fatalf("create %d: %d %s", i, resp.StatusCode, b)
		}
		ah.clock.Advance(time.Minute)
	}
	count := func(q string) int { return len(auditList(t, ah, admin, q)) }
	if n := count(""); n != 3 {
		t.Fatalf("all: %d entries, want 3", n)
	}
	if n := count("?limit=2"); n != 2 {
		t.Errorf("limit=2: %d entries", n)
	}
	if n := count("?since=2026-03-01T12:01:00Z"); n != 2 {
		t.Errorf("since the second: %d entries, want 2", n)
	}
	if n := count("?until=2026-03-01T12:01:00Z"); n != 1 {
		t.Errorf("until the second: %d entries, want 1", n)
	}
	if n := count("?since=1678-01-01T00:00:00Z&until=2262-04-11T00:00:00Z"); n != 3 {
		t.Errorf("since 1678 until 2262-04-11: %d entries, want 3", n)
	}
	for q, ptr := range map[string]string{
		"?limit=0": "?limit", "?limit=1001": "?limit", "?since=yesterday": "?since", "?until=1": "?until",
		"?since=2026-03-01T13:00:00Z&until=2026-03-01T12:00:00Z": "?until",
		// Past what the embedded store's nanosecond keys hold, where a
		// key wraps around and the log read as empty.
		"?until=2263-01-01T00:00:00Z": "?until", "?since=1600-01-01T00:00:00Z": "?since",
	} {
		resp, b := ah.call(http.MethodGet, "/v1/audit"+q, admin, "")
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), `"pointer":"`+ptr+`"`) {
			t.Errorf("%s: %d %s, want 400 naming %s", q, resp.StatusCode, b, ptr)
		}
	}

	ah.clock.Set(t0.Add(store.DefaultAuditTTL + time.Minute + time.Second))
	if n := count(""); n != 1 {
		t.Errorf("past the TTL of the first two: %d entries, want 1", n)
	}
}

// TestAuditWithoutKeys: with authentication off the actor is auth:none
// and the tenant the default one.
func TestAuditWithoutKeys(t *testing.T) {
	h := newHarness(t)
	if resp, b := h.do("POST", "/v1/maintenance", "", `{"name":"w","endpointIds":["x"],"start":"2026-03-02T01:00:00Z","end":"2026-03-02T02:00:00Z"}`); resp.StatusCode != http.StatusCreated {
		t.Fatalf("create: %d %s", resp.StatusCode, b)
	}
	resp, b := h.do("GET", "/v1/audit", "", "")
	var out struct{ Entries []store.AuditEntry }
	if resp.StatusCode != http.StatusOK || json.Unmarshal(b, &out) != nil || len(out.Entries) != 1 {
		t.Fatalf("GET /v1/audit: %d %s", resp.StatusCode, b)
	}
	if e := out.Entries[0]; e.Actor != (store.AuditActor{KeyID: store.AuditActorNone}) || e.Tenant != auth.DefaultTenant || e.Action != api.ActionSilence {
		t.Fatalf("entry %+v", e)
	}
}

type failingAudit struct{}

func (failingAudit) AppendAudit(context.Context, store.AuditEntry) error {
	return errors.New("disk full")
}

func (failingAudit) ListAudit(context.Context, store.AuditFilter) ([]store.AuditEntry, error) {
	return nil, nil
}

// TestAuditFailureKeepsTheChange: a change whose entry cannot be stored
// still succeeds; the failure is logged (without the request's secrets)
// and counted.
func TestAuditFailureKeepsTheChange(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := api.NewMetrics(reg)
	h := newHarness(t, func(o *api.Options) { o.Audit, o.Metrics = failingAudit{}, m })
	const secret = "header-secret-9e1"
	resp, b := h.do("POST", "/v1/endpoints", "", `{"name":"walk","url":"https://mcp.example.com/mcp","headers":{"Authorization":"Bearer `+secret+`"}}`)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create: %d %s", resp.StatusCode, b)
	}
	if got := testutil.ToFloat64(m.AuditAppendFailures); got != 1 {
		t.Errorf("mcpmon_audit_append_failures_total = %v, want 1", got)
	}
	logs := h.logs.String()
	if !strings.Contains(logs, "audit entry not recorded") || strings.Contains(logs, secret) {
		t.Errorf("logs: %s", logs)
	}
}
