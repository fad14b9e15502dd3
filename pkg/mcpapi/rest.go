package mcpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	apiv1 "github.com/mcpmon/mcpmon/pkg/api/v1"
)

// restCall is one in-process request to the REST API as c.
type restCall struct {
	rest http.Handler
	c    caller
}

// response is what a REST handler wrote, at most MaxResponseBytes of body.
type response struct {
	header   http.Header
	status   int
	body     bytes.Buffer
	overflow bool
}

func (r *response) Header() http.Header { return r.header }

func (r *response) WriteHeader(status int) {
	if r.status == 0 {
		r.status = status
	}
}

func (r *response) Write(p []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	if room := MaxResponseBytes - r.body.Len(); len(p) > room {
		r.overflow = true
		r.body.Write(p[:max(room, 0)])
		return len(p), nil
	}
	return r.body.Write(p)
}

// do sends method path (with its query) and body (nil: none) and decodes a
// 2xx JSON answer into out. A problem answer is returned as a *toolError
// carrying its detail, so the tool's caller reads what a REST client reads.
func (rc restCall) do(ctx context.Context, method, path string, body any, out any) (int, error) {
	var b []byte
	if body != nil {
		var err error
		if b, err = json.Marshal(body); err != nil {
			return 0, fmt.Errorf("encode %s %s: %w", method, path, err)
		}
	}
	req, err := http.NewRequestWithContext(cancelOnly{ctx}, method, path, bytes.NewReader(b))
	if err != nil {
		return 0, fmt.Errorf("build %s %s: %w", method, path, err)
	}
	req.Host, req.RemoteAddr = rc.c.host, rc.c.remoteAddr
	if rc.c.authorization != "" {
		req.Header.Set("Authorization", rc.c.authorization)
	}
	if rc.c.requestID != "" {
		req.Header.Set("X-Request-Id", rc.c.requestID)
	}
	if method != http.MethodGet {
		req.Header.Set("Content-Type", "application/json")
	}
	resp := &response{header: http.Header{}}
	rc.rest.ServeHTTP(resp, req)
	if resp.status == 0 {
		resp.status = http.StatusOK
	}
	if resp.overflow {
		return resp.status, &toolError{msg: fmt.Sprintf("the answer of %s %s is over %d bytes; ask for fewer items (limit)", method, pathOnly(path), MaxResponseBytes)}
	}
	if resp.status < 200 || resp.status > 299 {
		return resp.status, problemError(resp.status, resp.body.Bytes())
	}
	if out != nil {
		if err := json.Unmarshal(resp.body.Bytes(), out); err != nil {
			return resp.status, fmt.Errorf("decode the answer of %s %s: %w", method, pathOnly(path), err)
		}
	}
	return resp.status, nil
}

func pathOnly(p string) string {
	path, _, _ := strings.Cut(p, "?")
	return path
}

// toolError is a REST refusal as the tool's caller reads it: the problem's
// detail and field problems, never more than the REST client would see.
type toolError struct {
	status int
	msg    string
}

func (e *toolError) Error() string { return e.msg }

// problemError turns a problem+json body into a toolError.
func problemError(status int, body []byte) error {
	var p apiv1.Problem
	msg := http.StatusText(status)
	if json.Unmarshal(body, &p) == nil && p.Detail != "" {
		msg = p.Detail
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d %s", status, msg)
	for _, fe := range p.Errors {
		fmt.Fprintf(&b, "; %s: %s", fe.Pointer, fe.Detail)
	}
	return &toolError{status: status, msg: b.String()}
}

// isStatus reports whether err is a REST refusal with status.
func isStatus(err error, status int) bool {
	var te *toolError
	return errors.As(err, &te) && te.status == status
}
