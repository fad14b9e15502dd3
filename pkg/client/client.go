// Package client is a typed Go client of mcpmon's REST API (/v1). It shares
// the API's request and response types (pkg/api/v1), so the wire contract has
// one definition. Requests leave through an injected *http.Client with the
// caller's bearer token; answers come back as those types, and every error
// response (application/problem+json) as a *Error that keeps the status,
// the problem type and the field problems, tested with IsNotFound and its
// siblings. List methods walk the server's pages one at a time: an
// iterator holds one page in memory, never the whole list.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	apiv1 "github.com/mcpmon/mcpmon/pkg/api/v1"
)

// maxResponseBytes bounds what one answer may hold in memory.
const maxResponseBytes = 32 << 20

// Client talks to one mcpmon API. Its zero value is not usable: call New.
type Client struct {
	base  string
	token string
	hc    *http.Client
	agent string
	// retries is how many times a 429 is retried after its Retry-After
	// (capped by maxWait): the server did nothing with the request, so
	// every method may be sent again.
	retries int
	maxWait time.Duration
}

// Option configures New.
type Option func(*Client)

// WithHTTPClient sends requests through hc (timeouts, transports, tests).
func WithHTTPClient(hc *http.Client) Option { return func(c *Client) { c.hc = hc } }

// WithUserAgent sets the User-Agent header.
func WithUserAgent(ua string) Option { return func(c *Client) { c.agent = ua } }

// WithRateLimitRetries retries a request answered 429 up to n times,
// waiting the answer's Retry-After but at most maxWait each time
// (default 3 times, 10s).
func WithRateLimitRetries(n int, maxWait time.Duration) Option {
	return func(c *Client) { c.retries, c.maxWait = n, maxWait }
}

// New returns a client of the API at base (e.g. "http://127.0.0.1:8080")
// that sends token as a bearer token ("" sends none: --auth none).
func New(base, token string, opts ...Option) (*Client, error) {
	u, err := url.Parse(strings.TrimRight(base, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("server URL %q: want http(s)://host[:port]", base)
	}
	c := &Client{base: u.String(), token: token, hc: http.DefaultClient, agent: "mcpmon-client", retries: 3, maxWait: 10 * time.Second}
	for _, o := range opts {
		o(c)
	}
	return c, nil
}

// Base is the API's base URL.
func (c *Client) Base() string { return c.base }

// Error is an error answer of the API: its problem details (RFC 9457) and
// the request that got it.
type Error struct {
	Method string
	Path   string
	Status int
	Type   string
	Title  string
	Detail string
	// Errors are the field problems of an invalid request.
	Errors []apiv1.FieldError
}

// Refused reports whether the API refused the request as invalid (400):
// sending it again unchanged cannot succeed.
func (e *Error) Refused() bool { return e.Status == http.StatusBadRequest }

func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s: %d", e.Method, e.Path, e.Status)
	switch {
	case e.Detail != "":
		b.WriteString(" " + e.Detail)
	case e.Title != "":
		b.WriteString(" " + e.Title)
	}
	for i, fe := range e.Errors {
		if i == 0 {
			b.WriteString(":")
		} else {
			b.WriteString(";")
		}
		fmt.Fprintf(&b, " %s %s", fe.Pointer, fe.Detail)
	}
	return b.String()
}

func statusOf(err error) int {
	var e *Error
	if errors.As(err, &e) {
		return e.Status
	}
	return 0
}

// IsNotFound reports whether err is the API's 404.
func IsNotFound(err error) bool { return statusOf(err) == http.StatusNotFound }

// IsConflict reports a 409 (a taken name, a resolved incident) or a 412
// (an If-Match on an outdated version).
func IsConflict(err error) bool {
	s := statusOf(err)
	return s == http.StatusConflict || s == http.StatusPreconditionFailed
}

// IsInvalid reports a 400: the request named bad fields (Error.Errors).
func IsInvalid(err error) bool { return statusOf(err) == http.StatusBadRequest }

// IsUnauthorized reports a 401 or 403: a missing, wrong or too weak key.
func IsUnauthorized(err error) bool {
	s := statusOf(err)
	return s == http.StatusUnauthorized || s == http.StatusForbidden
}

// request describes one call.
type request struct {
	method  string
	path    string // with the query
	body    any    // JSON-encoded unless nil
	ctype   string // default application/json
	ifMatch string
}

// do sends req and decodes a 2xx answer into out (nil: discard), retrying
// a 429 after its Retry-After. It returns the answer's headers.
func (c *Client) do(ctx context.Context, req request, out any) (http.Header, error) {
	var body []byte
	if req.body != nil {
		b, err := json.Marshal(req.body)
		if err != nil {
			return nil, fmt.Errorf("encode %s %s: %w", req.method, req.path, err)
		}
		body = b
	}
	for attempt := 0; ; attempt++ {
		h, err := c.once(ctx, req, body, out)
		var e *Error
		if attempt >= c.retries || !errors.As(err, &e) || e.Status != http.StatusTooManyRequests {
			return h, err
		}
		wait := time.Second
		if secs, perr := strconv.Atoi(h.Get("Retry-After")); perr == nil && secs > 0 {
			wait = time.Duration(secs) * time.Second
		}
		t := time.NewTimer(min(wait, c.maxWait))
		select {
		case <-ctx.Done():
			t.Stop()
			return h, err
		case <-t.C:
		}
	}
}

// once sends one request.
func (c *Client) once(ctx context.Context, req request, body []byte, out any) (http.Header, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	hr, err := http.NewRequestWithContext(ctx, req.method, c.base+req.path, rd)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", req.method, req.path, err)
	}
	hr.Header.Set("Accept", "application/json")
	hr.Header.Set("User-Agent", c.agent)
	if body != nil {
		ct := req.ctype
		if ct == "" {
			ct = "application/json"
		}
		hr.Header.Set("Content-Type", ct)
	}
	if req.ifMatch != "" {
		hr.Header.Set("If-Match", req.ifMatch)
	}
	if c.token != "" {
		hr.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.hc.Do(hr)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // it repeats the method and URL
		}
		return nil, fmt.Errorf("%s %s: %w", req.method, c.base+pathOnly(req.path), err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
	if err != nil {
		return resp.Header, fmt.Errorf("%s %s: read the answer: %w", req.method, req.path, err)
	}
	if resp.StatusCode >= 300 {
		e := &Error{Method: req.method, Path: pathOnly(req.path), Status: resp.StatusCode}
		var p apiv1.Problem
		if json.Unmarshal(raw, &p) == nil {
			e.Type, e.Title, e.Detail, e.Errors = p.Type, p.Title, p.Detail, p.Errors
		}
		if e.Detail == "" {
			// /readyz answers {"status":"not ready","reason":"..."}.
			var r struct{ Reason string }
			if json.Unmarshal(raw, &r) == nil {
				e.Detail = r.Reason
			}
		}
		if e.Title == "" {
			e.Title = http.StatusText(resp.StatusCode)
		}
		return resp.Header, e
	}
	if out != nil && len(raw) > 0 {
		if err := json.Unmarshal(raw, out); err != nil {
			return resp.Header, fmt.Errorf("%s %s: decode the answer: %w", req.method, req.path, err)
		}
	}
	return resp.Header, nil
}

func pathOnly(p string) string {
	if i := strings.IndexByte(p, '?'); i >= 0 {
		return p[:i]
	}
	return p
}

func esc(s string) string { return url.PathEscape(s) }

// query encodes the non-empty values of kv (pairs) as "?a=b&c=d", or "".
func query(kv ...string) string {
	q := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] != "" {
			q.Set(kv[i], kv[i+1])
		}
	}
	if len(q) == 0 {
		return ""
	}
	return "?" + q.Encode()
}

// walk fetches the pages of path (its query without cursor) until one
// has no next cursor. Each page is one JSON object holding a list in
// member and nextCursor; page gets the list's raw items, one page at a
// time, and stops the walk by returning false.
func walk(ctx context.Context, c *Client, path, member string, page func(items []json.RawMessage) bool) error {
	cursor := ""
	for {
		p := path
		if cursor != "" {
			sep := "?"
			if strings.Contains(p, "?") {
				sep = "&"
			}
			p += sep + "cursor=" + url.QueryEscape(cursor)
		}
		var out map[string]json.RawMessage
		if _, err := c.do(ctx, request{method: http.MethodGet, path: p}, &out); err != nil {
			return err
		}
		var items []json.RawMessage
		if raw, ok := out[member]; ok {
			if err := json.Unmarshal(raw, &items); err != nil {
				return fmt.Errorf("GET %s: %s: %w", pathOnly(p), member, err)
			}
		}
		cursor = ""
		if raw, ok := out["nextCursor"]; ok {
			if err := json.Unmarshal(raw, &cursor); err != nil {
				return fmt.Errorf("GET %s: nextCursor: %w", pathOnly(p), err)
			}
		}
		if !page(items) || cursor == "" {
			return nil
		}
	}
}

// seq walks a paged list at path as an iterator of T. Breaking out of the
// loop stops the walk; an error ends it as the last pair.
func seq[T any](ctx context.Context, c *Client, path, member string) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		var zero T
		var decodeErr error
		err := walk(ctx, c, path, member, func(items []json.RawMessage) bool {
			for _, raw := range items {
				var v T
				if decodeErr = json.Unmarshal(raw, &v); decodeErr != nil {
					return false
				}
				if !yield(v, nil) {
					return false
				}
			}
			return true
		})
		if err == nil && decodeErr != nil {
			err = fmt.Errorf("GET %s: %w", pathOnly(path), decodeErr)
		}
		if err != nil {
			yield(zero, err)
		}
	}
}

// collect drains an iterator into a slice.
func collect[T any](s iter.Seq2[T, error]) ([]T, error) {
	var out []T
	for v, err := range s {
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}
