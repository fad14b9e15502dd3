package prober

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmon/mcpmon/pkg/msg"
)

// TestEras probes go-sdk servers of every era and transport shape.
func TestEras(t *testing.T) {
	tests := []struct {
		name        string
		versions    []string // server's supported versions (nil = all)
		opts        mcp.StreamableHTTPOptions
		legacy      bool
		transport   string
		pin         string
		wantVersion string
		wantTrans   string
	}{
		{name: "auto stateful SSE answers", wantVersion: Version20251125, wantTrans: TransportStreamableHTTP},
		{name: "auto stateful JSON answers", opts: mcp.StreamableHTTPOptions{JSONResponse: true}, wantVersion: Version20251125, wantTrans: TransportStreamableHTTP},
		{name: "auto stateless discovers 2026", opts: mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true}, wantVersion: Version20260728, wantTrans: TransportStreamableHTTP},
		{name: "auto stateless SSE", opts: mcp.StreamableHTTPOptions{Stateless: true}, wantVersion: Version20260728, wantTrans: TransportStreamableHTTP},
		{name: "pinned 2025-06-18", pin: Version20250618, wantVersion: Version20250618, wantTrans: TransportStreamableHTTP},
		{name: "pinned 2025-03-26", pin: Version20250326, wantVersion: Version20250326, wantTrans: TransportStreamableHTTP},
		{name: "server only 2025-06-18", versions: []string{Version20250618}, wantVersion: Version20250618, wantTrans: TransportStreamableHTTP},
		{name: "pinned 2026 stateless", pin: Version20260728, transport: TransportStreamableHTTP, opts: mcp.StreamableHTTPOptions{Stateless: true}, wantVersion: Version20260728, wantTrans: TransportStreamableHTTP},
		{name: "legacy sse transport", legacy: true, transport: TransportSSE, wantVersion: Version20241105, wantTrans: TransportSSE},
		{name: "legacy via auto", legacy: true, wantVersion: Version20241105, wantTrans: TransportSSE},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := sdkServer(tc.versions...)
			var srv *httptest.Server
			if tc.legacy {
				srv = legacySSE(t, s)
			} else {
				srv = streamable(t, s, tc.opts)
			}
			url := srv.URL
			ep := endpoint(url)
			if tc.transport != "" {
				ep.Transport = tc.transport
			}
			ep.ProtocolVersion = tc.pin
			res := testProber(t, nil).Probe(context.Background(), ep, cmd())
			if res.Status != msg.StatusUp || res.Class != ClassOK {
				t.Fatalf("status %s class %s error %q", res.Status, res.Class, res.Error)
			}
			if res.ProtocolVersion != tc.wantVersion || res.Transport != tc.wantTrans {
				t.Errorf("version %s transport %s, want %s %s", res.ProtocolVersion, res.Transport, tc.wantVersion, tc.wantTrans)
			}
			if res.ServerName != "fixture" || res.ServerVersion != "1.2.3" {
				t.Errorf("server %q %q", res.ServerName, res.ServerVersion)
			}
			if res.ToolCount != 1 || res.CatalogFingerprint == "" {
				t.Errorf("tools %d fingerprint %q", res.ToolCount, res.CatalogFingerprint)
			}
			handshake, other := msg.PhaseInitialize, msg.PhaseDiscover
			if tc.wantVersion == Version20260728 {
				handshake, other = msg.PhaseDiscover, msg.PhaseInitialize
			}
			for _, p := range []string{handshake, msg.PhaseToolsList, msg.PhaseTotal, msg.PhaseConnect} {
				if _, ok := res.Phases[p]; !ok {
					t.Errorf("phase %s missing: %v", p, res.Phases)
				}
			}
			if _, ok := res.Phases[other]; ok && (tc.pin != "" || tc.wantVersion == Version20260728) {
				t.Errorf("phase %s recorded for a %s probe that never spoke it: %v", other, tc.wantVersion, res.Phases)
			}
			// Legacy sessions end with the stream, which the server notices
			// asynchronously; Streamable HTTP sessions end with the DELETE.
			// A stateless server makes a session per request and ends it
			// when its handler returns, which can be just after the client
			// read the answer: Close waits for the handlers (a stateless
			// server holds no stream open), so the count is of sessions the
			// probe left, not of handlers still returning.
			if tc.opts.Stateless {
				srv.Close()
			}
			if n := countSessions(s); !tc.legacy && n != 0 {
				t.Errorf("%d sessions left on the server: the probe did not end its session", n)
			}
			if res.DedupID() != "ep1-"+cmd().ProbeRunID() {
				t.Errorf("dedup %s", res.DedupID())
			}
		})
	}
}

func countSessions(s *mcp.Server) int {
	n := 0
	for range s.Sessions() {
		n++
	}
	return n
}

// TestSSEAnswerSkipsPrimingAndNotifications: a 2025-11-25 server may send an
// empty priming event and notifications before the answer.
func TestSSEAnswerSkipsPrimingAndNotifications(t *testing.T) {
	ep := rawEP(t, goodRaw(map[string]func(http.ResponseWriter, json.RawMessage){
		"initialize": func(w http.ResponseWriter, id json.RawMessage) {
			w.Header().Set("Content-Type", "text/event-stream")
			b, _ := json.Marshal(result(id, initResult(Version20251125)))
			fmt.Fprintf(w, "id: 0\ndata:\n\n: comment\n\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{}}\n\nevent: message\nid: 1\ndata: %s\n\n", b)
		},
	}))
	ep.ProtocolVersion = Version20251125
	res := testProber(t, nil).Probe(context.Background(), ep, cmd())
	if res.Class != ClassOK || res.ServerName != "raw" {
		t.Fatalf("class %s %q server %q", res.Class, res.Error, res.ServerName)
	}
}

// TestPrevTransportHint: a server last seen on legacy SSE is probed on
// legacy SSE first, and one last seen on 2025-06-18 is asked for it.
func TestPrevTransportHint(t *testing.T) {
	ts := legacySSE(t, sdkServer())
	prev := &msg.ProbeResult{Status: msg.StatusUp, ProtocolVersion: Version20241105, Transport: TransportSSE}
	res := testProber(t, nil).ProbeAfter(context.Background(), endpoint(ts.URL), cmd(), prev)
	if res.Class != ClassOK || res.Transport != TransportSSE || len(res.Events) != 0 {
		t.Fatalf("%s %q transport %s events %v", res.Class, res.Error, res.Transport, res.Events)
	}
	ts2 := streamable(t, sdkServer(), mcp.StreamableHTTPOptions{})
	prev = &msg.ProbeResult{Status: msg.StatusUp, ProtocolVersion: Version20250618, Transport: TransportStreamableHTTP}
	res = testProber(t, nil).ProbeAfter(context.Background(), endpoint(ts2.URL), cmd(), prev)
	if res.Class != ClassOK || res.ProtocolVersion != Version20250618 {
		t.Fatalf("%s %q version %s", res.Class, res.Error, res.ProtocolVersion)
	}
}

// TestRedirects: a 307 to the real MCP path is followed (body and method
// kept); a loop stops at the cap.
func TestRedirects(t *testing.T) {
	s := sdkServer()
	mcpH := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	ts := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/mcp":
			mcpH.ServeHTTP(w, r)
		case "/old":
			http.Redirect(w, r, "/mcp", http.StatusTemporaryRedirect)
		default:
			http.Redirect(w, r, r.URL.Path+"x", http.StatusTemporaryRedirect)
		}
	}))
	ep := endpoint(ts.URL + "/old")
	ep.ProtocolVersion = Version20251125
	if res := testProber(t, nil).Probe(context.Background(), ep, cmd()); res.Class != ClassOK {
		t.Fatalf("redirected probe: %s %q", res.Class, res.Error)
	}
	ep = endpoint(ts.URL + "/loop")
	ep.ProtocolVersion = Version20251125
	res := testProber(t, nil).Probe(context.Background(), ep, cmd())
	if res.Class != ClassProtocolError {
		t.Fatalf("loop: %s %q", res.Class, res.Error)
	}
	mustContain(t, res.Error, "redirects")
}

func TestValidateProtocol(t *testing.T) {
	for _, ok := range [][2]string{{"", ""}, {"auto", ""}, {"streamable-http", "2025-06-18"}, {"sse", "2024-11-05"}, {"auto", "2026-07-28"}} {
		if err := ValidateProtocol(ok[0], ok[1]); err != nil {
			t.Errorf("%v: %v", ok, err)
		}
	}
	for _, bad := range [][2]string{{"websocket", ""}, {"auto", "2099-01-01"}, {"sse", "2026-07-28"}, {"streamable-http", "2024-11-05"}} {
		if err := ValidateProtocol(bad[0], bad[1]); !errors.Is(err, ErrInvalidProtocol) {
			t.Errorf("%v: %v, want ErrInvalidProtocol", bad, err)
		}
	}
}
