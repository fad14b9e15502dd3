package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/mcpmon/mcpmon/pkg/api"
	"github.com/mcpmon/mcpmon/pkg/api/apispec"
	apiv1 "github.com/mcpmon/mcpmon/pkg/api/v1"
	"github.com/mcpmon/mcpmon/pkg/model"
)

func loadSpec(t *testing.T) *apispec.Spec {
	t.Helper()
	s, err := apispec.Load()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// servedRoutes lists what api.New serves, as chi.Walk reports it.
func servedRoutes(t *testing.T, h http.Handler) []string {
	t.Helper()
	routes, ok := h.(chi.Routes)
	if !ok {
		t.Fatal("api.New does not return a chi router")
	}
	var out []string
	if err := chi.Walk(routes, func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		out = append(out, method+" "+route)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestTheDocumentDescribesExactlyTheRoutesServed: every route+method on
// the router is an operation of openapi.yaml and every operation is a
// route. A new route fails here with what to add where.
func TestTheDocumentDescribesExactlyTheRoutesServed(t *testing.T) {
	h := newHarness(t)
	served := servedRoutes(t, api.New(api.Options{Store: h.store}))
	for _, msg := range loadSpec(t).Routes(served) {
		t.Error(msg)
	}
}

// TestRouteDriftIsReported proves the check above can fail, both ways, and
// that its message says where to add the operation.
func TestRouteDriftIsReported(t *testing.T) {
	spec := loadSpec(t)
	h := newHarness(t)
	served := servedRoutes(t, api.New(api.Options{Store: h.store}))
	served = slices.DeleteFunc(served, func(r string) bool { return r == "DELETE /v1/maintenance/{id}" })
	served = append(served, "GET /v1/endpoints/{id}/frobs")
	msgs := spec.Routes(served)
	if len(msgs) != 2 {
		t.Fatalf("got %d messages, want 2 (one added route, one missing):\n%s", len(msgs), strings.Join(msgs, "\n"))
	}
	joined := strings.Join(msgs, "\n")
	for _, want := range []string{
		`route GET /v1/endpoints/{id}/frobs is served by api.New but pkg/api/openapi.yaml has no operation for it: add paths["/v1/endpoints/{id}/frobs"].get`,
		"additionalProperties: false",
		`pkg/api/openapi.yaml describes DELETE /v1/maintenance/{id} (operationId deleteMaintenance), which api.New does not serve`,
	} {
		if !strings.Contains(joined, want) {
			t.Errorf("messages lack %q:\n%s", want, joined)
		}
	}
}

// recorder is a Reporter that keeps what it is told.
type recorder struct{ errs []string }

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

// exchange sends one request through spec.Handler around a handler that
// answers status, contentType and body, and returns what was reported.
func exchange(t *testing.T, spec *apispec.Spec, method, path, reqBody string, status int, contentType, body string) []string {
	t.Helper()
	rec := &recorder{}
	h := spec.Handler(rec, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("X-Request-Id", "r1")
		w.Header().Set("ETag", `"1"`)
		w.Header().Set("Location", "/v1/endpoints/e1")
		if contentType != "" {
			w.Header().Set("Content-Type", contentType)
		}
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}))
	req := httptest.NewRequest(method, path, strings.NewReader(reqBody))
	if reqBody != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	h.ServeHTTP(httptest.NewRecorder(), req)
	return rec.errs
}

const endpointJSON = `{"id":"e1","tenant":"default","name":"docs","url":"https://mcp.example.com/mcp","transport":"auto",` +
	`"schedule":"@every 1m","timeout":"10s","paused":false,"createdAt":"2026-03-01T12:00:00Z",` +
	`"updatedAt":"2026-03-01T12:00:00Z","version":1,"state":"pending"%s}`

// TestResponsesAreHeldToTheDocument proves the validator every API test
// runs behind refuses what the document does not describe: a member it
// does not list (the schemas are closed), a missing required member, a
// wrong type, an undocumented status, a missing required header, and a
// problem that is not RFC 9457 as the API writes it.
func TestResponsesAreHeldToTheDocument(t *testing.T) {
	spec := loadSpec(t)
	const create = `{"name":"docs","url":"https://mcp.example.com/mcp"}`
	for _, tc := range []struct {
		name                      string
		method, path, reqBody     string
		status                    int
		contentType, body, wantIn string // wantIn "" expects no report
	}{
		{"as documented", "POST", "/v1/endpoints", create, 201, "application/json", fmt.Sprintf(endpointJSON, ""), ""},
		{"an undocumented member", "POST", "/v1/endpoints", create, 201, "application/json", fmt.Sprintf(endpointJSON, `,"events":[]`), "events"},
		{"a nested undocumented member", "GET", "/v1/endpoints/e1", "", 200, "application/json",
			fmt.Sprintf(endpointJSON, `,"lastVerdict":{"window":"2026-03-01T12:00:00Z","windowLength":"1m0s","state":"up","results":1,"score":3}`), "score"},
		{"a missing required member", "GET", "/v1/endpoints/e1", "", 200, "application/json",
			strings.Replace(fmt.Sprintf(endpointJSON, ""), `"state":"pending"`, `"paused2":false`, 1), "state"},
		{"a wrong type", "GET", "/v1/endpoints/e1", "", 200, "application/json",
			strings.Replace(fmt.Sprintf(endpointJSON, ""), `"version":1`, `"version":"1"`, 1), "version"},
		{"an undocumented status", "GET", "/v1/endpoints/e1", "", http.StatusTeapot, apiv1.ProblemContentType,
			`{"type":"about:blank","title":"I'm a teapot","status":418}`, "418"},
		{"a problem with an extra member", "GET", "/v1/endpoints/e1", "", 404, apiv1.ProblemContentType,
			`{"type":"about:blank","title":"Not Found","status":404,"hint":"x"}`, "hint"},
		{"a documented problem", "GET", "/v1/endpoints/e1", "", 404, apiv1.ProblemContentType,
			`{"type":"about:blank","title":"Not Found","status":404,"detail":"endpoint e1 not found","instance":"/v1/endpoints/e1"}`, ""},
		{"an accepted request the document refuses", "POST", "/v1/endpoints", `{"name":"docs","url":"https://x.example/mcp","colour":"red"}`,
			201, "application/json", fmt.Sprintf(endpointJSON, ""), "colour"},
		{"a refused request the document refuses too", "POST", "/v1/endpoints", `{"name":"docs","colour":"red"}`,
			400, apiv1.ProblemContentType, `{"type":"urn:mcpmon:problem:invalid-request","title":"Invalid request","status":400,"errors":[{"pointer":"#/colour","detail":"unknown field"}]}`, ""},
		{"no route, answered with a problem", "GET", "/v1/nothing", "", 404, apiv1.ProblemContentType,
			`{"type":"about:blank","title":"Not Found","status":404}`, ""},
		{"no route, answered with success", "GET", "/v1/nothing", "", 200, "application/json", `{}`, "no operation"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := exchange(t, spec, tc.method, tc.path, tc.reqBody, tc.status, tc.contentType, tc.body)
			joined := strings.Join(errs, "\n")
			switch {
			case tc.wantIn == "" && len(errs) > 0:
				t.Errorf("reported a conforming exchange:\n%s", joined)
			case tc.wantIn != "" && !strings.Contains(joined, tc.wantIn):
				t.Errorf("report %q does not name %q", joined, tc.wantIn)
			case tc.wantIn != "" && !strings.Contains(joined, tc.method+" "+tc.path):
				t.Errorf("report %q does not name the request", joined)
			}
		})
	}
}

// TestMissingRequiredHeaderIsReported: the ETag of an endpoint and the
// X-Request-Id of every answer are part of the contract.
func TestMissingRequiredHeaderIsReported(t *testing.T) {
	spec := loadSpec(t)
	rec := &recorder{}
	h := spec.Handler(rec, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = fmt.Fprintf(w, endpointJSON, "")
	}))
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/v1/endpoints/e1", nil))
	joined := strings.Join(rec.errs, "\n")
	for _, want := range []string{"ETag", "X-Request-Id"} {
		if !strings.Contains(joined, want) {
			t.Errorf("report %q does not name the missing %s header", joined, want)
		}
	}
}

// TestEveryOperationIsDocumentedWhole: each operation has an ID, a
// summary, a description, a tag and a success answer, and each authenticated one
// documents the answers every /v1 route can give (401, 403, 429, 500).
func TestEveryOperationIsDocumentedWhole(t *testing.T) {
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	b, err := api.OpenAPIJSON()
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	ids := map[string]string{}
	for path, item := range doc.Paths {
		for method, raw := range item {
			if method == "parameters" {
				continue
			}
			var op struct {
				OperationID string              `json:"operationId"`
				Summary     string              `json:"summary"`
				Description string              `json:"description"`
				Tags        []string            `json:"tags"`
				Security    *[]map[string][]any `json:"security"`
				Responses   map[string]any      `json:"responses"`
			}
			if err := json.Unmarshal(raw, &op); err != nil {
				t.Fatalf("%s %s: %v", method, path, err)
			}
			name := strings.ToUpper(method) + " " + path
			if op.OperationID == "" || op.Summary == "" || op.Description == "" || len(op.Tags) == 0 {
				t.Errorf("%s lacks operationId, summary, description or tags", name)
			}
			if other, dup := ids[op.OperationID]; dup {
				t.Errorf("%s and %s share operationId %q", name, other, op.OperationID)
			}
			ids[op.OperationID] = name
			ok2xx := false
			for status := range op.Responses {
				ok2xx = ok2xx || strings.HasPrefix(status, "2")
			}
			if !ok2xx {
				t.Errorf("%s documents no success answer", name)
			}
			if op.Security == nil {
				t.Errorf("%s has no security requirement of its own: name the scope it needs (or [] for a public one)", name)
				continue
			}
			if len(*op.Security) == 0 {
				continue // public
			}
			for _, status := range []string{"401", "403", "421", "429", "500"} {
				if _, ok := op.Responses[status]; !ok {
					t.Errorf("%s does not document %s, which every authenticated route can answer", name, status)
				}
			}
		}
	}
}

// TestTheDocumentIsServedWithoutAKey: /v1/openapi.json is the embedded
// document as JSON, OpenAPI 3.1.0, and needs no key even when keys are on.
func TestTheDocumentIsServedWithoutAKey(t *testing.T) {
	ah := newAuthHarness(t)
	resp, b := ah.call(http.MethodGet, "/v1/openapi.json", "", "")
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("GET /v1/openapi.json = %d %s %.200s", resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	var doc struct {
		OpenAPI string         `json:"openapi"`
		Paths   map[string]any `json:"paths"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.OpenAPI != "3.1.0" || doc.Paths["/v1/endpoints"] == nil {
		t.Errorf("served document: openapi %q, %d paths", doc.OpenAPI, len(doc.Paths))
	}
	want, _ := api.OpenAPIJSON()
	if string(b) != string(want) {
		t.Error("the served document differs from api.OpenAPIJSON")
	}
	// The rest of /v1 still needs a key.
	if resp, _ := ah.call(http.MethodGet, "/v1/endpoints", "", ""); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("GET /v1/endpoints without a key = %d, want 401", resp.StatusCode)
	}
}

// TestDocsRenderEveryOperation: /docs is one server-rendered page with
// every operation, its parameters, responses and schemas, and no script.
func TestDocsRenderEveryOperation(t *testing.T) {
	h := newHarness(t)
	resp, b := h.do(http.MethodGet, "/docs", "", "")
	page := string(b)
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("GET /docs = %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	if strings.Contains(strings.ToLower(page), "<script") || strings.Contains(page, "https://") && strings.Contains(page, `src="http`) {
		t.Error("the docs page loads or runs something")
	}
	for op, id := range loadSpec(t).Operations() {
		if !strings.Contains(page, `id="`+id+`"`) {
			t.Errorf("the docs page has no section for %s (%s)", op, id)
		}
	}
	for _, want := range []string{
		`<code>limit</code>`, `maximum 1000`, `needs a key with scope <span class="scope">admin</span>`,
		`id="schema-EndpointView"`, `application/problem&#43;json`, `<code>Retry-After</code>`, `&#34;name&#34;: &#34;docs&#34;`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the docs page lacks %q", want)
		}
	}
}

// TestAnEndpointStoredWithoutTransportShowsAuto: a record written without
// a transport (straight to the store, or by an older version) is probed
// as auto, and the API says auto rather than "", which the contract does
// not allow.
func TestAnEndpointStoredWithoutTransportShowsAuto(t *testing.T) {
	h := newHarness(t)
	if _, err := h.store.CreateEndpoint(t.Context(), model.Endpoint{ID: "bare", Name: "bare", URL: "https://mcp.example.com/mcp", Schedule: "@every 1m", Timeout: time.Second}); err != nil {
		t.Fatal(err)
	}
	var v apiv1.EndpointView
	h.mustJSON(http.MethodGet, "/v1/endpoints/bare", "", http.StatusOK, &v)
	if v.Transport != apiv1.DefaultTransport {
		t.Errorf("transport = %q, want %q", v.Transport, apiv1.DefaultTransport)
	}
}
