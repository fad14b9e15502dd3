package api_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/api"
	apiv1 "github.com/mcpmon/mcpmon/pkg/api/v1"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/store"
)

// TestClientErrors checks every 4xx the API answers: status, problem+json
// shape, the field pointer, and that the store did not change.
func TestClientErrors(t *testing.T) {
	h := newHarness(t, func(o *api.Options) {
		o.TargetValidator = func(raw string) error {
			if strings.Contains(raw, "169.254.169.254") {
				return errors.New("blocked target: link-local address")
			}
			return nil
		}
		o.ProtocolValidator = func(transport, version string) error {
			if version == "2099-01-01" {
				return errors.New("unknown protocol version")
			}
			return nil
		}
		o.SinkValidator = func(s json.RawMessage) error {
			if strings.Contains(string(s), "carrier-pigeon") {
				return errors.New(`unknown sink type "carrier-pigeon"`)
			}
			return nil
		}
	})
	ep := h.create(`{"name":"existing","url":"https://a.example/mcp","headers":{"Authorization":"Bearer t"}}`)
	epPath := "/v1/endpoints/" + ep.ID
	seedIncident(t, h, "inc-open", ep.ID, model.IncidentOpen)
	seedIncident(t, h, "inc-resolved", ep.ID, model.IncidentResolved)
	var mw apiv1.MaintenanceView
	h.mustJSON("POST", "/v1/maintenance", `{"endpointIds":["`+ep.ID+`"],"start":"2026-03-02T00:00:00Z","end":"2026-03-02T01:00:00Z"}`, http.StatusCreated, &mw)
	mwPath := "/v1/maintenance/" + mw.ID

	valid := func(extra string) string {
		return `{"name":"n","url":"https://b.example/mcp"` + extra + `}`
	}
	big := `{"name":"` + strings.Repeat("x", api.DefaultMaxBodyBytes) + `","url":"https://b.example/mcp"}`

	for _, tc := range []struct {
		name        string
		method      string
		path        string
		contentType string // "" → application/json when there is a body; "-" → none
		body        string
		status      int
		pointer     string // expected in errors[] when set
		typ         string // expected problem type when set
	}{
		// Body framing.
		{"invalid JSON", "POST", "/v1/endpoints", "", `{"name":`, 400, "#", apiv1.TypeInvalidRequest},
		{"syntax error", "POST", "/v1/endpoints", "", `{"name" "x"}`, 400, "#", ""},
		{"not an object", "POST", "/v1/endpoints", "", `["x"]`, 400, "#", ""},
		{"unknown field", "POST", "/v1/endpoints", "", valid(`,"bogus":1`), 400, "#/bogus", ""},
		{"read-only field", "POST", "/v1/endpoints", "", valid(`,"id":"mine"`), 400, "#/id", ""},
		{"trailing data", "POST", "/v1/endpoints", "", valid(``) + `{}`, 400, "#", ""},
		{"empty body", "POST", "/v1/endpoints", "", " ", 400, "", ""},
		{"wrong type", "POST", "/v1/endpoints", "", valid(`,"timeout":10`), 400, "#/timeout", ""},
		{"wrong nested type", "POST", "/v1/endpoints", "", valid(`,"rules":{"openAfter":"2"}`), 400, "#/rules/openAfter", ""},
		{"text/plain", "POST", "/v1/endpoints", "text/plain", valid(``), 415, "", ""},
		{"no content type", "POST", "/v1/endpoints", "-", valid(``), 415, "", ""},
		{"too large", "POST", "/v1/endpoints", "", big, 413, "", ""},

		// Field validation on create.
		{"missing name", "POST", "/v1/endpoints", "", `{"url":"https://b.example/mcp"}`, 400, "#/name", ""},
		{"control char in name", "POST", "/v1/endpoints", "", `{"name":"a\u0007","url":"https://b.example/mcp"}`, 400, "#/name", ""},
		{"missing url", "POST", "/v1/endpoints", "", `{"name":"n"}`, 400, "#/url", ""},
		{"ftp url", "POST", "/v1/endpoints", "", `{"name":"n","url":"ftp://b.example/mcp"}`, 400, "#/url", ""},
		{"relative url", "POST", "/v1/endpoints", "", `{"name":"n","url":"/mcp"}`, 400, "#/url", ""},
		{"no host", "POST", "/v1/endpoints", "", `{"name":"n","url":"https:///mcp"}`, 400, "#/url", ""},
		{"userinfo", "POST", "/v1/endpoints", "", `{"name":"n","url":"https://u:p@b.example/mcp"}`, 400, "#/url", ""},
		{"fragment", "POST", "/v1/endpoints", "", `{"name":"n","url":"https://b.example/mcp#x"}`, 400, "#/url", ""},
		{"unparsable url", "POST", "/v1/endpoints", "", `{"name":"n","url":"http://[::1"}`, 400, "#/url", ""},
		{"blocked target", "POST", "/v1/endpoints", "", `{"name":"n","url":"http://169.254.169.254/latest"}`, 400, "#/url", ""},
		{"bad transport", "POST", "/v1/endpoints", "", valid(`,"transport":"websocket"`), 400, "#/transport", ""},
		{"bad protocol version", "POST", "/v1/endpoints", "", valid(`,"protocolVersion":"latest"`), 400, "#/protocolVersion", ""},
		{"protocol version the prober cannot speak", "POST", "/v1/endpoints", "", valid(`,"protocolVersion":"2099-01-01"`), 400, "#/protocolVersion", ""},
		{"bad schedule", "POST", "/v1/endpoints", "", valid(`,"schedule":"every minute"`), 400, "#/schedule", ""},
		{"sub-second schedule", "POST", "/v1/endpoints", "", valid(`,"schedule":"@every 100ms"`), 400, "#/schedule", ""},
		{"six-field cron", "POST", "/v1/endpoints", "", valid(`,"schedule":"0 * * * * *"`), 400, "#/schedule", ""},
		{"bad timeout", "POST", "/v1/endpoints", "", valid(`,"timeout":"ten seconds"`), 400, "#/timeout", ""},
		{"timeout too short", "POST", "/v1/endpoints", "", valid(`,"timeout":"0s"`), 400, "#/timeout", ""},
		{"timeout too long", "POST", "/v1/endpoints", "", valid(`,"timeout":"10m"`), 400, "#/timeout", ""},
		{"timeout over the interval", "POST", "/v1/endpoints", "", valid(`,"schedule":"@every 2s","timeout":"5s"`), 400, "#/timeout", ""},
		{"timeout over a cron interval", "POST", "/v1/endpoints", "", valid(`,"schedule":"0,1 9 * * *","timeout":"90s"`), 400, "#/timeout", ""},
		{"latency over timeout", "POST", "/v1/endpoints", "", valid(`,"timeout":"5s","latencyThreshold":"6s"`), 400, "#/latencyThreshold", ""},
		{"bad header name", "POST", "/v1/endpoints", "", valid(`,"headers":{"Bad Header":"v"}`), 400, "#/headers/Bad Header", ""},
		{"reserved header", "POST", "/v1/endpoints", "", valid(`,"headers":{"host":"evil"}`), 400, "#/headers/host", ""},
		{"trace context header", "POST", "/v1/endpoints", "", valid(`,"headers":{"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}`), 400, "#/headers/traceparent", ""},
		{"CRLF header value", "POST", "/v1/endpoints", "", valid(`,"headers":{"X-A":"v\r\nX-B: w"}`), 400, "#/headers/X-A", ""},
		{"placeholder header value", "POST", "/v1/endpoints", "", valid(`,"headers":{"Authorization":"<redacted>"}`), 400, "#/headers/Authorization", ""},
		{"duplicate header", "POST", "/v1/endpoints", "", valid(`,"headers":{"x-a":"1","X-A":"2"}`), 400, "#/headers/x-a", ""},
		{"bad label", "POST", "/v1/endpoints", "", valid(`,"labels":{"1team":"x"}`), 400, "#/labels/1team", ""},
		{"negative rule", "POST", "/v1/endpoints", "", valid(`,"rules":{"openAfter":-1}`), 400, "#/rules/openAfter", ""},
		{"window below openAfter", "POST", "/v1/endpoints", "", valid(`,"rules":{"openAfter":3,"openWindow":2}`), 400, "#/rules/openWindow", ""},
		{"short repeat", "POST", "/v1/endpoints", "", valid(`,"rules":{"repeatInterval":"10s"}`), 400, "#/rules/repeatInterval", ""},
		{"sink refused", "POST", "/v1/endpoints", "", valid(`,"sinks":{"type":"carrier-pigeon"}`), 400, "#/sinks", ""},
		{"sink placeholder", "POST", "/v1/endpoints", "", valid(`,"sinks":{"slack":{"webhookUrl":"<redacted>"}}`), 400, "#/sinks", ""},

		// Unknown IDs and routes.
		{"get unknown", "GET", "/v1/endpoints/nope", "", "", 404, "", "about:blank"},
		{"patch unknown", "PATCH", "/v1/endpoints/nope", "", `{"name":"x"}`, 404, "", ""},
		{"delete unknown", "DELETE", "/v1/endpoints/nope", "", "", 404, "", ""},
		{"verdicts unknown", "GET", "/v1/endpoints/nope/verdicts", "", "", 404, "", ""},
		{"unknown route", "GET", "/v1/nothing", "", "", 404, "", ""},
		{"method not allowed", "PUT", epPath, "", valid(``), 405, "", ""},

		// PATCH validation leaves the endpoint as it was.
		{"patch invalid value", "PATCH", epPath, "", `{"timeout":"1h"}`, 400, "#/timeout", ""},
		{"patch schedule under the timeout", "PATCH", epPath, "", `{"schedule":"@every 5s"}`, 400, "#/timeout", ""},
		{"patch read-only field", "PATCH", epPath, "", `{"version":7}`, 400, "#/version", ""},
		{"patch not an object", "PATCH", epPath, "", `[]`, 400, "#", ""},
		{"patch null", "PATCH", epPath, "", `null`, 400, "#", ""},
		{"patch unknown field", "PATCH", epPath, "", `{"colour":"red"}`, 400, "#/colour", ""},
		{"patch removes name", "PATCH", epPath, "", `{"name":null}`, 400, "#/name", ""},
		{"patch placeholder for new header", "PATCH", epPath, "", `{"headers":{"X-New":"<redacted>"}}`, 400, "#/headers/X-New", ""},
		{"patch wrong content type", "PATCH", epPath, "application/xml", `{"name":"x"}`, 415, "", ""},

		// Query parameters.
		{"limit zero", "GET", epPath + "/verdicts?limit=0", "", "", 400, "?limit", ""},
		{"limit text", "GET", "/v1/incidents?limit=many", "", "", 400, "?limit", ""},
		{"limit too big", "GET", "/v1/incidents?limit=100000", "", "", 400, "?limit", ""},
		{"bad state", "GET", "/v1/incidents?state=closed", "", "", 400, "?state", ""},

		// Incidents.
		{"incident unknown", "GET", "/v1/incidents/nope", "", "", 404, "", ""},
		{"ack unknown", "POST", "/v1/incidents/nope/ack", "", "", 404, "", ""},
		{"ack resolved", "POST", "/v1/incidents/inc-resolved/ack", "", "", 409, "", apiv1.TypeIncidentResolved},
		{"ack unknown field", "POST", "/v1/incidents/inc-open/ack", "", `{"who":"me"}`, 400, "#/who", ""},
		{"ack wrong content type", "POST", "/v1/incidents/inc-open/ack", "text/plain", `by me`, 415, "", ""},

		// Maintenance.
		{"maintenance no target", "POST", "/v1/maintenance", "", `{"start":"2026-03-02T00:00:00Z","end":"2026-03-02T01:00:00Z"}`, 400, "#/endpointIds", ""},
		{"maintenance end before start", "POST", "/v1/maintenance", "", `{"endpointIds":["a"],"start":"2026-03-02T01:00:00Z","end":"2026-03-02T00:00:00Z"}`, 400, "#/end", ""},
		{"maintenance bad duration", "POST", "/v1/maintenance", "", `{"endpointIds":["a"],"cron":"@daily","duration":"long"}`, 400, "#/duration", ""},
		{"maintenance bad cron", "POST", "/v1/maintenance", "", `{"endpointIds":["a"],"cron":"whenever","duration":"1h"}`, 400, "#/cron", ""},
		{"maintenance bad time", "POST", "/v1/maintenance", "", `{"endpointIds":["a"],"start":"tomorrow","end":"2026-03-02T00:00:00Z"}`, 400, "", ""},
		{"maintenance unknown field", "POST", "/v1/maintenance", "", `{"endpointIds":["a"],"cron":"@daily","duration":"1h","mute":true}`, 400, "#/mute", ""},
		{"maintenance get unknown", "GET", "/v1/maintenance/nope", "", "", 404, "", ""},
		{"maintenance put unknown", "PUT", "/v1/maintenance/nope", "", `{"endpointIds":["a"],"cron":"@daily","duration":"1h"}`, 404, "", ""},
		{"maintenance put invalid", "PUT", mwPath, "", `{"endpointIds":[]}`, 400, "", ""},
		{"maintenance delete unknown", "DELETE", "/v1/maintenance/nope", "", "", 404, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := snapshot(t, h)
			resp, b := h.do(tc.method, tc.path, tc.contentType, tc.body)
			if resp.StatusCode != tc.status {
				t.Fatalf("%s %s = %d %s, want %d", tc.method, tc.path, resp.StatusCode, truncate(b), tc.status)
			}
			if ct := resp.Header.Get("Content-Type"); ct != apiv1.ProblemContentType {
				t.Errorf("Content-Type = %q, want %s", ct, apiv1.ProblemContentType)
			}
			var p apiv1.Problem
			if err := json.Unmarshal(b, &p); err != nil {
				t.Fatalf("problem body %s: %v", truncate(b), err)
			}
			if p.Status != tc.status || p.Title == "" || p.Type == "" || p.Detail == "" {
				t.Errorf("problem %+v lacks status/title/type/detail", p)
			}
			if tc.status == http.StatusMethodNotAllowed && strings.Join(resp.Header.Values("Allow"), ",") != "GET,PATCH,DELETE" {
				t.Errorf("Allow = %v, want GET, PATCH, DELETE", resp.Header.Values("Allow"))
			}
			if tc.typ != "" && p.Type != tc.typ {
				t.Errorf("type = %q, want %q", p.Type, tc.typ)
			}
			if tc.pointer != "" {
				found := false
				for _, fe := range p.Errors {
					found = found || fe.Pointer == tc.pointer
				}
				if !found {
					t.Errorf("errors %+v lack pointer %q", p.Errors, tc.pointer)
				}
			}
			if after := snapshot(t, h); after != before {
				t.Errorf("a rejected request changed the store:\nbefore %s\nafter  %s", before, after)
			}
		})
	}
}

// snapshot renders everything a request could change.
func snapshot(t *testing.T, h *harness) string {
	t.Helper()
	ctx := t.Context()
	eps, err := h.store.ListEndpoints(ctx)
	if err != nil {
		t.Fatal(err)
	}
	incs, err := h.store.ListIncidents(ctx, store.IncidentFilter{})
	if err != nil {
		t.Fatal(err)
	}
	mws, err := h.store.ListObjects(ctx, "maintenance")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal([]any{eps, incs, mws})
	return string(b)
}

func truncate(b []byte) string {
	if len(b) > 300 {
		return string(b[:300]) + "…"
	}
	return string(b)
}

// seedIncident stores an incident the way the alerter does.
func seedIncident(t *testing.T, h *harness, id, endpointID string, state model.IncidentState) model.Incident {
	t.Helper()
	opened := t0.Add(-10 * time.Minute)
	inc := model.Incident{
		ID: id, EndpointID: endpointID, State: model.IncidentOpen, OpenedWindow: opened, OpenedAt: opened.Add(70 * time.Second),
		FirstFailure: opened.Add(-time.Minute), Class: "timeout", Reason: "probe timed out",
		Transitions: []model.Transition{{At: opened.Add(70 * time.Second), To: model.IncidentOpen, Reason: "2 of 3 windows down"}},
		Data:        json.RawMessage(`{"private":"alerter state"}`),
	}
	if state == model.IncidentResolved {
		at := t0.Add(-time.Minute)
		inc.State = model.IncidentResolved
		inc.ResolvedAt, inc.ResolvedWindow = &at, &at
		inc.Transitions = append(inc.Transitions, model.Transition{At: at, From: model.IncidentOpen, To: model.IncidentResolved, Reason: "2 up windows"})
	}
	if ep, err := h.store.GetEndpoint(t.Context(), endpointID); err == nil {
		inc.Tenant = ep.Tenant // as the alerter opens it: in its endpoint's tenant
	}
	tr, err := h.store.GetTracker(t.Context(), id) // one tracker per seeded incident keeps them independent
	if err != nil {
		t.Fatal(err)
	}
	tr.EndpointID = id
	if err := h.store.SaveTracker(t.Context(), tr, inc); err != nil {
		t.Fatalf("seed incident %s: %v", id, err)
	}
	got, err := h.store.GetIncident(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// TestEveryFieldProblemInFieldOrder: a body with many mistakes hears of
// each, in the order of the fields, whether the rule is the model's (URL
// form, transport, revision, rule bounds) or the request's.
func TestEveryFieldProblemInFieldOrder(t *testing.T) {
	h := newHarness(t)
	body := `{"name":"","url":"ftp://b.example/mcp","transport":"ws","protocolVersion":"latest","timeout":"soon",` +
		`"labels":{"1a":"x"},"rules":{"openAfter":-1,"openWindow":200,"repeatInterval":"1s"}}`
	var p apiv1.Problem
	h.mustJSON("POST", "/v1/endpoints", body, http.StatusBadRequest, &p)
	want := []apiv1.FieldError{
		{Pointer: "#/name", Detail: "is required"},
		{Pointer: "#/url", Detail: "scheme must be http or https"},
		{Pointer: "#/transport", Detail: "must be one of auto, streamable-http, sse"},
		{Pointer: "#/protocolVersion", Detail: "must be a protocol revision date such as 2025-06-18"},
		{Pointer: "#/timeout", Detail: `must be a Go duration such as "10s"`},
		{Pointer: "#/labels/1a", Detail: "label names match ^[A-Za-z_][A-Za-z0-9_./-]*$ and are at most 63 characters"},
		{Pointer: "#/rules/openAfter", Detail: "must be between 0 (default) and 100"},
		{Pointer: "#/rules/openWindow", Detail: "must be between 0 (default) and 100"},
		{Pointer: "#/rules/repeatInterval", Detail: "must be at least 1m0s"},
	}
	if !slices.Equal(p.Errors, want) {
		t.Fatalf("errors:\n got %+v\nwant %+v", p.Errors, want)
	}
}

// A 405's Allow lists the methods of the route asked for. chi's Match
// says yes to every method on a collection route's path without its
// trailing slash (the mount's own node), so DELETE /v1/endpoints used to
// answer Allow: GET, POST, PUT, PATCH, DELETE, the refused method among them.
func TestMethodNotAllowedListsTheRoutesMethods(t *testing.T) {
	h := newHarness(t)
	ep := h.create(`{"name":"a","url":"https://a.example/mcp"}`)
	for _, tc := range []struct{ method, path, allow string }{
		{"DELETE", "/v1/endpoints", "GET,POST"},
		{"PUT", "/v1/endpoints", "GET,POST"},
		{"DELETE", "/v1/incidents", "GET"},
		{"PUT", "/v1/endpoints/" + ep.ID, "GET,PATCH,DELETE"},
	} {
		// Without a JSON body too: the method is the mistake, not the
		// content type (this answered 415 on a mount's path).
		if resp, b := h.do(tc.method, tc.path, "text/plain", ""); resp.StatusCode != http.StatusMethodNotAllowed {
			t.Errorf("%s %s without a body = %d %s, want 405", tc.method, tc.path, resp.StatusCode, truncate(b))
		}
		resp, b := h.do(tc.method, tc.path, "application/json", `{}`)
		if resp.StatusCode != http.StatusMethodNotAllowed {
			t.Errorf("%s %s = %d %s, want 405", tc.method, tc.path, resp.StatusCode, truncate(b))
			continue
		}
		if got := strings.Join(resp.Header.Values("Allow"), ","); got != tc.allow {
			t.Errorf("%s %s: Allow %s, want %s", tc.method, tc.path, got, tc.allow)
		}
	}
}
