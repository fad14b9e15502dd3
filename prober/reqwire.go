package prober

import (
	"bufio"
	"context"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// The probe's own requests (initialize, notifications, ping, tools/list,
// DELETE) are written straight to the connection from the run's state,
// without building an http.Request and its header map and having
// Request.Write sort and copy it again: on a loopback probe that bookkeeping
// costs as much as the exchange. The bytes are those Request.Write gives for
// the request run.httpRequest builds (TestFastRequestMatchesRequestWrite);
// a host or path the fast writer does not handle byte for byte, and every
// redirect, takes the http.Request path.

// hfield is one request header line.
type hfield struct{ k, v string }

// headersExcluded are never taken from the endpoint's headers: Request.Write
// does not write the first five from a header map, and the protocol's own
// Content-Type and Accept always replace the endpoint's.
var headersExcluded = map[string]bool{
	"Host": true, "User-Agent": true, "Content-Length": true, "Transfer-Encoding": true, "Trailer": true,
	"Content-Type": true, "Accept": true,
}

// httpRequest is the request the fast writer spells out, as an
// http.Request: for redirects and the hosts the fast writer leaves alone.
func (r *run) httpRequest(ctx context.Context, method string, u *url.URL, body []byte, rpc string) *http.Request {
	req := newRequest(ctx, method, u, body)
	r.headers(req.Header, rpc)
	return req
}

// endpointHeaders returns the endpoint's headers as Request.Write would send
// them after run.headers: canonical keys, values with line breaks turned to
// spaces and trimmed, invalid names dropped. Built once per run.
func (r *run) endpointHeaders() []hfield {
	if r.epHeadersDone {
		return r.epHeaders
	}
	r.epHeadersDone = true
	keys := make([]string, 0, len(r.ep.Headers))
	for k := range r.ep.Headers {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var hs []hfield
	for _, k := range keys {
		ck := http.CanonicalHeaderKey(k)
		if headersExcluded[ck] || !validHeaderName(ck) {
			continue
		}
		f := hfield{ck, wireHeaderValue(r.ep.Headers[k])}
		if i := slices.IndexFunc(hs, func(h hfield) bool { return h.k == ck }); i >= 0 {
			hs[i] = f // as with Header.Set, the last one set wins
			continue
		}
		hs = append(hs, f)
	}
	r.epHeaders = hs
	return hs
}

// wireHeaders returns the header lines of a request for JSON-RPC method rpc
// (run.headers' choice of headers), sorted by key as Request.Write sorts
// them. The slice is reused by the next call.
func (r *run) wireHeaders(rpc string) []hfield {
	setSession := r.sessionID != ""
	setVersion := r.version != "" && rpc != "initialize" && r.legacy == nil
	setMethod := r.version == Version20260728
	eph := r.endpointHeaders()
	if r.hbuf == nil {
		r.hbuf = make([]hfield, 0, len(eph)+5)
	}
	hs := r.hbuf[:0]
	for _, f := range eph {
		switch {
		case f.k == "Mcp-Session-Id" && setSession,
			f.k == "Mcp-Protocol-Version" && setVersion,
			f.k == "Mcp-Method" && setMethod:
			continue
		}
		hs = append(hs, f)
	}
	hs = append(hs, hfield{"Content-Type", "application/json"}, hfield{"Accept", "application/json, text/event-stream"})
	if setSession {
		hs = append(hs, hfield{"Mcp-Session-Id", wireHeaderValue(r.sessionID)})
	}
	if setVersion {
		hs = append(hs, hfield{"Mcp-Protocol-Version", wireHeaderValue(r.version)})
	}
	if setMethod {
		hs = append(hs, hfield{"Mcp-Method", wireHeaderValue(rpc)})
	}
	slices.SortFunc(hs, func(a, b hfield) int { return strings.Compare(a.k, b.k) })
	r.hbuf = hs
	return hs
}

// requestURI is u.RequestURI(), remembered for the endpoint URL.
func (r *run) requestURI(u *url.URL) string {
	if u != r.u {
		return u.RequestURI()
	}
	if r.uri == "" {
		r.uri = u.RequestURI()
	}
	return r.uri
}

// fastWritable reports whether the fast writer spells the request line and
// Host header of u exactly as Request.Write would: a plain ASCII host (no
// IDN to punycode, no zone to strip, nothing Request.Write would blank) and
// a request URI without control bytes.
func fastWritable(host, uri string) bool {
	if host == "" {
		return false
	}
	for i := 0; i < len(host); i++ {
		c := host[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9',
			c == '.', c == '-', c == '_', c == ':', c == '[', c == ']':
		default:
			return false
		}
	}
	for i := 0; i < len(uri); i++ {
		if uri[i] < ' ' || uri[i] == 0x7f {
			return false
		}
	}
	return true
}

// writeRequest writes what Request.Write writes for
// r.httpRequest(ctx, method, u, body, rpc), given fastWritable(host, uri).
func (r *run) writeRequest(w *bufio.Writer, method, host, uri string, body []byte, rpc string) error {
	w.WriteString(method)
	w.WriteByte(' ')
	w.WriteString(uri)
	w.WriteString(" HTTP/1.1\r\nHost: ")
	w.WriteString(host)
	w.WriteString("\r\n")
	if ua := r.p.userAgent; ua != "" {
		w.WriteString("User-Agent: ")
		w.WriteString(ua)
		w.WriteString("\r\n")
	}
	switch {
	case len(body) > 0:
		w.WriteString("Content-Length: ")
		w.Write(strconv.AppendInt(r.numBuf[:0], int64(len(body)), 10))
		w.WriteString("\r\n")
	case method == http.MethodPost || method == http.MethodPut || method == http.MethodPatch:
		w.WriteString("Content-Length: 0\r\n")
	}
	for _, f := range r.wireHeaders(rpc) {
		w.WriteString(f.k)
		w.WriteString(": ")
		w.WriteString(f.v)
		w.WriteString("\r\n")
	}
	w.WriteString("\r\n")
	_, err := w.Write(body)
	return err
}

// wireHeaderValue is what Header.Write makes of a value: line breaks become
// spaces, surrounding whitespace goes.
func wireHeaderValue(v string) string {
	if strings.ContainsAny(v, "\r\n") {
		v = strings.NewReplacer("\n", " ", "\r", " ").Replace(v)
	}
	return strings.Trim(v, " \t\n\r")
}

// validHeaderName reports whether k is an RFC 7230 token (Header.Write
// drops other names).
func validHeaderName(k string) bool {
	if k == "" {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}
