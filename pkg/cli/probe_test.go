package cli

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmon/mcpmon/pkg/msg"
	"github.com/mcpmon/mcpmon/pkg/testpeers"
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
	h.fails(ExitError, "blocked_target", "probe", "--allow-target-networks", "10.0.0.0/8", url)
	if out := h.ok("probe", "--allow-target-networks", "127.0.0.1", url); !strings.Contains(out, "Status:       up") {
		t.Errorf("probe with the server's address allowed:\n%s", out)
	}
	h.fails(ExitUsage, `--allow-target-networks: "office" is not a network`, "probe", "--allow-target-networks", "office", url)
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

// TestProbeExpectIsADeployGate: with --expect the exit says whether the
// status is the one expected, with one line saying what it was; the
// output is the same result.
func TestProbeExpectIsADeployGate(t *testing.T) {
	url, _ := newMCPServer(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String() + "/mcp"
	ln.Close() // refused from now on
	h := &harness{t: t, env: map[string]string{}}

	if out := h.ok("probe", "--allow-private-targets", "--expect", "up", url); !strings.Contains(out, "Status:       up") {
		t.Errorf("--expect up of an up server:\n%s", out)
	}
	h.fails(ExitError, "up (ok), want down", "probe", "--allow-private-targets", "--expect", "down", url)
	h.ok("probe", "--allow-private-targets", "--expect", "down", closed)
	_, errOut, code := h.run("probe", "--allow-private-targets", "--expect", "up", closed)
	if code != ExitError || !strings.Contains(errOut, "down (refused), want up: ") || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
		t.Errorf("--expect up of a refused port: exit %d, stderr %q; want %d and one line", code, errOut, ExitError)
	}
	h.fails(ExitUsage, `--expect "sideways"`, "probe", "--allow-private-targets", "--expect", "sideways", url)
}

func TestProbeOutcome(t *testing.T) {
	up := msg.ProbeResult{Status: msg.StatusUp, Class: "ok"}
	slow := msg.ProbeResult{Status: msg.StatusDegraded, Class: "slow", Error: "total 4s over 3s"}
	down := msg.ProbeResult{Status: msg.StatusDown, Class: "timeout", Error: "no answer in 10s"}
	for _, tc := range []struct {
		res    msg.ProbeResult
		expect msg.Status
		want   string // "" for exit 0
	}{
		{up, "", ""},
		{slow, "", ""},
		{down, "", "down (timeout): no answer in 10s"},
		{up, msg.StatusUp, ""},
		{slow, msg.StatusUp, "degraded (slow), want up: total 4s over 3s"},
		{down, msg.StatusUp, "down (timeout), want up: no answer in 10s"},
		{down, msg.StatusDown, ""},
		{up, msg.StatusDown, "up (ok), want down"},
		{slow, msg.StatusDegraded, ""},
	} {
		err := probeOutcome(tc.res, tc.expect)
		if got := fmt.Sprint(err); (err == nil) != (tc.want == "") || (err != nil && got != tc.want) {
			t.Errorf("probeOutcome(%s, expect %q) = %v, want %q", tc.res.Status, tc.expect, err, tc.want)
		}
	}
}

// TestProbeExportsItsTrace: `mcpmon probe --otlp-endpoint` sends the probe
// to a real OTLP receiver as one trace (a probe root, its initialize
// child) before it exits, as a daemon's probers do; without the flag or
// the OTEL_* environment, nothing is sent.
func TestProbeExportsItsTrace(t *testing.T) {
	url, _ := newMCPServer(t)
	rcv := testpeers.NewOTLPReceiver(t)
	h := &harness{t: t, env: map[string]string{}}

	h.ok("probe", "--allow-private-targets", url)
	if n := len(rcv.Spans()); n != 0 {
		t.Fatalf("a probe without --otlp-endpoint exported %d spans", n)
	}
	h.ok("probe", "--allow-private-targets", "--otlp-endpoint", rcv.HTTPURL, url)
	spans := rcv.Spans() // flushed before the command returned
	roots := map[string]testpeers.OTLPSpan{}
	for _, s := range spans {
		if s.Name == "probe" && s.ParentID == "" {
			roots[s.SpanID] = s
		}
	}
	if len(roots) != 1 {
		t.Fatalf("%d probe roots among %d spans, want 1", len(roots), len(spans))
	}
	child := false
	for _, s := range spans {
		if r, ok := roots[s.ParentID]; ok && s.Name == "initialize" && s.TraceID == r.TraceID {
			child = true
		}
	}
	if !child {
		t.Errorf("no initialize span under the probe root: %+v", spans)
	}
	h.fails(ExitUsage, "otlp", "probe", "--allow-private-targets", "--otlp-endpoint", "ftp://collector.example", url)
}

// TestProbeOfASilentServerSaysItIsWaiting: a target that accepts the
// connection and never answers is not silent for the whole timeout: a
// line every ProgressEvery on stderr names it and the time gone, while
// stdout stays the result alone (valid -o json).
func TestProbeOfASilentServerSaysItIsWaiting(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c) // held open, never answered
		}
	}()
	url := "http://" + ln.Addr().String() + "/mcp"
	h := &harness{t: t, env: map[string]string{}, progressEvery: 200 * time.Millisecond}
	out, errOut, code := h.run("probe", "--allow-private-targets", "--timeout", "1s", "-o", "json", url)
	var res msg.ProbeResult
	if err := json.Unmarshal([]byte(out), &res); err != nil || res.Status != msg.StatusDown {
		t.Fatalf("stdout %q (%v), want the down result alone", out, err)
	}
	want := "probe " + url + ": no result yet after 200ms (timeout 1s)"
	lines := strings.Split(strings.TrimSuffix(errOut, "\n"), "\n")
	if code != ExitError || !strings.Contains(errOut, want) || !strings.HasPrefix(lines[len(lines)-1], "mcpmon probe: down (") {
		t.Fatalf("exit %d, stderr %q; want 1, progress lines like %q, then the reason", code, errOut, want)
	}
}
