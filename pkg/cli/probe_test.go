package cli

import (
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmon/mcpmon/pkg/msg"
)

// TestProbeCommand drives `mcpmon probe` against real targets on
// 127.0.0.1: a go-sdk server (up, with its tool called), a listener that
// never answers (down: timeout) and the SSRF guard's default refusal.
func TestProbeCommand(t *testing.T) {
	url, _ := newMCPServer(t)
	h := &harness{t: t, env: map[string]string{}}

	out := h.ok("probe", "--allow-private-targets", url)
	for _, want := range []string{"Status:       up", "Class:        ok", "Server:       cli-e2e 1.0.0", "Tools:        1 ", "initialize "} {
		if !strings.Contains(out, want) {
			t.Errorf("probe table lacks %q:\n%s", want, out)
		}
	}

	out = h.ok("probe", "--allow-private-targets", "-o", "json", "--tool", "echo", "--tool-args", `{"text":"hello"}`, "--expect-contains", "hello", url)
	var res msg.ProbeResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("probe -o json: %v\n%s", err, out)
	}
	if res.Status != msg.StatusUp || res.Phases[msg.PhaseToolCall] <= 0 {
		t.Errorf("probe with a passing tool check: status %s, phases %v", res.Status, res.Phases)
	}

	out, errOut, code := h.run("probe", "--allow-private-targets", "--tool", "echo", "--tool-args", `{"text":"hello"}`, "--expect-contains", "goodbye", url)
	if code != ExitError || !strings.Contains(out, "Status:       down") || !strings.Contains(errOut, "down (tool_failed)") {
		t.Errorf("a failing tool check: exit %d, want %d, the result on stdout and the reason on stderr:\n%s%s", code, ExitError, out, errOut)
	}

	h.fails(ExitError, "blocked_target", "probe", url)
	h.fails(ExitUsage, "want one URL", "probe")
	h.fails(ExitUsage, "need --tool", "probe", "--expect-contains", "x", url)
	h.fails(ExitUsage, `transport "carrier-pigeon"`, "probe", "--allow-private-targets", "--transport", "carrier-pigeon", url)
}

// TestProbeHungServerIsDown: a server that accepts and never answers is the
// commonest real outage; the probe ends at its timeout, down, exit 1.
func TestProbeHungServerIsDown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn
	var mu sync.Mutex
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c) // held open, never answered
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	h := &harness{t: t, env: map[string]string{}}
	out, errOut, code := h.run("probe", "--allow-private-targets", "--timeout", "300ms", "http://"+ln.Addr().String()+"/mcp")
	if code != ExitError || !strings.Contains(out, "Class:        timeout") || !strings.Contains(errOut, "down (timeout)") {
		t.Errorf("hung server: exit %d, want %d:\n%s%s", code, ExitError, out, errOut)
	}
}

// TestProbeSecretsComeFromReferences: a header value is sent to the target
// from its reference and appears nowhere in the output; a literal one is a
// usage error, so secrets stay out of argv and shell history.
func TestProbeSecretsComeFromReferences(t *testing.T) {
	const token = "s3cr3t-token-value"
	srv := mcp.NewServer(&mcp.Implementation{Name: "guarded", Version: "1.0.0"}, nil)
	mcpHandler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+token {
			w.Header().Set("WWW-Authenticate", `Bearer realm="guarded"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		mcpHandler.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	h := &harness{t: t, env: map[string]string{"PROBE_TOKEN": token}}

	out := h.ok("probe", "--allow-private-targets", "-o", "json", "--header", "Authorization=Bearer ${env:PROBE_TOKEN}", hs.URL)
	if strings.Contains(out, token) {
		t.Errorf("the token is in the output:\n%s", out)
	}
	h.fails(ExitUsage, "${env:NAME}", "probe", "--allow-private-targets", "--header", "Authorization=Bearer "+token, hs.URL)
	h.fails(ExitUsage, "MISSING_TOKEN", "probe", "--allow-private-targets", "--header", "Authorization=Bearer ${env:MISSING_TOKEN}", hs.URL)
	h.fails(ExitError, "auth_rejected", "probe", "--allow-private-targets", "--header", "Authorization=Bearer ${env:PROBE_TOKEN}x", hs.URL)
}
