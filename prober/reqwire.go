package prober

import (
	"bufio"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// The probe's own requests (initialize, notifications, ping, tools/list,
// DELETE) are written straight to the connection from the run's state,
// without building an http.Request and its header map and having
// Request.Write sort and copy it again: on a loopback probe that bookkeeping
// costs as much as the exchange. The headers are run.headers' (request.go),
// and the bytes are those Request.Write gives for the request
// run.httpRequest builds from them (TestFastRequestMatchesRequestWrite); a
// host or path the fast writer does not handle byte for byte, and every
// redirect, takes the http.Request path.

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
	for _, f := range r.headers(method, rpc) {
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
