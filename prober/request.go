package prober

// request.go owns what the probe sends: the request headers (chosen here
// only, for the fast writer of reqwire.go and for the http.Request of
// redirects alike) and the JSON-RPC bodies.

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// hfield is one request header line.
type hfield struct{ k, v string }

// headersExcluded are never taken from the endpoint's headers: Request.Write
// does not write the first five from a header map, and the protocol's own
// Accept always replaces the endpoint's.
var headersExcluded = map[string]bool{
	"Host": true, "User-Agent": true, "Content-Length": true, "Transfer-Encoding": true, "Trailer": true,
	"Accept": true,
}

// headers returns the header lines of a request to the endpoint (method
// GET opens the legacy SSE stream; POST carries JSON-RPC method rpc;
// DELETE ends the session), sorted by key as Request.Write sorts them, and
// without Host and User-Agent, which the request line's writer adds. The
// endpoint's secret headers go first; the protocol's own replace them:
//
//   - Accept: the stream for the GET, JSON or SSE otherwise;
//   - Content-Type: application/json, but on the GET;
//   - Mcp-Session-Id once initialize returned one;
//   - MCP-Protocol-Version once negotiated, but on initialize and the
//     legacy transport;
//   - Mcp-Method under 2026-07-28, and Mcp-Name with the tool's name on
//     the tool check's tools/call;
//   - Traceparent and Tracestate, the probe's trace context, when the
//     endpoint opted in (otel.go).
//
// It is the only place the probe's headers are chosen. The slice is reused
// by the next call.
func (r *run) headers(method, rpc string) []hfield {
	stream := method == http.MethodGet
	setSession := r.sessionID != "" && !stream
	setVersion := r.version != "" && rpc != "initialize" && r.legacy == nil && !stream
	setMethod := r.version == Version20260728 && !stream
	setName := setMethod && rpc == "tools/call" && r.ep.ToolCheck != nil
	setTrace := r.traceparent != ""
	eph := r.endpointHeaders()
	if r.hbuf == nil {
		r.hbuf = make([]hfield, 0, len(eph)+7)
	}
	hs := r.hbuf[:0]
	for _, f := range eph {
		switch {
		case f.k == "Content-Type" && !stream,
			f.k == "Mcp-Session-Id" && setSession,
			f.k == "Mcp-Protocol-Version" && setVersion,
			f.k == "Mcp-Method" && setMethod,
			f.k == "Mcp-Name" && setName,
			(f.k == "Traceparent" || f.k == "Tracestate") && setTrace:
			continue
		}
		hs = append(hs, f)
	}
	if stream {
		hs = append(hs, hfield{"Accept", "text/event-stream"})
	} else {
		hs = append(hs, hfield{"Content-Type", "application/json"}, hfield{"Accept", "application/json, text/event-stream"})
	}
	if setSession {
		hs = append(hs, hfield{"Mcp-Session-Id", wireHeaderValue(r.sessionID)})
	}
	if setVersion {
		hs = append(hs, hfield{"Mcp-Protocol-Version", wireHeaderValue(r.version)})
	}
	if setMethod {
		hs = append(hs, hfield{"Mcp-Method", wireHeaderValue(rpc)})
	}
	if setName {
		hs = append(hs, hfield{"Mcp-Name", wireHeaderValue(r.ep.ToolCheck.Name)})
	}
	if setTrace {
		hs = append(hs, hfield{"Traceparent", r.traceparent})
		if r.tracestate != "" {
			hs = append(hs, hfield{"Tracestate", wireHeaderValue(r.tracestate)})
		}
	}
	slices.SortFunc(hs, func(a, b hfield) int { return strings.Compare(a.k, b.k) })
	r.hbuf = hs
	return hs
}

// endpointHeaders returns the endpoint's headers as Request.Write would send
// them: canonical keys, values with line breaks turned to spaces and
// trimmed, invalid names dropped, the last of two spellings of one name
// winning. Built once per run.
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

// httpRequest is the request the fast writer spells out, as an
// http.Request: for redirects and the hosts the fast writer leaves alone.
func (r *run) httpRequest(ctx context.Context, method string, u *url.URL, body []byte, rpc string) *http.Request {
	req := newRequest(ctx, method, u, body)
	for _, f := range r.headers(method, rpc) {
		req.Header[f.k] = []string{f.v}
	}
	req.Header["User-Agent"] = []string{r.p.userAgent}
	return req
}

// newRequest builds a request for u without re-parsing the URL (the probe
// sends several to the same URL).
func newRequest(ctx context.Context, method string, u *url.URL, body []byte) *http.Request {
	req := &http.Request{
		Method:     method,
		URL:        u,
		Proto:      "HTTP/1.1",
		ProtoMajor: 1,
		ProtoMinor: 1,
		Header:     make(http.Header, 8),
		Host:       u.Host,
	}
	if body != nil {
		req.ContentLength = int64(len(body))
		req.Body = io.NopCloser(bytes.NewReader(body))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	}
	return req.WithContext(ctx)
}

// body encodes a JSON-RPC request (id 0: a notification); under 2026-07-28
// its params carry _meta, with the trace context when the endpoint opted
// in (the traceparent and tracestate keys of SEP-414).
func (r *run) body(method string, id int64, params any) []byte {
	if r.version == Version20260728 {
		m, _ := params.(map[string]any)
		if raw, ok := params.(json.RawMessage); ok {
			m = map[string]any{}
			_ = json.Unmarshal(raw, &m)
		}
		if m == nil {
			m = map[string]any{}
		}
		m["_meta"] = r.meta()
		params = m
	} else if raw, ok := params.(json.RawMessage); ok || params == nil {
		// The 2025-era requests are constant but for the id: spell them
		// out instead of reflecting over a map each time. The bytes are
		// those json.Marshal gives for the same rpcRequest.
		if !plainJSONString(method) {
			return marshalRequest(method, id, raw)
		}
		b := make([]byte, 0, 48+len(method)+len(raw))
		b = append(b, `{"jsonrpc":"2.0",`...)
		if id != 0 {
			b = append(b, `"id":`...)
			b = strconv.AppendInt(b, id, 10)
			b = append(b, ',')
		}
		b = append(b, `"method":"`...)
		b = append(b, method...)
		b = append(b, '"')
		if raw != nil {
			b = append(b, `,"params":`...)
			b = append(b, raw...)
		}
		return append(b, '}')
	}
	return marshalRequest(method, id, params)
}

// meta is the 2026-07-28 params._meta of the run's requests: the
// prober's own, or a copy with the trace context added.
func (r *run) meta() map[string]any {
	if r.traceparent == "" {
		return r.p.meta
	}
	m := make(map[string]any, len(r.p.meta)+2)
	for k, v := range r.p.meta {
		m[k] = v
	}
	m["traceparent"] = r.traceparent
	if r.tracestate != "" {
		m["tracestate"] = r.tracestate
	}
	return m
}

func marshalRequest(method string, id int64, params any) []byte {
	m := rpcRequest{JSONRPC: "2.0", ID: id, Method: method}
	switch p := params.(type) {
	case map[string]any:
		if p != nil {
			m.Params = p
		}
	case json.RawMessage:
		if p != nil {
			m.Params = p
		}
	}
	b, _ := json.Marshal(m)
	return b
}

// plainJSONString reports whether s needs no escaping inside a JSON string
// (json.Marshal also escapes <, > and &).
func plainJSONString(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}

// emptyParams is the params of ping: an empty object.
var emptyParams = json.RawMessage(`{}`)

type rpcRequest struct {
	JSONRPC string `json:"jsonrpc"`
	ID      int64  `json:"id,omitempty"`
	Method  string `json:"method"`
	Params  any    `json:"params,omitempty"`
}
