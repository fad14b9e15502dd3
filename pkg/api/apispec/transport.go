package apispec

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// Transport validates every exchange a client sends through next against
// the API's document and reports each mismatch to t; see Spec.Transport.
// A nil next is http.DefaultTransport.
func Transport(t Reporter, next http.RoundTripper) http.RoundTripper {
	t.Helper()
	s, err := Load()
	if err != nil {
		t.Errorf("%v", err)
		if next == nil {
			next = http.DefaultTransport
		}
		return next
	}
	return s.Transport(t, next)
}

// Client is an *http.Client whose every exchange with the API is
// validated against the document (Transport over http.DefaultTransport):
// what a test of a whole running mcpmon — the daemon's end-to-end tests,
// the command line's — gives its HTTP calls, so their traffic is held to
// the contract like the pkg/api tests' is by Handler.
func Client(t Reporter) *http.Client {
	t.Helper()
	return &http.Client{Transport: Transport(t, nil)}
}

// Transport is the client-side twin of Handler, for tests that talk to a
// whole running server over the network, where no handler can be
// wrapped: it sends each request through next (nil: http.DefaultTransport)
// and checks the request and its answer with Check, by the same rules,
// reporting each mismatch to t as
//
//	apispec: METHOD /path?query (operationId) -> STATUS: reason
//
// It checks only what the document claims: paths under /v1 and any path
// it has an operation for (/docs). The server's other routes — /metrics,
// /healthz, /readyz, the public status pages — pass through unchecked.
//
// The response body is read whole, validated, and handed to the caller
// unchanged; a transport error is returned as is, with nothing to check.
func (s *Spec) Transport(t Reporter, next http.RoundTripper) http.RoundTripper {
	if next == nil {
		next = http.DefaultTransport
	}
	return &transport{s: s, t: t, next: next}
}

type transport struct {
	s    *Spec
	t    Reporter
	next http.RoundTripper
}

func (tr *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if !tr.s.claims(req) {
		return tr.next.RoundTrip(req)
	}
	// A RoundTripper must not change the caller's request: send a clone
	// whose body is the bytes read here, which the validator reads again.
	var reqBody []byte
	if req.Body != nil && req.Body != http.NoBody {
		b, err := io.ReadAll(req.Body)
		_ = req.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("apispec: %s %s: read the request body: %w", req.Method, req.URL.Path, err)
		}
		reqBody = b
	}
	out := req.Clone(req.Context())
	if reqBody != nil {
		out.Body = io.NopCloser(bytes.NewReader(reqBody))
		out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(reqBody)), nil }
	}
	resp, err := tr.next.RoundTrip(out)
	if err != nil {
		return resp, err
	}
	respBody, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("apispec: %s %s: read the response body: %w", req.Method, req.URL.Path, err)
	}
	resp.Body = io.NopCloser(bytes.NewReader(respBody))

	// The validator gets its own copies: Check replaces their bodies.
	vreq := req.Clone(context.WithoutCancel(req.Context()))
	vresp := *resp
	vresp.Header = resp.Header.Clone()
	for _, msg := range tr.s.Check(vreq, reqBody, &vresp, respBody) {
		tr.t.Errorf("apispec: %s -> %d: %s", tr.s.label(vreq), resp.StatusCode, msg)
	}
	return resp, nil
}

// claims reports whether the document speaks for the request's path: the
// /v1 API, and whatever else it has an operation for.
func (s *Spec) claims(req *http.Request) bool {
	p := req.URL.Path
	return p == "/v1" || strings.HasPrefix(p, "/v1/") || s.documented(req)
}
