package prober

// classify.go owns the failure classes' assignment: probeError, and the
// mapping of transport errors, HTTP statuses and JSON-RPC errors to the
// classes of classes.go.

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"

	"github.com/mcpmon/mcpmon/pkg/netguard"
)

// probeError is a classified probe failure. It keeps its format and
// arguments apart so that redaction (redact.go) scrubs secrets only from
// what the target said (fromTarget and error arguments), never from
// mcpmon's own wording. Its message never carries URL query strings.
type probeError struct {
	class  string
	status int
	rpc    *rpcError
	format string
	args   []any
	// cause is the error the failure was classified from, when its text
	// may not be shown to tenants (a refusal's address): for the
	// operator's log only, never rendered.
	cause error
}

func (e *probeError) Error() string { return fmt.Sprintf(e.format, e.args...) }

func failf(class string, status int, format string, args ...any) *probeError {
	return &probeError{class: class, status: status, format: format, args: args}
}

// prefixed puts prefix (mcpmon's words) before e's message.
func (e *probeError) prefixed(prefix string) *probeError {
	e.format = "%s" + e.format
	e.args = append([]any{prefix}, e.args...)
	return e
}

// blocked is an SSRF guard refusal as a probe failure. Its message is the
// guard's fixed sentence alone (netguard.ErrBlocked, or
// ErrOutsideSecretNetworks from a confined guard): the transport's error
// text names the address dialed, which is the operator's to know, not the
// tenant's. err stays behind as the cause (blockedDetail).
func blocked(status int, err error) *probeError {
	sentence := netguard.ErrBlocked
	if errors.Is(err, netguard.ErrOutsideSecretNetworks) {
		sentence = netguard.ErrOutsideSecretNetworks
	}
	pe := failf(ClassBlockedTarget, status, "%v", sentence)
	pe.cause = err
	return pe
}

// blockedDetail is the full refusal behind e (the address and its blocked
// range), or "" when e is no refusal: for the operator's log.
func (e *probeError) blockedDetail() string {
	if e == nil {
		return ""
	}
	if d := netguard.Detail(e.cause); d != "" {
		return d
	}
	for _, a := range e.args {
		if sub, ok := a.(*probeError); ok {
			if d := sub.blockedDetail(); d != "" {
				return d
			}
		}
	}
	return ""
}

func classOf(err error) string {
	var pe *probeError
	if errors.As(err, &pe) {
		return pe.class
	}
	return ""
}

// asRPCClass gives a JSON-RPC error answer the class of the call it failed.
func asRPCClass(err error, class, method string) error {
	var pe *probeError
	if errors.As(err, &pe) && pe.rpc != nil && pe.class == "" {
		pe.class = class
		pe.format, pe.args = "%s answered with JSON-RPC error %d: %s", []any{method, pe.rpc.Code, fromTarget(pe.rpc.Message)}
	}
	return err
}

// stepFail classifies a transport failure of step (a JSON-RPC method, or
// "GET (SSE)") before its answer began. A timeout, or a connection broken
// mid-probe, names the step (and a timeout the probe's timeout): "no
// answer" alone does not say which request hung.
func (r *run) stepFail(ctx context.Context, step string, err error) *probeError {
	var pe *probeError
	if errors.As(err, &pe) {
		return pe
	}
	pe = classify(ctx, err)
	switch pe.class {
	case ClassTimeout:
		return failf(ClassTimeout, 0, "%s: no answer within the timeout (%s): %v", step, r.timeout, err)
	case ClassNetwork:
		return pe.prefixed(step + ": ")
	}
	return pe
}

// readFail classifies an error while reading the body of step's answer.
func (r *run) readFail(ctx context.Context, step string, err error) *probeError {
	switch {
	case errors.Is(err, errTooLarge):
		return failf(ClassProtocolError, 0, "%s: response exceeds the %s cap", step, "size")
	case errors.Is(err, errSSELineTooLong), errors.Is(err, errSSETooManyEvents):
		return failf(ClassProtocolError, 0, "%s: %v", step, err)
	}
	pe := classify(ctx, err)
	if pe.class == ClassTimeout {
		return failf(ClassTimeout, 0, "%s: no complete answer within the timeout (%s): %v", step, r.timeout, err)
	}
	return pe.prefixed(step + ": reading response: ")
}

// statusError classifies a non-2xx answer. It reads at most 64 KiB of the
// body, only to find a JSON-RPC error.
func (r *run) statusError(ctx context.Context, resp *http.Response, method string) error {
	sc := resp.StatusCode
	switch {
	case sc == http.StatusUnauthorized:
		return r.authError(ctx, resp)
	case sc == http.StatusForbidden:
		return failf(ClassForbidden, sc, "%s: HTTP 403 Forbidden", method)
	case sc == http.StatusTooManyRequests:
		ra := resp.Header.Get("Retry-After")
		if len(ra) > 64 {
			ra = ra[:64]
		}
		if ra != "" {
			return failf(ClassRateLimited, sc, "%s: HTTP 429 Too Many Requests (Retry-After: %s)", method, fromTarget(ra))
		}
		return failf(ClassRateLimited, sc, "%s: HTTP 429 Too Many Requests", method)
	case sc == http.StatusNotImplemented:
		// A static site's way of saying "no POST here": a method not
		// served, like 405, so the probe tries the next transport.
		return failf(ClassNotFound, sc, "%s: HTTP 501 Not Implemented", method)
	case sc >= 500:
		return failf(ClassHTTP5xx, sc, "%s: HTTP %d %s", method, sc, http.StatusText(sc))
	case sc == http.StatusNotAcceptable || sc == http.StatusUnsupportedMediaType:
		return failf(ClassProtocolError, sc, "%s: HTTP %d %s: the server rejected the MCP content negotiation", method, sc, http.StatusText(sc))
	}
	// 400, 404 and others may carry a JSON-RPC error: under 2026-07-28 an
	// unknown method is a 404 with -32601, a 2025-era server answers
	// server/discover with 400 -32000.
	b, _ := readCapped(resp.Body, 64<<10)
	var rpcErr *rpcError
	if msgs, err := parseRPC(b); err == nil && len(msgs) == 1 && msgs[0].Error != nil {
		rpcErr = msgs[0].Error
	}
	if (sc == http.StatusNotFound || sc == http.StatusBadRequest) && r.sessionID != "" && method != "initialize" &&
		(sc == http.StatusNotFound || bytes.Contains(bytes.ToLower(b), []byte("session"))) {
		return failf(ClassSessionBroken, sc, "%s: HTTP %d for session created by initialize: the session is unknown to the server that answered (load balancer without sticky sessions?)", method, sc)
	}
	if rpcErr != nil {
		return &probeError{rpc: rpcErr, status: sc, format: "%s: HTTP %d with %v", args: []any{method, sc, rpcErr}}
	}
	switch sc {
	case http.StatusNotFound:
		return failf(ClassNotFound, sc, "%s: HTTP 404 Not Found", method)
	case http.StatusMethodNotAllowed:
		return failf(ClassNotFound, sc, "%s: HTTP 405 Method Not Allowed", method)
	}
	return failf(ClassProtocolError, sc, "%s: unexpected HTTP %d %s", method, sc, http.StatusText(sc))
}

// classify maps a transport error to a class. The message keeps the cause
// but never the request URL (it may carry a token in its query).
func classify(ctx context.Context, err error) *probeError {
	var pe *probeError
	if errors.As(err, &pe) {
		return pe
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	var dnsErr *net.DNSError
	var certErr *tls.CertificateVerificationError
	var uaErr x509.UnknownAuthorityError
	var ciErr x509.CertificateInvalidError
	var hnErr x509.HostnameError
	var rhErr tls.RecordHeaderError
	var alertErr tls.AlertError
	var netErr net.Error
	switch {
	case errors.Is(err, netguard.ErrBlocked):
		return blocked(0, err)
	case errors.As(err, &dnsErr):
		return failf(ClassDNS, 0, "DNS lookup of %s failed: %s", dnsErr.Name, dnsErr.Err)
	case errors.Is(err, syscall.ECONNREFUSED):
		return failf(ClassRefused, 0, "connection refused: %v", err)
	case errors.As(err, &certErr), errors.As(err, &uaErr), errors.As(err, &ciErr), errors.As(err, &hnErr),
		errors.As(err, &rhErr), errors.As(err, &alertErr):
		return failf(ClassTLS, 0, "TLS handshake failed: %v", err)
	case errors.Is(err, context.DeadlineExceeded), ctx.Err() != nil, errors.As(err, &netErr) && netErr.Timeout():
		return failf(ClassTimeout, 0, "no answer within the timeout: %v", err)
	case strings.Contains(err.Error(), "tls:"):
		return failf(ClassTLS, 0, "TLS handshake failed: %v", err)
	}
	return failf(ClassNetwork, 0, "%v", err)
}
