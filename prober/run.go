package prober

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mcpmon/mcpmon/pkg/msg"
	"github.com/mcpmon/mcpmon/pkg/store"
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

// run is the state of one probe: its own transport (no connection reuse
// across probes), trace timings, the negotiated session.
type run struct {
	p   *Prober
	ep  store.Endpoint
	res *msg.ProbeResult
	u   *url.URL

	client *httpClient

	mu      sync.Mutex
	phases  [9]phaseDur // msg.Phases but total
	nPhases int
	marks   [3]timeMark // dns, connect, tls
	nMarks  int

	version   string
	sessionID string
	legacy    *legacyStream
	nextID    int64
	hasTools  bool

	buf []byte // readBody's buffer

	// The fast request writer's state (reqwire.go).
	uri           string
	epHeaders     []hfield
	epHeadersDone bool
	hbuf          []hfield
	numBuf        [20]byte

	tools    []json.RawMessage // nil when tools/list was not read
	degraded *probeError       // why an alive server is degraded (tools/list failing)
}

func newRun(p *Prober, ep store.Endpoint, res *msg.ProbeResult) *run {
	r := &run{p: p, ep: ep, res: res}
	r.client = &httpClient{r: r}
	return r
}

// tlsConfig verifies the chain itself (the standard-library recipe for
// VerifyConnection) so it can record the certificate expiry even when
// verification fails, e.g. on an expired certificate.
func (r *run) tlsConfig() *tls.Config {
	roots := r.p.opts.RootCAs
	return &tls.Config{
		MinVersion:         tls.VersionTLS12,
		InsecureSkipVerify: true, // verified in VerifyConnection below
		VerifyConnection: func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return errors.New("tls: server sent no certificate")
			}
			var exp time.Time
			for _, c := range cs.PeerCertificates {
				if exp.IsZero() || c.NotAfter.Before(exp) {
					exp = c.NotAfter
				}
			}
			r.mu.Lock()
			if r.res.CertExpiry == nil {
				e := exp.UTC()
				r.res.CertExpiry = &e
			}
			r.mu.Unlock()
			inter := x509.NewCertPool()
			for _, c := range cs.PeerCertificates[1:] {
				inter.AddCert(c)
			}
			_, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{
				DNSName:       cs.ServerName,
				Roots:         roots,
				Intermediates: inter,
			})
			return err
		},
	}
}

func (r *run) close() {
	if r.legacy != nil {
		r.legacy.close()
	}
	r.client.closeAll()
}

// trace records dns, connect and tls of the first connection.
func (r *run) trace(ctx context.Context) context.Context {
	mark := func(k string) {
		r.mu.Lock()
		if r.markAt(k) < 0 && r.nMarks < len(r.marks) {
			r.marks[r.nMarks] = timeMark{k, time.Now()}
			r.nMarks++
		}
		r.mu.Unlock()
	}
	done := func(phase, startKey string) {
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.phaseAt(phase) >= 0 {
			return
		}
		if i := r.markAt(startKey); i >= 0 {
			r.addPhase(phase, time.Since(r.marks[i].at))
		}
	}
	return httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		DNSStart:          func(httptrace.DNSStartInfo) { mark("dns") },
		DNSDone:           func(httptrace.DNSDoneInfo) { done(msg.PhaseDNS, "dns") },
		ConnectStart:      func(string, string) { mark("connect") },
		ConnectDone:       func(string, string, error) { done(msg.PhaseConnect, "connect") },
		TLSHandshakeStart: func() { mark("tls") },
		TLSHandshakeDone:  func(tls.ConnectionState, error) { done(msg.PhaseTLS, "tls") },
	})
}

// phaseDur is one recorded phase; timeMark the start of a traced one. A
// probe has at most nine phases and three traced starts: small arrays
// searched in order instead of two maps per probe.
type phaseDur struct {
	name string
	d    time.Duration
}

type timeMark struct {
	name string
	at   time.Time
}

// phaseAt and markAt return the index of name, or -1. r.mu is held.
func (r *run) phaseAt(name string) int {
	for i := range r.nPhases {
		if r.phases[i].name == name {
			return i
		}
	}
	return -1
}

func (r *run) markAt(name string) int {
	for i := range r.nMarks {
		if r.marks[i].name == name {
			return i
		}
	}
	return -1
}

// addPhase adds d to phase, recording it if new. r.mu is held.
func (r *run) addPhase(phase string, d time.Duration) {
	if i := r.phaseAt(phase); i >= 0 {
		r.phases[i].d += d
		return
	}
	if r.nPhases < len(r.phases) {
		r.phases[r.nPhases] = phaseDur{phase, d}
		r.nPhases++
	}
}

func (r *run) timed(phase string, f func() error) error {
	t := time.Now()
	err := f()
	r.mu.Lock()
	r.addPhase(phase, time.Since(t))
	r.mu.Unlock()
	return err
}

func (r *run) copyPhases() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, p := range r.phases[:r.nPhases] {
		r.res.Phases[p.name] = p.d.Seconds()
	}
}

// probe chooses the era(s) to try and runs the handshake.
func (r *run) probe(ctx context.Context, prev *msg.ProbeResult) error {
	u, err := url.Parse(r.ep.URL)
	if err != nil {
		return failf(ClassProtocolError, 0, "invalid endpoint URL: %v", err)
	}
	r.u = u
	if err := r.p.guard.checkURL(u); err != nil {
		if errors.Is(err, ErrBlockedTarget) {
			return failf(ClassBlockedTarget, 0, "%v", err)
		}
		return failf(ClassProtocolError, 0, "%v", err)
	}
	ctx = r.trace(ctx)
	pinned := r.ep.ProtocolVersion
	if pinned != "" && !slices.Contains(Versions, pinned) {
		return failf(ClassVersionMismatch, 0, "pinned protocol version %q is not one the prober speaks (%s)", pinned, strings.Join(Versions, ", "))
	}

	transport := r.ep.Transport
	if transport == "" {
		transport = TransportAuto
	}
	switch {
	case transport == TransportSSE || pinned == Version20241105:
		return r.legacyProbe(ctx)
	case pinned == Version20260728:
		return r.pinnedDiscoverProbe(ctx)
	case pinned != "":
		return r.initializeProbe(ctx, pinned)
	}

	prevVersion := ""
	if prev != nil && prev.Status != msg.StatusDown && !renegotiate(r.ep.ID, prev.Slot, r.res.Slot) {
		prevVersion = prev.ProtocolVersion
		if transport == TransportAuto && prev.Transport == TransportSSE {
			err := r.legacyProbe(ctx)
			if fallbackToStreamable(err) {
				r.resetSession()
				return r.initializeProbe(ctx, Version20251125)
			}
			return err
		}
	}
	if prevVersion == "" || prevVersion == Version20260728 {
		err := r.discoverProbe(ctx)
		if !fallbackFromDiscover(err) {
			return err
		}
		r.resetSession()
	}
	ver := Version20251125
	if prevVersion != "" && prevVersion != Version20260728 && prevVersion != Version20241105 {
		ver = prevVersion
	}
	err = r.initializeProbe(ctx, ver)
	if transport == TransportAuto && fallbackToLegacy(err) {
		r.resetSession()
		lerr := r.legacyProbe(ctx)
		if !fallbackToStreamable(lerr) {
			return lerr
		}
		if classOf(err) == ClassNotFound && classOf(lerr) == ClassNotMCP {
			// POST not served, GET a page: a web site, not an MCP server.
			return lerr
		}
		// Not a legacy server either: report what Streamable HTTP saw.
		r.resetSession()
		r.res.Transport = TransportStreamableHTTP
	}
	return err
}

// pinnedDiscoverProbe speaks only 2026-07-28, as the endpoint pins it: a
// server that answers server/discover the way a 2025-era server does does
// not speak the pinned revision.
func (r *run) pinnedDiscoverProbe(ctx context.Context) error {
	err := r.discoverProbe(ctx)
	if !fallbackFromDiscover(err) || classOf(err) == ClassVersionMismatch {
		return err
	}
	switch classOf(err) {
	case ClassNotFound, ClassNotMCP, ClassHTTP5xx, ClassSessionBroken:
		return err // says nothing about the revision
	}
	return failf(ClassVersionMismatch, 0, "endpoint pins protocol %s but the server answered server/discover as a 2025-era server: %v", Version20260728, err)
}

func (r *run) resetSession() {
	if r.legacy != nil {
		r.legacy.close()
		r.legacy = nil
	}
	r.sessionID, r.version, r.hasTools = "", "", false
	r.res.ServerName, r.res.ServerVersion, r.res.ProtocolVersion, r.res.Transport = "", "", "", ""
	r.dropAttemptPhases()
}

// dropAttemptPhases forgets the handshake phases of an attempt the probe
// falls back from, so that initialize and the rest time the era that
// decided the result. The failed attempt's time stays in total; discover
// keeps its own phase (it is always the first attempt) and dns, connect and
// tls time the first connection, whichever attempt made it.
func (r *run) dropAttemptPhases() {
	r.mu.Lock()
	defer r.mu.Unlock()
	kept := r.phases[:0]
	for _, p := range r.phases[:r.nPhases] {
		switch p.name {
		case msg.PhaseInitialize, msg.PhaseInitialized, msg.PhasePing, msg.PhaseToolsList, msg.PhaseClose:
			continue
		}
		kept = append(kept, p)
	}
	r.nPhases = len(kept)
}

func classOf(err error) string {
	var pe *probeError
	if errors.As(err, &pe) {
		return pe.class
	}
	return ""
}

// fallbackFromDiscover: a server that answered server/discover but not as a
// 2026-07-28 server (400 -32000 "not initialized", -32022 unsupported version,
// -32601, 404/405, an HTML page) gets the 2025-era handshake. Failures that
// say nothing about the era (refused, timeout, auth, TLS, blocked) end the probe.
func fallbackFromDiscover(err error) bool {
	if err == nil {
		return false
	}
	switch classOf(err) {
	case ClassRefused, ClassDNS, ClassTLS, ClassTimeout, ClassBlockedTarget, ClassNetwork,
		ClassAuthRequired, ClassAuthRejected, ClassAuthMisconfigured, ClassForbidden, ClassRateLimited:
		return false
	}
	return true
}

// fallbackToLegacy: a Streamable HTTP initialize answered 404/405 or with a
// non-MCP page may be a 2024-11-05 server whose URL is the SSE stream.
func fallbackToLegacy(err error) bool {
	var pe *probeError
	if !errors.As(err, &pe) {
		return false
	}
	return pe.class == ClassNotFound || (pe.class == ClassProtocolError && (pe.status == 400 || pe.status == 406 || pe.status == 415))
}

func fallbackToStreamable(err error) bool {
	return fallbackToLegacy(err) || classOf(err) == ClassNotMCP
}

// initializeProbe runs the 2025-era handshake: initialize → initialized →
// ping → tools/list → DELETE.
func (r *run) initializeProbe(ctx context.Context, version string) error {
	r.res.Transport = TransportStreamableHTTP
	params := r.p.initializeParams(version)
	var result json.RawMessage
	err := r.timed(msg.PhaseInitialize, func() error {
		var err error
		result, err = r.call(ctx, "initialize", params)
		return err
	})
	if err != nil {
		return asRPCClass(err, ClassRPCError, "initialize")
	}
	defer r.deleteSession(ctx)
	if err := r.acceptInitialize(result, version); err != nil {
		return err
	}
	if err := r.timed(msg.PhaseInitialized, func() error { return r.notify(ctx, "notifications/initialized") }); err != nil {
		return err
	}
	if err := r.timed(msg.PhasePing, func() error {
		_, err := r.call(ctx, "ping", emptyParams)
		var pe *probeError
		if errors.As(err, &pe) && pe.rpc != nil && pe.rpc.Code == codeMethodNotFound {
			return nil // an answered -32601 still proves the server alive
		}
		return asRPCClass(err, ClassRPCError, "ping")
	}); err != nil {
		return err
	}
	r.listTools(ctx)
	return nil
}

// acceptInitialize checks the initialize result and records the server.
func (r *run) acceptInitialize(result json.RawMessage, asked string) error {
	var ir struct {
		ProtocolVersion string          `json:"protocolVersion"`
		Capabilities    json.RawMessage `json:"capabilities"`
		ServerInfo      struct {
			Name    string `json:"name"`
			Version string `json:"version"`
		} `json:"serverInfo"`
	}
	if err := json.Unmarshal(result, &ir); err != nil {
		return failf(ClassProtocolError, 0, "initialize result is not an InitializeResult: %v", err)
	}
	if ir.ProtocolVersion == "" {
		return failf(ClassProtocolError, 0, "initialize result has no protocolVersion")
	}
	r.res.ServerName, r.res.ServerVersion = clean(ir.ServerInfo.Name), clean(ir.ServerInfo.Version)
	r.res.ProtocolVersion = clean(ir.ProtocolVersion)
	if pinned := r.ep.ProtocolVersion; pinned != "" && ir.ProtocolVersion != pinned {
		return failf(ClassVersionMismatch, 0, "endpoint pins protocol %s but the server answered %s", pinned, fromTarget(clean(ir.ProtocolVersion)))
	}
	if !slices.Contains(Versions, ir.ProtocolVersion) || ir.ProtocolVersion == Version20260728 {
		return failf(ClassVersionMismatch, 0, "asked for protocol %s, server answered %q, which the prober does not speak", asked, fromTarget(clean(ir.ProtocolVersion)))
	}
	r.version = ir.ProtocolVersion
	var caps struct {
		Tools json.RawMessage `json:"tools"`
	}
	_ = json.Unmarshal(ir.Capabilities, &caps)
	r.hasTools = len(caps.Tools) > 0 && string(caps.Tools) != "null"
	return nil
}

// discoverProbe runs the 2026-07-28 stateless probe: server/discover (and
// tools/list), each carrying _meta and the Mcp-Method header.
func (r *run) discoverProbe(ctx context.Context) error {
	r.res.Transport = TransportStreamableHTTP
	r.version = Version20260728
	var result json.RawMessage
	err := r.timed(msg.PhaseDiscover, func() error {
		var err error
		result, err = r.call(ctx, "server/discover", map[string]any{})
		return err
	})
	if err != nil {
		return asRPCClass(err, ClassRPCError, "server/discover")
	}
	var dr struct {
		SupportedVersions []string                   `json:"supportedVersions"`
		Capabilities      json.RawMessage            `json:"capabilities"`
		Meta              map[string]json.RawMessage `json:"_meta"`
		ServerInfo        *struct {
			Name    string `json:"name"`
			Version string `json:"version"`
		} `json:"serverInfo"`
	}
	if err := json.Unmarshal(result, &dr); err != nil {
		return failf(ClassProtocolError, 0, "server/discover result is malformed: %v", err)
	}
	if !slices.Contains(dr.SupportedVersions, Version20260728) {
		// A server that lists only older revisions wants the 2025 handshake.
		return failf(ClassVersionMismatch, 0, "server/discover lists %s without %s", fromTarget(clean(fmt.Sprint(dr.SupportedVersions))), Version20260728)
	}
	r.res.ProtocolVersion = Version20260728
	var info struct {
		Name    string `json:"name"`
		Version string `json:"version"`
	}
	if raw, ok := dr.Meta["io.modelcontextprotocol/serverInfo"]; ok {
		_ = json.Unmarshal(raw, &info)
	} else if dr.ServerInfo != nil {
		info = *dr.ServerInfo
	}
	r.res.ServerName, r.res.ServerVersion = clean(info.Name), clean(info.Version)
	var caps struct {
		Tools json.RawMessage `json:"tools"`
	}
	_ = json.Unmarshal(dr.Capabilities, &caps)
	r.hasTools = len(caps.Tools) > 0 && string(caps.Tools) != "null"
	r.listTools(ctx)
	return nil
}

// listTools reads every tools/list page; a failure marks the probe degraded.
func (r *run) listTools(ctx context.Context) {
	if !r.hasTools {
		return
	}
	var tools []json.RawMessage
	cursor := ""
	err := r.timed(msg.PhaseToolsList, func() error {
		for page := 0; ; page++ {
			if page >= DefaultMaxToolPages {
				return failf(ClassDegraded, 0, "more than %d pages", DefaultMaxToolPages)
			}
			params := map[string]any{}
			if cursor != "" {
				params["cursor"] = cursor
			}
			res, err := r.call(ctx, "tools/list", params)
			if err != nil {
				return err
			}
			var lr struct {
				Tools      []json.RawMessage `json:"tools"`
				NextCursor string            `json:"nextCursor"`
			}
			if err := json.Unmarshal(res, &lr); err != nil {
				return failf(ClassDegraded, 0, "malformed result: %v", err)
			}
			tools = append(tools, lr.Tools...)
			if lr.NextCursor == "" {
				return nil
			}
			if lr.NextCursor == cursor {
				return failf(ClassDegraded, 0, "server repeated the same cursor")
			}
			cursor = lr.NextCursor
		}
	})
	if err != nil {
		r.degraded = failf(ClassDegraded, 0, "tools/list failed: %v", err)
		return
	}
	r.tools = tools
	if tools == nil {
		r.tools = []json.RawMessage{}
	}
	r.res.ToolCount = len(tools)
	r.res.CatalogFingerprint = fingerprint(canonicalTools(tools))
}

// asRPCClass gives a JSON-RPC error answer the class of the call it failed.
func asRPCClass(err error, class, method string) error {
	var pe *probeError
	if errors.As(err, &pe) && pe.rpc != nil && pe.class == "" {
		pe.class = class
		pe.format, pe.args = "%s answered with JSON-RPC error %d: %s", []any{method, pe.rpc.Code, fromTarget(clean(pe.rpc.Message))}
	}
	return err
}

// headers builds the request headers: the endpoint's secret headers first,
// then the protocol's own, which a configured header cannot override.
func (r *run) headers(h http.Header, method string) {
	for k, v := range r.ep.Headers {
		h.Set(k, v)
	}
	h.Set("Content-Type", "application/json")
	h.Set("Accept", "application/json, text/event-stream")
	h.Set("User-Agent", r.p.opts.ClientName+"/"+r.p.opts.ClientVersion)
	if r.sessionID != "" {
		h.Set("Mcp-Session-Id", r.sessionID)
	}
	if r.version != "" && method != "initialize" && r.legacy == nil {
		h.Set("MCP-Protocol-Version", r.version)
	}
	if r.version == Version20260728 {
		h.Set("Mcp-Method", method)
	}
}

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
		m["_meta"] = r.p.meta
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

// call sends one request and returns its result, or a probeError (with rpc
// set and no class when the server answered a JSON-RPC error).
func (r *run) call(ctx context.Context, method string, params any) (json.RawMessage, error) {
	r.nextID++
	id := r.nextID
	body := r.body(method, id, params)
	if r.legacy != nil {
		return r.legacy.call(ctx, r, method, id, body)
	}
	resp, err := r.client.doFast(ctx, http.MethodPost, r.u, body, method)
	if err != nil {
		return nil, classify(ctx, err)
	}
	defer resp.Body.Close()
	if method == "initialize" {
		r.sessionID = resp.Header.Get("Mcp-Session-Id")
		if len(r.sessionID) > 1024 {
			return nil, failf(ClassProtocolError, resp.StatusCode, "Mcp-Session-Id header is over 1 KiB")
		}
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, r.statusError(ctx, resp, method)
	}
	if resp.StatusCode == http.StatusAccepted || resp.StatusCode == http.StatusNoContent {
		return nil, failf(ClassProtocolError, resp.StatusCode, "%s: HTTP %d without a JSON-RPC response", method, resp.StatusCode)
	}
	return r.readResponse(ctx, resp, method, id)
}

// readResponse reads a 2xx answer: JSON, or an SSE stream carrying it.
func (r *run) readResponse(ctx context.Context, resp *http.Response, method string, id int64) (json.RawMessage, error) {
	mt := resp.Header.Get("Content-Type")
	if mt != "application/json" && mt != "text/event-stream" {
		mt, _, _ = mime.ParseMediaType(mt)
	}
	switch mt {
	case "application/json":
		b, err := r.readBody(resp.Body, r.p.opts.MaxBody)
		if err != nil {
			return nil, readFail(ctx, method, err)
		}
		msgs, err := parseRPC(b)
		if err != nil {
			return nil, failf(ClassProtocolError, resp.StatusCode, "%s: %v", method, err)
		}
		m, ok := responseFor(msgs, id)
		if !ok {
			return nil, failf(ClassProtocolError, resp.StatusCode, "%s: JSON body holds no response with id %d", method, id)
		}
		return resultOf(m)
	case "text/event-stream":
		br := r.p.getReader(&capReader{r: resp.Body, n: r.p.opts.MaxBody})
		defer r.p.putReader(br)
		sr := &sseReader{br: br, maxLine: int(r.p.opts.MaxBody), maxEvents: r.p.opts.MaxSSEEvents}
		for {
			ev, err := sr.Next()
			if err == io.EOF {
				return nil, failf(ClassProtocolError, resp.StatusCode, "%s: SSE stream ended without the response", method)
			}
			if err != nil {
				return nil, readFail(ctx, method, err)
			}
			if ev.Data == "" || ev.Event != "message" {
				continue // priming event, or an event type the probe does not read
			}
			msgs, err := parseRPC([]byte(ev.Data))
			if err != nil {
				return nil, failf(ClassProtocolError, resp.StatusCode, "%s: SSE event: %v", method, err)
			}
			if m, ok := responseFor(msgs, id); ok {
				return resultOf(m)
			}
			// Server notifications and requests ahead of the answer are skipped.
		}
	case "":
		return nil, failf(ClassNotMCP, resp.StatusCode, "%s: HTTP %d without a content type: not an MCP endpoint", method, resp.StatusCode)
	default:
		return nil, failf(ClassNotMCP, resp.StatusCode, "%s: HTTP %d with content type %q: not an MCP endpoint", method, resp.StatusCode, fromTarget(clean(mt)))
	}
}

// readBody reads all of body into the run's buffer, failing with
// errTooLarge past max bytes. The bytes are valid until the next readBody:
// parseRPC copies what it keeps.
func (r *run) readBody(body io.Reader, max int64) ([]byte, error) {
	cr := capReader{r: body, n: max}
	b := r.buf[:0]
	if cap(b) == 0 {
		b = make([]byte, 0, 1024)
	}
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := cr.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err != nil {
			r.buf = b
			if err == io.EOF {
				return b, nil
			}
			return nil, err
		}
	}
}

func resultOf(m *rpcMessage) (json.RawMessage, error) {
	if m.Error != nil {
		return nil, &probeError{rpc: m.Error, format: "%v", args: []any{m.Error}}
	}
	return m.Result, nil
}

// readFail classifies an error while reading a body.
func readFail(ctx context.Context, method string, err error) *probeError {
	switch {
	case errors.Is(err, errTooLarge):
		return failf(ClassProtocolError, 0, "%s: response exceeds the %s cap", method, "size")
	case errors.Is(err, errSSELineTooLong), errors.Is(err, errSSETooManyEvents):
		return failf(ClassProtocolError, 0, "%s: %v", method, err)
	}
	return classify(ctx, err).prefixed(method + ": reading response: ")
}

// notify sends a notification and expects 202 (any 2xx is accepted).
func (r *run) notify(ctx context.Context, method string) error {
	body := r.body(method, 0, nil)
	if r.legacy != nil {
		return r.legacy.post(ctx, r, method, body)
	}
	resp, err := r.client.doFast(ctx, http.MethodPost, r.u, body, method)
	if err != nil {
		return classify(ctx, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return r.statusError(ctx, resp, method)
	}
	return nil
}

// deleteSession ends the session; its outcome does not change the result.
func (r *run) deleteSession(ctx context.Context) {
	if r.sessionID == "" || ctx.Err() != nil {
		return
	}
	_ = r.timed(msg.PhaseClose, func() error {
		resp, err := r.client.doFast(ctx, http.MethodDelete, r.u, nil, "")
		if err != nil {
			return err
		}
		return resp.Body.Close()
	})
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
			return failf(ClassRateLimited, sc, "%s: HTTP 429 Too Many Requests (Retry-After: %s)", method, fromTarget(clean(ra)))
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
	case errors.Is(err, ErrBlockedTarget):
		return failf(ClassBlockedTarget, 0, "%v", err)
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

// clean bounds and sanitizes a server-provided string before it is stored.
func clean(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) > 256 {
		s = strings.ToValidUTF8(s[:256], "") + "…"
	}
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
}
