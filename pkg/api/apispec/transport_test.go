package apispec_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mcpmon/mcpmon/pkg/api/apispec"
)

// recorder is a Reporter that keeps what it is told.
type recorder struct{ errs []string }

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

// TestTransportHoldsAClientsTrafficToTheDocument: a client behind
// apispec.Transport has each exchange with a real server checked — a
// response the document does not describe is reported with the operation
// and the reason, a request the server accepted must match too — while
// the routes the document does not claim (/readyz, /metrics) pass, and the
// caller still reads the whole answer and the server the whole request.
func TestTransportHoldsAClientsTrafficToTheDocument(t *testing.T) {
	const (
		page      = `{"entries":[]}`
		extra     = `{"entries":[],"total":0}`
		problem   = `{"type":"about:blank","title":"Not Found","status":404,"detail":"no such route"}`
		keyCreate = `{"name":"ci","scope":"write"}`
	)
	for _, tc := range []struct {
		name                 string
		method, path, body   string
		status               int
		contentType, answer  string
		wantIn               []string // nil expects no report
		wantServerToReadBody bool
	}{
		{name: "as documented", method: "GET", path: "/v1/audit?limit=5", status: 200, contentType: "application/json", answer: page},
		{name: "an undocumented member", method: "GET", path: "/v1/audit", status: 200, contentType: "application/json", answer: extra,
			wantIn: []string{"GET /v1/audit (listAudit) -> 200", "total"}},
		{name: "an undocumented status", method: "GET", path: "/v1/audit", status: http.StatusTeapot, contentType: "application/problem+json",
			answer: `{"type":"about:blank","title":"teapot","status":418}`, wantIn: []string{"(listAudit) -> 418"}},
		{name: "an accepted request the document refuses", method: "POST", path: "/v1/keys", body: `{"name":"ci","scope":"root"}`,
			status: 201, contentType: "application/json", answer: `{}`, wantIn: []string{"createKey", "request accepted with 2xx does not match"},
			wantServerToReadBody: true},
		{name: "a refused request is not held to the document", method: "POST", path: "/v1/keys", body: `{"scope":1}`,
			status: 400, contentType: "application/problem+json",
			answer:               `{"type":"urn:mcpmon:problem:invalid-request","title":"Bad Request","status":400,"errors":[{"pointer":"#/scope","detail":"must be a string"}]}`,
			wantServerToReadBody: true},
		{name: "no operation, answered with a problem", method: "GET", path: "/v1/frobs", status: 404,
			contentType: "application/problem+json", answer: problem},
		{name: "no operation, answered 200", method: "GET", path: "/v1/frobs", status: 200, contentType: "application/json", answer: `{}`,
			wantIn: []string{"GET /v1/frobs -> 200", "no operation"}},
		{name: "outside the document", method: "GET", path: "/readyz", status: 200, contentType: "application/json", answer: `{"status":"ready"}`},
		{name: "outside the document, any answer", method: "GET", path: "/metrics", status: 200, contentType: "text/plain", answer: "up 1\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				got = string(b)
				w.Header().Set("X-Request-Id", "r1")
				w.Header().Set("Location", "/v1/keys/k1")
				w.Header().Set("Cache-Control", "no-store")
				w.Header().Set("Content-Type", tc.contentType)
				w.WriteHeader(tc.status)
				_, _ = io.WriteString(w, tc.answer)
			}))
			defer srv.Close()
			rec := &recorder{}
			hc := &http.Client{Transport: apispec.Transport(rec, nil)}
			var body io.Reader
			if tc.body != "" {
				body = strings.NewReader(tc.body)
			}
			req, err := http.NewRequestWithContext(t.Context(), tc.method, srv.URL+tc.path, body)
			if err != nil {
				t.Fatal(err)
			}
			if tc.body != "" {
				req.Header.Set("Content-Type", "application/json")
			}
			resp, err := hc.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			answer, err := io.ReadAll(resp.Body)
			if err != nil || string(answer) != tc.answer || resp.StatusCode != tc.status {
				t.Fatalf("the caller read %d %q (%v), want %d %q", resp.StatusCode, answer, err, tc.status, tc.answer)
			}
			if tc.wantServerToReadBody && got != tc.body {
				t.Fatalf("the server read %q, want %q", got, tc.body)
			}
			if tc.wantIn == nil {
				if len(rec.errs) > 0 {
					t.Fatalf("reported:\n%s", strings.Join(rec.errs, "\n"))
				}
				return
			}
			joined := strings.Join(rec.errs, "\n")
			for _, w := range tc.wantIn {
				if !strings.Contains(joined, w) {
					t.Errorf("reports lack %q:\n%s", w, joined)
				}
			}
		})
	}
}
