package prober

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/mcpmon/mcpmon/pkg/model"
)

// The hand-spelled 2025-era requests must be the bytes json.Marshal gives.
func TestRequestBodyMatchesMarshal(t *testing.T) {
	p := New(Options{ClientName: `a"<b>&`, ClientVersion: "1\n2"})
	r := &run{p: p}
	for _, tc := range []struct {
		method string
		id     int64
		params any
		want   any
	}{
		{"initialize", 1, p.initializeParams(Version20251125), map[string]any{
			"protocolVersion": Version20251125,
			"capabilities":    map[string]any{},
			"clientInfo":      map[string]string{"name": p.opts.ClientName, "version": p.opts.ClientVersion},
		}},
		{"initialize", 1, p.initializeParams("1999-01-01"), map[string]any{
			"protocolVersion": "1999-01-01",
			"capabilities":    map[string]any{},
			"clientInfo":      map[string]string{"name": p.opts.ClientName, "version": p.opts.ClientVersion},
		}},
		{"ping", 12345, emptyParams, map[string]any{}},
		{"notifications/initialized", 0, nil, nil},
		{"tools/list", 3, map[string]any{"cursor": "c<1>"}, map[string]any{"cursor": "c<1>"}},
		{"odd\"<method>", 4, emptyParams, map[string]any{}},
	} {
		m := rpcRequest{JSONRPC: "2.0", ID: tc.id, Method: tc.method}
		if tc.want != nil {
			m.Params = tc.want
		}
		want, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		if got := r.body(tc.method, tc.id, tc.params); string(got) != string(want) {
			t.Errorf("%s: body\n%s\nwant\n%s", tc.method, got, want)
		}
	}
}

// TestRequestHeaders states which headers go out on each of the probe's
// requests, as the server reads them.
func TestRequestHeaders(t *testing.T) {
	u, err := url.Parse("http://127.0.0.1:8080/mcp")
	if err != nil {
		t.Fatal(err)
	}
	const both = "application/json, text/event-stream"
	for _, tc := range []struct {
		name            string
		ep              map[string]string
		method, rpc     string
		version, sessID string
		legacy          bool
		want            map[string]string
	}{
		{name: "the endpoint's headers go out with the protocol's",
			ep:     map[string]string{"authorization": "Bearer tok", "X-Api-Key": " k\n2 "},
			method: http.MethodPost, rpc: "initialize",
			want: map[string]string{"Authorization": "Bearer tok", "X-Api-Key": "k 2", "Content-Type": "application/json", "Accept": both}},
		{name: "the endpoint cannot override the protocol's headers",
			ep:     map[string]string{"accept": "*/*", "content-type": "text/plain", "mcp-session-id": "mine", "MCP-Protocol-Version": "1", "Mcp-Method": "m"},
			method: http.MethodPost, rpc: "tools/list", version: Version20260728, sessID: "s1",
			want: map[string]string{"Content-Type": "application/json", "Accept": both, "Mcp-Session-Id": "s1", "Mcp-Protocol-Version": Version20260728, "Mcp-Method": "tools/list"}},
		{name: "initialize carries no protocol version",
			method: http.MethodPost, rpc: "initialize", version: Version20251125,
			want: map[string]string{"Content-Type": "application/json", "Accept": both}},
		{name: "a negotiated session names its version",
			ep:     map[string]string{"Mcp-Session-Id": "mine"},
			method: http.MethodPost, rpc: "ping", version: Version20251125, sessID: "s1",
			want: map[string]string{"Content-Type": "application/json", "Accept": both, "Mcp-Session-Id": "s1", "Mcp-Protocol-Version": Version20251125}},
		{name: "without a session the endpoint's session header stays",
			ep:     map[string]string{"Mcp-Session-Id": "mine"},
			method: http.MethodPost, rpc: "ping", version: Version20251125,
			want: map[string]string{"Content-Type": "application/json", "Accept": both, "Mcp-Session-Id": "mine", "Mcp-Protocol-Version": Version20251125}},
		{name: "the session ends with a DELETE naming it",
			method: http.MethodDelete, version: Version20250326, sessID: "s1",
			want: map[string]string{"Content-Type": "application/json", "Accept": both, "Mcp-Session-Id": "s1", "Mcp-Protocol-Version": Version20250326}},
		{name: "legacy POSTs carry no protocol version",
			method: http.MethodPost, rpc: "ping", version: Version20241105, legacy: true,
			want: map[string]string{"Content-Type": "application/json", "Accept": both}},
		{name: "the legacy stream's GET accepts only the stream",
			ep:     map[string]string{"Authorization": "Bearer tok"},
			method: http.MethodGet,
			want:   map[string]string{"Authorization": "Bearer tok", "Accept": "text/event-stream"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := New(Options{ClientName: "mcpmon", ClientVersion: "1.2"})
			r := &run{p: p, ep: model.Endpoint{Headers: tc.ep}, u: u, version: tc.version, sessionID: tc.sessID}
			if tc.legacy {
				r.legacy = &legacyStream{}
			}
			var body []byte
			if tc.method == http.MethodPost {
				body = []byte(`{}`)
			}
			var wire bytes.Buffer
			w := bufio.NewWriter(&wire)
			if err := r.writeRequest(w, tc.method, u.Host, r.requestURI(u), body, tc.rpc); err != nil {
				t.Fatal(err)
			}
			w.Flush()
			req, err := http.ReadRequest(bufio.NewReader(&wire))
			if err != nil {
				t.Fatal(err)
			}
			if req.Host != u.Host || req.UserAgent() != "mcpmon/1.2" {
				t.Errorf("Host %q, User-Agent %q: want the URL's and the prober's", req.Host, req.UserAgent())
			}
			got := map[string]string{}
			for k, vs := range req.Header {
				if k != "User-Agent" && k != "Content-Length" {
					got[k] = strings.Join(vs, ", ")
				}
			}
			if !maps.Equal(got, tc.want) {
				t.Errorf("headers\n%v\nwant\n%v", got, tc.want)
			}
		})
	}
}

// The fast request writer must put on the wire exactly what Request.Write
// puts for the same request built as an http.Request.
func TestFastRequestMatchesRequestWrite(t *testing.T) {
	u, err := url.Parse("http://127.0.0.1:8080/mcp/v1?key=a%20b&x=1")
	if err != nil {
		t.Fatal(err)
	}
	headerSets := []map[string]string{
		nil,
		{"Authorization": "Bearer tok"},
		{"authorization": " Bearer tok\r\n", "x-api-key": "k\n2", "Host": "evil", "user-agent": "ua",
			"content-type": "text/plain", "accept": "*/*", "Content-Length": "9", "transfer-encoding": "chunked",
			"Trailer": "x", "bad key": "v", "mcp-session-id": "mine", "MCP-Protocol-Version": "1", "mcp-method": "m",
			"X-Empty": "", "zzz": "last"},
	}
	states := []struct{ version, session string }{
		{"", ""}, {Version20251125, ""}, {Version20251125, "sess-1"}, {Version20260728, ""}, {Version20250326, " s 2 "},
	}
	for hi, hs := range headerSets {
		for _, st := range states {
			for _, rq := range []struct {
				method, rpc string
				body        []byte
			}{
				{http.MethodPost, "initialize", []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize"}`)},
				{http.MethodPost, "ping", []byte(`{}`)},
				{http.MethodPost, "notifications/initialized", []byte(`{"a":1}`)},
				{http.MethodDelete, "", nil},
				{http.MethodGet, "", nil},
				{http.MethodPost, "x", nil},
			} {
				p := New(Options{ClientName: "mcpmon", ClientVersion: " 1.2\n"})
				r := &run{p: p, ep: model.Endpoint{Headers: hs}, u: u, version: st.version, sessionID: st.session}
				var fast bytes.Buffer
				w := bufio.NewWriter(&fast)
				if !fastWritable(u.Host, r.requestURI(u)) {
					t.Fatal("fastWritable refused a plain URL")
				}
				if err := r.writeRequest(w, rq.method, u.Host, r.requestURI(u), rq.body, rq.rpc); err != nil {
					t.Fatal(err)
				}
				w.Flush()
				var std bytes.Buffer
				if err := r.httpRequest(context.Background(), rq.method, u, rq.body, rq.rpc).Write(&std); err != nil {
					t.Fatal(err)
				}
				if fast.String() != std.String() {
					t.Errorf("headers %d, %+v, %s %s:\nfast:\n%q\nRequest.Write:\n%q", hi, st, rq.method, rq.rpc, fast.String(), std.String())
				}
			}
		}
	}
	for _, host := range []string{"bücher.example", "[fe80::1%25eth0]:80", "a b", ""} {
		if fastWritable(host, "/") {
			t.Errorf("fastWritable(%q) = true; want the http.Request path", host)
		}
	}
	if fastWritable("example.com", "/a\x01") {
		t.Error("fastWritable accepted a control byte in the request URI")
	}
}
