// Package apispec holds the REST API's tests to its OpenAPI 3.1 document
// (pkg/api/openapi.yaml). Handler wraps an API handler so every request
// and response that passes through it is validated against the document;
// Routes compares the operations the document describes with the routes
// a chi router serves. Data enters as HTTP traffic and route lists, and
// leaves as mismatch reports to the test (t.Errorf). It is for tests: it
// buffers whole bodies.
//
// The validator is pb33f/libopenapi-validator, which reads OpenAPI 3.1 and
// its JSON Schema 2020-12 dialect natively (type arrays, const,
// propertyNames, examples).
package apispec

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	"github.com/pb33f/libopenapi-validator/config"
	liberrors "github.com/pb33f/libopenapi-validator/errors"
	"github.com/pb33f/libopenapi-validator/schema_validation"
	"github.com/pb33f/libopenapi/datamodel/high/base"
	v3 "github.com/pb33f/libopenapi/datamodel/high/v3"

	"github.com/mcpmon/mcpmon/pkg/api"
	apiv1 "github.com/mcpmon/mcpmon/pkg/api/v1"
)

// Reporter is where mismatches go; *testing.T satisfies it.
type Reporter interface {
	Helper()
	Errorf(format string, args ...any)
}

// Spec is the parsed document with a validator over it. It is safe for
// concurrent use.
type Spec struct {
	model   *v3.Document
	problem *base.Schema

	mu sync.Mutex // the validator's caches are not documented as safe for concurrent use
	v  validator.Validator
	sv schema_validation.SchemaValidator
}

// Load returns the API's embedded document, parsed once per process: it
// is constant, a parse costs about a second of CPU, and every test that
// validates traffic — each pkg/api harness, each request of a daemon
// end-to-end test — asks for it. A Spec is safe for concurrent use.
func Load() (*Spec, error) { return loadOnce() }

var loadOnce = sync.OnceValues(func() (*Spec, error) { return Parse(api.OpenAPIYAML()) })

// Parse parses an OpenAPI 3.1 document (Load uses the API's own; tests of
// this package use hand-made ones).
func Parse(doc []byte) (*Spec, error) {
	d, err := libopenapi.NewDocument(doc)
	if err != nil {
		return nil, fmt.Errorf("apispec: parse: %w", err)
	}
	m, err := d.BuildV3Model()
	if err != nil {
		return nil, fmt.Errorf("apispec: build model: %w", err)
	}
	// Security is not checked here: most API tests run with
	// authentication off, and TestEveryRouteRequiresAKey proves every
	// route's 401 and 403 against the scopes this document names.
	opts := []config.Option{config.WithoutSecurityValidation(), config.WithFormatAssertions()}
	v, errs := validator.NewValidator(d, opts...)
	if len(errs) > 0 {
		return nil, fmt.Errorf("apispec: validator: %v", errs)
	}
	s := &Spec{model: &m.Model, v: v, sv: schema_validation.NewSchemaValidator(opts...)}
	if m.Model.Components != nil && m.Model.Components.Schemas != nil {
		if p, ok := m.Model.Components.Schemas.Get("Problem"); ok {
			s.problem = p.Schema()
		}
	}
	if s.problem == nil {
		return nil, fmt.Errorf("apispec: the document has no components.schemas.Problem")
	}
	return s, nil
}

// Lint validates the document itself against the OpenAPI 3.1 schema and
// returns each violation.
func (s *Spec) Lint() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ok, errs := s.v.ValidateDocument(); !ok {
		return describe("the document is not valid OpenAPI 3.1", errs)
	}
	return nil
}

// Handler validates every exchange through h against the API's document
// and reports each mismatch to t; see Spec.Handler.
func Handler(t Reporter, h http.Handler) http.Handler {
	t.Helper()
	s, err := Load()
	if err != nil {
		t.Errorf("%v", err)
		return h
	}
	return s.Handler(t, h)
}

// Handler validates every exchange through h and reports mismatches to t
// with method, path, status and the validator's reason.
//
// What is checked, and why:
//   - Every response, whatever its status, must be one the operation
//     documents, with the documented headers and a body that matches the
//     schema (objects the API owns are closed: an undocumented member
//     fails).
//   - A request the server accepted (2xx) must match the document too: the
//     document may not be stricter than the server. A request the server
//     refused (4xx) is not held to the document — tests send invalid JSON,
//     wrong content types and bad parameters on purpose, and the document
//     rejects those as well; its problem+json answer is still checked.
//   - A request for no documented operation must be answered with a
//     problem (401 before routing with keys on, 404 for no route, 405 for
//     a known path with another method), which is checked against the
//     Problem schema.
func (s *Spec) Handler(t Reporter, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var reqBody []byte
		if r.Body != nil {
			var err error
			if reqBody, err = io.ReadAll(r.Body); err != nil {
				t.Errorf("apispec: %s %s: reading the request body: %v", r.Method, r.URL.Path, err)
			}
			r.Body = io.NopCloser(bytes.NewReader(reqBody))
		}
		// The validator reads the body again: give it its own request.
		vreq := r.Clone(context.WithoutCancel(r.Context()))
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)

		resp := rec.Result()
		respBody := rec.Body.Bytes()
		for _, msg := range s.Check(vreq, reqBody, resp, respBody) {
			t.Errorf("apispec: %s -> %d: %s", s.label(vreq), resp.StatusCode, msg)
		}
		for k, vs := range rec.Header() {
			w.Header()[k] = vs
		}
		w.WriteHeader(rec.Code)
		_, _ = w.Write(respBody)
	})
}

// Check validates one exchange and returns what does not match, empty
// when all does. Handler calls it for every request; a test calls it
// directly to prove a hand-made response is refused.
func (s *Spec) Check(req *http.Request, reqBody []byte, resp *http.Response, respBody []byte) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	resp.Body = io.NopCloser(bytes.NewReader(respBody))
	req.Body = io.NopCloser(bytes.NewReader(reqBody))

	if !s.documented(req) {
		return s.checkUndocumented(req, resp, respBody)
	}
	var out []string
	if resp.StatusCode >= 200 && resp.StatusCode <= 299 {
		if ok, errs := s.v.ValidateHttpRequest(req); !ok {
			out = append(out, describe("request accepted with 2xx does not match the document", errs)...)
		}
		req.Body = io.NopCloser(bytes.NewReader(reqBody))
	}
	if ok, errs := s.v.ValidateHttpResponse(req, resp); !ok {
		out = append(out, describe("response does not match the document", errs)...)
	}
	return out
}

// documented reports whether the document has an operation for the
// request's method and path.
func (s *Spec) documented(req *http.Request) bool {
	_, ok := s.operation(req)
	return ok
}

// operation returns the operationId of the request's method and path, and
// whether the document has one.
func (s *Spec) operation(req *http.Request) (string, bool) {
	want := strings.ToUpper(req.Method)
	for op, id := range s.Operations() {
		method, tmpl, _ := strings.Cut(op, " ")
		if method == want && matchTemplate(tmpl, req.URL.Path) {
			return id, true
		}
	}
	return "", false
}

// label names an exchange in a report: method, path and query, and the
// operation when the document has one ("GET /v1/audit?limit=5
// (listAudit)").
func (s *Spec) label(req *http.Request) string {
	l := req.Method + " " + req.URL.RequestURI()
	if id, ok := s.operation(req); ok {
		l += " (" + id + ")"
	}
	return l
}

// checkUndocumented accepts only a problem answer to a request for no
// operation.
func (s *Spec) checkUndocumented(req *http.Request, resp *http.Response, body []byte) []string {
	switch resp.StatusCode {
	case http.StatusUnauthorized, http.StatusNotFound, http.StatusMethodNotAllowed, http.StatusMisdirectedRequest, http.StatusTooManyRequests:
	default:
		return []string{fmt.Sprintf("the document has no operation %s %s, yet the server answered %d (add the operation to pkg/api/openapi.yaml)", req.Method, req.URL.Path, resp.StatusCode)}
	}
	if ct := resp.Header.Get("Content-Type"); ct != apiv1.ProblemContentType {
		return []string{fmt.Sprintf("an answer to a request for no operation has Content-Type %q, want %s", ct, apiv1.ProblemContentType)}
	}
	if ok, errs := s.sv.ValidateSchemaString(s.problem, string(body)); !ok {
		return describe("problem body does not match components.schemas.Problem", errs)
	}
	return nil
}

// Operations returns the document's operations as "METHOD /path" →
// operationId.
func (s *Spec) Operations() map[string]string {
	out := map[string]string{}
	if s.model.Paths == nil || s.model.Paths.PathItems == nil {
		return out
	}
	for path, item := range s.model.Paths.PathItems.FromOldest() {
		for method, op := range item.GetOperations().FromOldest() {
			out[strings.ToUpper(method)+" "+path] = op.OperationId
		}
	}
	return out
}

// Scopes returns the key scopes each operation's security requirement
// names, as "METHOD /path" → scopes; a public operation has none.
func (s *Spec) Scopes() map[string][]string {
	out := map[string][]string{}
	if s.model.Paths == nil || s.model.Paths.PathItems == nil {
		return out
	}
	for path, item := range s.model.Paths.PathItems.FromOldest() {
		for method, op := range item.GetOperations().FromOldest() {
			reqs := s.model.Security
			if op.Security != nil {
				reqs = op.Security
			}
			var scopes []string
			for _, req := range reqs {
				if req == nil || req.Requirements == nil {
					continue
				}
				for _, roles := range req.Requirements.FromOldest() {
					scopes = append(scopes, roles...)
				}
			}
			out[strings.ToUpper(method)+" "+path] = scopes
		}
	}
	return out
}

// Routes compares the routes a router serves ("METHOD /pattern", as
// chi.Walk reports them) with the document's operations and returns one
// message per difference, each saying what to add where.
func (s *Spec) Routes(served []string) []string {
	ops := s.Operations()
	seen := map[string]bool{}
	var out []string
	for _, r := range served {
		method, pattern, _ := strings.Cut(r, " ")
		key := method + " " + normalize(pattern)
		seen[key] = true
		if _, ok := ops[key]; !ok {
			out = append(out, fmt.Sprintf("route %s is served by api.New but pkg/api/openapi.yaml has no operation for it: "+
				"add paths[%q].%s with operationId, summary, description, tags, security (bearerKey: [the scope it needs]), "+
				"its parameters and request body, and every response status the handler can answer (problem+json ones by "+
				"$ref to components/responses); schemas of new JSON bodies go under components/schemas with "+
				"additionalProperties: false and their required members",
				key, normalize(pattern), strings.ToLower(method)))
		}
	}
	for _, op := range slices.Sorted(func(yield func(string) bool) {
		for k := range ops {
			if !yield(k) {
				return
			}
		}
	}) {
		if !seen[op] {
			method, path, _ := strings.Cut(op, " ")
			out = append(out, fmt.Sprintf("pkg/api/openapi.yaml describes %s (operationId %s), which api.New does not serve: "+
				"remove paths[%q].%s, or register the route in pkg/api/api.go", op, ops[op], path, strings.ToLower(method)))
		}
	}
	return out
}

// normalize turns a chi pattern into an OpenAPI path: no trailing slash
// (chi reports "/v1/endpoints/" for a subrouter's "/"; the API answers
// both) and no catch-all.
func normalize(pattern string) string {
	pattern = strings.TrimSuffix(pattern, "/*")
	if len(pattern) > 1 {
		pattern = strings.TrimSuffix(pattern, "/")
	}
	return pattern
}

// matchTemplate matches a request path against an OpenAPI path template
// whose {params} each stand for one non-empty segment.
func matchTemplate(tmpl, path string) bool {
	ts := strings.Split(strings.Trim(tmpl, "/"), "/")
	ps := strings.Split(strings.Trim(path, "/"), "/")
	if len(ts) != len(ps) {
		return false
	}
	for i, t := range ts {
		if strings.HasPrefix(t, "{") && strings.HasSuffix(t, "}") {
			if ps[i] == "" {
				return false
			}
			continue
		}
		if t != ps[i] {
			return false
		}
	}
	return true
}

// describe turns validator errors into one line each, with the schema
// failures that explain them.
func describe(what string, errs []*liberrors.ValidationError) []string {
	var out []string
	for _, e := range errs {
		var b strings.Builder
		fmt.Fprintf(&b, "%s: %s", what, e.Message)
		if e.Reason != "" && e.Reason != e.Message {
			fmt.Fprintf(&b, " (%s)", e.Reason)
		}
		const shown = 5 // the first few say what is wrong; a long list repeats it
		for i, f := range e.SchemaValidationErrors {
			if i == shown {
				fmt.Fprintf(&b, "; and %d more", len(e.SchemaValidationErrors)-shown)
				break
			}
			loc := f.FieldPath
			if loc == "" {
				loc = "/" + strings.Join(f.InstancePath, "/")
			}
			fmt.Fprintf(&b, "; at %s: %s", loc, f.Reason)
			if f.KeywordLocation != "" {
				fmt.Fprintf(&b, " [schema %s]", f.KeywordLocation)
			}
		}
		if e.SpecLine > 0 {
			fmt.Fprintf(&b, " (openapi.yaml line %d)", e.SpecLine)
		}
		for _, f := range e.SchemaValidationErrors {
			if strings.HasSuffix(f.KeywordLocation, "additionalProperties") {
				b.WriteString(": a member the document does not list; add it to that schema's properties in pkg/api/openapi.yaml (and to its required list if the API always sends it)")
				break
			}
		}
		out = append(out, b.String())
	}
	return out
}
