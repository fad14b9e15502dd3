package prober

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmon/mcpmon/pkg/clock"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/msg"
	"github.com/mcpmon/mcpmon/pkg/store"
)

type classCase struct {
	name   string
	setup  func(t *testing.T) (model.Endpoint, func(*Options))
	class  string
	substr string
	check  func(t *testing.T, res msg.ProbeResult)
}

func rawEP(t *testing.T, f rpcFunc) model.Endpoint { return endpoint(rpcServer(t, f).URL) }

func handlerEP(t *testing.T, h http.HandlerFunc) model.Endpoint { return endpoint(serve(t, h).URL) }

func status(code int, hdr ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		for i := 0; i+1 < len(hdr); i += 2 {
			w.Header().Set(hdr[i], hdr[i+1])
		}
		w.WriteHeader(code)
	}
}

// TestFailureClasses produces every class against a live server on 127.0.0.1.
func TestFailureClasses(t *testing.T) {
	cases := []classCase{
		{name: "refused", class: ClassRefused, substr: "refused", setup: func(t *testing.T) (model.Endpoint, func(*Options)) {
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			addr := l.Addr().String()
			l.Close()
			return endpoint("http://" + addr + "/mcp"), nil
		}},
		{name: "dns", class: ClassDNS, substr: "DNS lookup of nope.mcpmon.test", setup: func(t *testing.T) (model.Endpoint, func(*Options)) {
			r := dnsServer(t, nil)
			return endpoint("http://nope.mcpmon.test:9/mcp"), func(o *Options) { o.Resolver = r }
		}},
		{name: "timeout: POST never answered", class: ClassTimeout, setup: func(t *testing.T) (model.Endpoint, func(*Options)) {
			ep := handlerEP(t, func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body) // so the server notices the probe hanging up
				<-r.Context().Done()
			})
			ep.Timeout = 200 * time.Millisecond
			return ep, nil
		}},
		{name: "timeout: slow drip", class: ClassTimeout, setup: func(t *testing.T) (model.Endpoint, func(*Options)) {
			ep := handlerEP(t, func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				w.Header().Set("Content-Type", "application/json")
				tick := time.NewTicker(20 * time.Millisecond)
				defer tick.Stop()
				for {
					select {
					case <-r.Context().Done():
						return
					case <-tick.C:
						if _, err := w.Write([]byte(" ")); err != nil {
							return
						}
						w.(http.Flusher).Flush()
					}
				}
			})
			ep.Timeout = 200 * time.Millisecond
			return ep, nil
		}},
		{name: "timeout: response headers dripped past the deadline", class: ClassTimeout, substr: "within the timeout", setup: func(t *testing.T) (model.Endpoint, func(*Options)) {
			ep := endpoint(dripHeadersServer(t))
			ep.Timeout = 200 * time.Millisecond
			return ep, nil
		}},
		{name: "tls: self-signed", class: ClassTLS, substr: "unknown authority", setup: func(t *testing.T) (model.Endpoint, func(*Options)) {
			cert, _ := genCert(t, time.Now().Add(-time.Hour), time.Now().Add(24*time.Hour*365))
			return endpoint(tlsServe(t, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return sdkServer() }, nil), cert).URL), nil
		}},
		{name: "tls: expired", class: ClassTLS, substr: "expired", setup: func(t *testing.T) (model.Endpoint, func(*Options)) {
			cert, x := genCert(t, time.Now().Add(-48*time.Hour), time.Now().Add(-24*time.Hour))
			return endpoint(tlsServe(t, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return sdkServer() }, nil), cert).URL), trust(x)
		}, check: func(t *testing.T, res msg.ProbeResult) {
			if res.CertExpiry == nil || res.CertExpiry.After(time.Now()) {
				t.Errorf("cert expiry not recorded in the past: %v", res.CertExpiry)
			}
		}},
		{name: "http_5xx", class: ClassHTTP5xx, substr: "503", setup: func(t *testing.T) (model.Endpoint, func(*Options)) {
			return handlerEP(t, status(503)), nil
		}, check: wantHTTP(503)},
		{name: "rate_limited", class: ClassRateLimited, substr: "Retry-After: 30", setup: func(t *testing.T) (model.Endpoint, func(*Options)) {
			return handlerEP(t, status(429, "Retry-After", "30")), nil
		}},
		{name: "auth_required: resource_metadata", class: ClassAuthRequired, substr: "https://auth.example", setup: func(t *testing.T) (model.Endpoint, func(*Options)) {
			return endpoint(protectedServer(t, true).URL + "/mcp"), nil
		}},
		{name: "auth_required: well-known fallback", class: ClassAuthRequired, substr: "https://auth.example", setup: func(t *testing.T) (model.Endpoint, func(*Options)) {
			return endpoint(protectedServer(t, false).URL + "/mcp"), nil
		}},
		{name: "auth_required: 2025-03-26 authorization server metadata, no resource_metadata", class: ClassAuthRequired, substr: "2025-03-26 discovery: authorization server", setup: func(t *testing.T) (model.Endpoint, func(*Options)) {
			return endpoint(marchAuthServer(t, marchMetadata).URL + "/mcp"), nil
		}},
		{name: "auth_required: 2025-03-26 default endpoints without metadata", class: ClassAuthRequired, substr: "default endpoints", setup: func(t *testing.T) (model.Endpoint, func(*Options)) {
			return endpoint(marchAuthServer(t, marchDefaultEndpoints).URL + "/mcp"), nil
		}},
		{name: "auth_required: 2025-03-26 token endpoint answering an OAuth error", class: ClassAuthRequired, substr: "default endpoints", setup: func(t *testing.T) (model.Endpoint, func(*Options)) {
			return endpoint(marchAuthServer(t, marchTokenErrorOnly).URL + "/mcp"), nil
		}},
		{name: "auth_required: a configured header that is no credential", class: ClassAuthRequired, substr: "https://auth.example", setup: func(t *testing.T) (model.Endpoint, func(*Options)) {
			ep := endpoint(protectedServer(t, true).URL + "/mcp")
			ep.Headers = map[string]string{"X-Trace": "1", "X-Tenant": "acme"}
			return ep, nil
		}},
		{name: "auth_misconfigured: 2025-03-26 metadata redirected to cloud metadata", class: ClassAuthMisconfigured, substr: "169.254.169.254 refused", setup: func(t *testing.T) (model.Endpoint, func(*Options)) {
			return endpoint(marchAuthServer(t, marchRedirectToMetadataService).URL + "/mcp"), func(o *Options) {
				disallow(o)
				o.AllowedNetworks = []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}
			}
		}},
		{name: "auth_misconfigured: 2025-03-26 challenge, metadata invalid, no token endpoint", class: ClassAuthMisconfigured, substr: "no authorization server metadata", setup: func(t *testing.T) (model.Endpoint, func(*Options)) {
			return endpoint(marchAuthServer(t, marchBrokenMetadata).URL + "/mcp"), nil
		}},
		{name: "auth_misconfigured: bare 401", class: ClassAuthMisconfigured, substr: "without a WWW-Authenticate", setup: func(t *testing.T) (model.Endpoint, func(*Options)) {
			return handlerEP(t, status(401)), nil
		}},
		{name: "auth_misconfigured: metadata missing", class: ClassAuthMisconfigured, substr: "metadata is unusable", setup: func(t *testing.T) (model.Endpoint, func(*Options)) {
			return handlerEP(t, status(401, "WWW-Authenticate", `Bearer realm="mcp"`)), nil
		}},
		{name: "auth_rejected", class: ClassAuthRejected, substr: "configured credentials", setup: func(t *testing.T) (model.Endpoint, func(*Options)) {
			ep := endpoint(protectedServer(t, true).URL + "/mcp")
			ep.Headers = map[string]string{"Authorization": "Bearer expired-token-123"}
			return ep, nil
		}},
		{name: "auth_rejected: an API key header", class: ClassAuthRejected, substr: "configured credentials", setup: func(t *testing.T) (model.Endpoint, func(*Options)) {
			ep := endpoint(protectedServer(t, true).URL + "/mcp")
			ep.Headers = map[string]string{"X-Trace": "1", "X-Api-Key": "k-123456"}
			return ep, nil
		}},
		{name: "forbidden", class: ClassForbidden, substr: "403", setup: func(t *testing.T) (model.Endpoint, func(*Options)) {
			return handlerEP(t, status(403)), nil
		}},
		{name: "not_found", class: ClassNotFound, substr: "404", setup: func(t *testing.T) (model.Endpoint, func(*Options)) {
			return handlerEP(t, http.NotFound), nil
		}},
		{name: "not_mcp: html", class: ClassNotMCP, substr: "text/html", setup: func(t *testing.T) (model.Endpoint, func(*Options)) {
			return handlerEP(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/html; charset=utf-8")
				fmt.Fprint(w, "<html><body>Welcome</body></html>")
			}), nil
		}},
		{name: "not_mcp: no content type", class: ClassNotMCP, substr: "without a content type", setup: func(t *testing.T) (model.Endpoint, func(*Options)) {
			return handlerEP(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header()["Content-Type"] = nil
				w.Write([]byte{0, 1, 2})
			}), nil
		}},
		{name: "not_mcp: static site answering POST with 501", class: ClassNotMCP, substr: "text/html", setup: func(t *testing.T) (model.Endpoint, func(*Options)) {
			return handlerEP(t, func(w http.ResponseWriter, r *http.Request) {
				if r.Method != http.MethodGet {
					http.Error(w, "Not Implemented", http.StatusNotImplemented)
					return
				}
				w.Header().Set("Content-Type", "text/html; charset=utf-8")
				fmt.Fprint(w, "<html><body>Welcome</body></html>")
			}), nil
		}},
		{name: "not_found: POST 501, GET 404", class: ClassNotFound, substr: "501", setup: func(t *testing.T) (model.Endpoint, func(*Options)) {
			return handlerEP(t, func(w http.ResponseWriter, r *http.Request) {
				if r.Method != http.MethodGet {
					http.Error(w, "Not Implemented", http.StatusNotImplemented)
					return
				}
				http.NotFound(w, r)
			}), nil
		}},
		{name: "protocol_error: garbage JSON", class: ClassProtocolError, substr: "not a JSON-RPC", setup: func(t *testing.T) (model.Endpoint, func(*Options)) {
			return handlerEP(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				fmt.Fprint(w, `{"jsonrpc":"2.0","id":1,"result":{`)
			}), nil
		}},
		{name: "protocol_error: deep nesting", class: ClassProtocolError, substr: "not a JSON-RPC", setup: func(t *testing.T) (model.Endpoint, func(*Options)) {
			return handlerEP(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				fmt.Fprint(w, `{"jsonrpc":"2.0","id":1,"result":`+strings.Repeat("[", 100000)+strings.Repeat("]", 100000)+`}`)
			}), nil
		}},
		{name: "protocol_error: invalid UTF-8", class: ClassProtocolError, substr: "UTF-8", setup: func(t *testing.T) (model.Endpoint, func(*Options)) {
			return handlerEP(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.Write([]byte("{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":\"\xff\xfe\"}"))
			}), nil
		}},
		{name: "protocol_error: 1 GB body", class: ClassProtocolError, substr: "cap", setup: func(t *testing.T) (model.Endpoint, func(*Options)) {
			var sent atomic.Int64
			ep := handlerEP(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				chunk := []byte(strings.Repeat(" ", 64<<10))
				for i := 0; i < (1<<30)/len(chunk); i++ {
					if _, err := w.Write(chunk); err != nil {
						return
					}
					sent.Add(int64(len(chunk)))
				}
			})
			t.Cleanup(func() {
				if s := sent.Load(); s >= 1<<30 {
					t.Errorf("server sent the whole 1 GB (%d bytes): the probe read past its cap", s)
				}
			})
			return ep, nil
		}},
		{name: "protocol_error: endless SSE", class: ClassProtocolError, substr: "event cap", setup: func(t *testing.T) (model.Endpoint, func(*Options)) {
			return handlerEP(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				for i := 0; ; i++ {
					if _, err := fmt.Fprintf(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"n\":%d}}\n\n", i); err != nil {
						return
					}
				}
			}), nil
		}},
		{name: "protocol_error: 406", class: ClassProtocolError, substr: "406", setup: func(t *testing.T) (model.Endpoint, func(*Options)) {
			ep := handlerEP(t, status(406))
			ep.Transport = TransportStreamableHTTP
			return ep, nil
		}},
		{name: "rpc_error", class: ClassRPCError, substr: "-32603", setup: func(t *testing.T) (model.Endpoint, func(*Options)) {
			return rawEP(t, goodRaw(map[string]func(http.ResponseWriter, json.RawMessage){
				"initialize": func(w http.ResponseWriter, id json.RawMessage) {
					writeJSON(w, 200, map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": -32603, "message": "database down"}})
				},
			})), nil
		}},
		{name: "version_mismatch: unknown version", class: ClassVersionMismatch, substr: "1999-01-01", setup: func(t *testing.T) (model.Endpoint, func(*Options)) {
			return rawEP(t, goodRaw(map[string]func(http.ResponseWriter, json.RawMessage){
				"initialize": func(w http.ResponseWriter, id json.RawMessage) {
					writeJSON(w, 200, result(id, initResult("1999-01-01")))
				},
			})), nil
		}},
		{name: "version_mismatch: pinned 2026-07-28, go-sdk 2025-era server", class: ClassVersionMismatch, substr: "pins protocol 2026-07-28", setup: func(t *testing.T) (model.Endpoint, func(*Options)) {
			ep := endpoint(streamable(t, sdkServer(Version20251125, Version20250618), mcp.StreamableHTTPOptions{}).URL)
			ep.ProtocolVersion = Version20260728
			return ep, nil
		}},
		{name: "version_mismatch: pinned 2026-07-28, server not initialized (TypeScript SDK)", class: ClassVersionMismatch, substr: "2025-era", setup: func(t *testing.T) (model.Endpoint, func(*Options)) {
			ep := rawEP(t, goodRaw(nil))
			ep.ProtocolVersion = Version20260728
			return ep, nil
		}},
		{name: "version_mismatch: pinned 2026-07-28 over streamable-http", class: ClassVersionMismatch, substr: "2025-era", setup: func(t *testing.T) (model.Endpoint, func(*Options)) {
			ep := rawEP(t, goodRaw(nil))
			ep.ProtocolVersion = Version20260728
			ep.Transport = TransportStreamableHTTP
			return ep, nil
		}},
		{name: "version_mismatch: pinned", class: ClassVersionMismatch, substr: "pins protocol 2025-11-25", setup: func(t *testing.T) (model.Endpoint, func(*Options)) {
			ep := endpoint(streamable(t, sdkServer(Version20250618), mcp.StreamableHTTPOptions{}).URL)
			ep.ProtocolVersion = Version20251125
			return ep, nil
		}},
		{name: "session_broken: no sticky sessions", class: ClassSessionBroken, substr: "sticky", setup: func(t *testing.T) (model.Endpoint, func(*Options)) {
			sa, sb := sdkServer(), sdkServer()
			a := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return sa }, &mcp.StreamableHTTPOptions{JSONResponse: true})
			b := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return sb }, &mcp.StreamableHTTPOptions{JSONResponse: true})
			t.Cleanup(func() { closeSessions(sa); closeSessions(sb) })
			var n atomic.Int64
			ep := endpoint(serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if n.Add(1)%2 == 1 {
					a.ServeHTTP(w, r)
				} else {
					b.ServeHTTP(w, r)
				}
			})).URL)
			ep.ProtocolVersion = Version20251125
			return ep, nil
		}},
		{name: "session_broken: 400 for the session (TypeScript SDK)", class: ClassSessionBroken, substr: "HTTP 400", setup: func(t *testing.T) (model.Endpoint, func(*Options)) {
			ts := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				var m struct {
					Method string          `json:"method"`
					ID     json.RawMessage `json:"id"`
				}
				_ = json.NewDecoder(r.Body).Decode(&m)
				if m.Method == "initialize" {
					w.Header().Set("Mcp-Session-Id", "sess-1")
					writeJSON(w, 200, result(m.ID, initResult(Version20251125)))
					return
				}
				writeJSON(w, 400, map[string]any{"jsonrpc": "2.0", "id": nil, "error": map[string]any{"code": -32000, "message": "Bad Request: No valid session ID provided"}})
			}))
			ep := endpoint(ts.URL)
			ep.ProtocolVersion = Version20251125
			return ep, nil
		}},
		{name: "session_broken: legacy POST 404", class: ClassSessionBroken, substr: "SSE stream announced", setup: func(t *testing.T) (model.Endpoint, func(*Options)) {
			ep := handlerEP(t, func(w http.ResponseWriter, r *http.Request) {
				if r.Method == http.MethodPost {
					http.NotFound(w, r)
					return
				}
				w.Header().Set("Content-Type", "text/event-stream")
				fmt.Fprint(w, "event: endpoint\ndata: /message?sessionId=abc\n\n")
				w.(http.Flusher).Flush()
				<-r.Context().Done()
			})
			ep.Transport = TransportSSE
			return ep, nil
		}},
		{name: "sse_deaf", class: ClassSSEDeaf, substr: "never answered", setup: func(t *testing.T) (model.Endpoint, func(*Options)) {
			ep := handlerEP(t, func(w http.ResponseWriter, r *http.Request) {
				if r.Method == http.MethodPost {
					w.WriteHeader(http.StatusAccepted)
					return
				}
				w.Header().Set("Content-Type", "text/event-stream")
				fmt.Fprint(w, "event: endpoint\ndata: /message?sessionId=abc\n\n")
				w.(http.Flusher).Flush()
				<-r.Context().Done()
			})
			ep.Transport = TransportSSE
			ep.Timeout = 300 * time.Millisecond
			return ep, nil
		}},
		{name: "degraded: slow", class: ClassDegraded, substr: "latency threshold", setup: func(t *testing.T) (model.Endpoint, func(*Options)) {
			ep := endpoint(streamable(t, sdkServer(), mcp.StreamableHTTPOptions{}).URL)
			ep.LatencyThreshold = time.Nanosecond
			return ep, nil
		}},
		{name: "degraded: tools/list failing", class: ClassDegraded, substr: "tools/list failed", setup: func(t *testing.T) (model.Endpoint, func(*Options)) {
			return rawEP(t, goodRaw(map[string]func(http.ResponseWriter, json.RawMessage){
				"tools/list": func(w http.ResponseWriter, id json.RawMessage) { w.WriteHeader(500) },
			})), nil
		}},
		{name: "network_error: connection dropped", class: ClassNetwork, setup: func(t *testing.T) (model.Endpoint, func(*Options)) {
			return handlerEP(t, func(w http.ResponseWriter, r *http.Request) {
				c, _, _ := w.(http.Hijacker).Hijack()
				c.Close()
			}), nil
		}},
		{name: "blocked_target: loopback literal", class: ClassBlockedTarget, substr: "private or reserved address", setup: func(t *testing.T) (model.Endpoint, func(*Options)) {
			ts, l := countingServer(t)
			t.Cleanup(func() { assertNoConnections(t, l) })
			return endpoint(ts.URL), disallow
		}},
		{name: "blocked_target: DNS rebinding to loopback", class: ClassBlockedTarget, substr: "private or reserved address", setup: func(t *testing.T) (model.Endpoint, func(*Options)) {
			ts, l := countingServer(t)
			t.Cleanup(func() { assertNoConnections(t, l) })
			r := dnsServer(t, map[string]netip.Addr{"rebind.mcpmon.test": netip.MustParseAddr("127.0.0.1")})
			_, port, _ := net.SplitHostPort(strings.TrimPrefix(ts.URL, "http://"))
			return endpoint("http://rebind.mcpmon.test:" + port + "/mcp"), func(o *Options) { disallow(o); o.Resolver = r }
		}},
		{name: "blocked_target: redirect to cloud metadata", class: ClassBlockedTarget, substr: "redirect to 169.254.169.254 refused", setup: func(t *testing.T) (model.Endpoint, func(*Options)) {
			ep := handlerEP(t, func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, "http://169.254.169.254/latest/meta-data/", http.StatusFound)
			})
			return ep, func(o *Options) {
				disallow(o)
				o.AllowedNetworks = []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}
			}
		}},
		{name: "tool check fails", class: ClassToolFailed, substr: "returned isError", setup: func(t *testing.T) (model.Endpoint, func(*Options)) {
			srv := streamable(t, toolServer(), mcp.StreamableHTTPOptions{JSONResponse: true})
			return toolEndpoint(srv.URL, model.ToolCheck{Name: "broken", Arguments: json.RawMessage(`{"account":"a"}`)}), nil
		}},
		{name: "oauth token refused", class: ClassAuthTokenFailed, substr: "invalid_client", setup: func(t *testing.T) (model.Endpoint, func(*Options)) {
			issuer, _ := startOP(t, clock.Real{}, time.Hour)
			srv := newProtectedMCP(t, issuer, clock.Real{})
			return oauthEndpoint(srv.URL, issuer, "not-the-secret"), nil
		}},
		{name: "oauth authorization server changed", class: ClassAuthServerChanged, substr: "not followed", setup: func(t *testing.T) (model.Endpoint, func(*Options)) {
			// Pinned to one server; the target's metadata names another.
			other := newFakeAS(t, false, claimSelf)
			ep := discoveringEndpoint(newPRMTarget(t, false, other.URL, nil).URL + "/mcp")
			pin, _ := json.Marshal(authPin{Client: pinClient(ep), Server: authServer{Issuer: "https://pinned.example", TokenEndpoint: "https://pinned.example/token"}})
			objs := &objectsFake{m: map[string][]byte{store.KindAuthServer + "/" + ep.ID: pin}}
			return ep, func(o *Options) { o.Catalogs = objs }
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ep, mod := tc.setup(t)
			res := testProber(t, mod).Probe(context.Background(), ep, cmd())
			if res.Class != tc.class {
				t.Fatalf("class = %s (%q), want %s", res.Class, res.Error, tc.class)
			}
			if res.Status != StatusOf(tc.class) {
				t.Errorf("status = %s, want %s", res.Status, StatusOf(tc.class))
			}
			if tc.class != ClassOK && res.Error == "" {
				t.Error("no error message")
			}
			if tc.substr != "" {
				mustContain(t, res.Error, tc.substr)
			}
			if tc.check != nil {
				tc.check(t, res)
			}
		})
	}
	// Every class in the table has a case above (ok is covered by TestEras;
	// secret_missing is the agent's, covered by pkg/agent's tests).
	covered := map[string]bool{ClassOK: true, ClassSecretMissing: true}
	for _, tc := range cases {
		covered[tc.class] = true
	}
	for _, c := range Classes() {
		if !covered[c.Class] {
			t.Errorf("class %s has no live-server case", c.Class)
		}
	}
}

func wantHTTP(code int) func(*testing.T, msg.ProbeResult) {
	return func(t *testing.T, res msg.ProbeResult) {
		if res.HTTPStatus != code {
			t.Errorf("HTTPStatus = %d, want %d", res.HTTPStatus, code)
		}
	}
}

func trust(certs ...*x509Cert) func(*Options) {
	return func(o *Options) {
		pool := newPool()
		for _, c := range certs {
			pool.AddCert(c)
		}
		o.RootCAs = pool
	}
}

func disallow(o *Options) { o.AllowPrivateTargets = false }

// protectedServer answers 401 with a Bearer challenge and serves the
// protected-resource metadata at the RFC 9728 well-known path.
func protectedServer(t *testing.T, withParam bool) *httptest.Server {
	var ts *httptest.Server
	ts = serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/.well-known/oauth-protected-resource/mcp" {
			writeJSON(w, 200, map[string]any{"resource": ts.URL + "/mcp", "authorization_servers": []string{"https://auth.example"}})
			return
		}
		if withParam {
			w.Header().Set("WWW-Authenticate", `Bearer realm="mcp", resource_metadata="`+ts.URL+`/.well-known/oauth-protected-resource/mcp"`)
		} else {
			w.Header().Set("WWW-Authenticate", `Bearer realm="mcp"`)
		}
		w.WriteHeader(401)
	}))
	return ts
}

// countingServer is an MCP server whose listener counts connections.
func countingServer(t *testing.T) (*httptest.Server, *countingListener) {
	ts := httptest.NewUnstartedServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return sdkServer() }, nil))
	l := &countingListener{Listener: ts.Listener}
	ts.Listener = l
	ts.Start()
	t.Cleanup(ts.Close)
	return ts, l
}

func assertNoConnections(t *testing.T, l *countingListener) {
	if n := l.n.Load(); n != 0 {
		t.Errorf("guard let %d connections through", n)
	}
}

// closeSessions ends sessions a probe could not DELETE (the balancer sent
// the DELETE to the other backend).
func closeSessions(s *mcp.Server) {
	for ss := range s.Sessions() {
		ss.Close()
	}
}

// The shapes of a 2025-03-26 OAuth server: its 401 is a plain Bearer
// challenge and it serves no protected-resource metadata.
const (
	marchMetadata                  = iota // RFC 8414 metadata at the origin
	marchDefaultEndpoints                 // no metadata; /token grants like the conformance fixture
	marchTokenErrorOnly                   // no metadata; /token answers an RFC 6749 error
	marchBrokenMetadata                   // metadata without issuer; /token absent
	marchRedirectToMetadataService        // metadata redirects to 169.254.169.254
)

func marchAuthServer(t *testing.T, shape int) *httptest.Server {
	return serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/.well-known/oauth-authorization-server" && shape == marchMetadata:
			writeJSON(w, 200, map[string]any{"issuer": "http://" + r.Host, "authorization_endpoint": "http://" + r.Host + "/oauth/authorize",
				"token_endpoint": "http://" + r.Host + "/oauth/token", "registration_endpoint": "http://" + r.Host + "/oauth/register"})
		case r.URL.Path == "/.well-known/oauth-authorization-server" && shape == marchBrokenMetadata:
			writeJSON(w, 200, map[string]any{"token_endpoint": "/token"})
		case r.URL.Path == "/.well-known/oauth-authorization-server" && shape == marchRedirectToMetadataService:
			http.Redirect(w, r, "http://169.254.169.254/latest/meta-data/", http.StatusFound)
		case strings.HasPrefix(r.URL.Path, "/.well-known/"):
			writeJSON(w, 404, map[string]any{"error": "not_found"})
		case r.URL.Path == "/token" && r.Method == http.MethodPost && shape == marchDefaultEndpoints:
			writeJSON(w, 200, map[string]any{"access_token": "test-token", "token_type": "Bearer", "expires_in": 3600})
		case r.URL.Path == "/token" && r.Method == http.MethodPost && shape == marchTokenErrorOnly:
			writeJSON(w, 400, map[string]any{"error": "invalid_request", "error_description": "code is required"})
		case r.URL.Path == "/token":
			http.NotFound(w, r)
		default:
			w.Header().Set("WWW-Authenticate", `Bearer`)
			writeJSON(w, 401, map[string]any{"error": "invalid_token"})
		}
	}))
}

// dripHeadersServer accepts on raw TCP and sends a status line and then one
// header byte at a time, never finishing the headers.
func dripHeadersServer(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	t.Cleanup(func() { close(done); l.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				go io.Copy(io.Discard, c)
				if _, err := io.WriteString(c, "HTTP/1.1 200 OK\r\n"); err != nil {
					return
				}
				tick := time.NewTicker(10 * time.Millisecond)
				defer tick.Stop()
				for {
					select {
					case <-done:
						return
					case <-tick.C:
						if _, err := io.WriteString(c, "X"); err != nil {
							return
						}
					}
				}
			}()
		}
	}()
	return "http://" + l.Addr().String() + "/mcp"
}
