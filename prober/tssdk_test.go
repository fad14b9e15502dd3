package prober

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/msg"
	"github.com/mcpmon/mcpmon/pkg/testpeers"
)

// tsEverything starts the TypeScript SDK's reference server
// (@modelcontextprotocol/server-everything) with the given transport on a
// free port and returns its base URL, once it says it listens. The process
// is killed with the test.
func tsEverything(t *testing.T, transport string) string {
	t.Helper()
	entry := testpeers.TSEverything(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	cmd := exec.Command("node", entry, transport)
	cmd.Env = append(os.Environ(), fmt.Sprintf("PORT=%d", port))
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start server-everything %s: %v", transport, err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	ready := make(chan struct{})
	var (
		mu   sync.Mutex
		seen strings.Builder
	)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			mu.Lock()
			seen.WriteString(sc.Text() + "\n")
			mu.Unlock()
			if strings.Contains(sc.Text(), fmt.Sprint(port)) {
				close(ready)
				for sc.Scan() { // keep draining so the server never blocks on stderr
				}
				return
			}
		}
	}()
	select {
	case <-ready:
	case <-time.After(30 * time.Second):
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("server-everything %s did not say it listens on %d within 30s:\n%s", transport, port, seen.String())
	}
	return fmt.Sprintf("http://127.0.0.1:%d", port)
}

// TestTypeScriptSDKServers probes the TypeScript SDK's reference server
// over Streamable HTTP and legacy HTTP+SSE, as a real user's server built
// with another SDK: both are up, on the era they speak, with their tool
// catalog read.
func TestTypeScriptSDKServers(t *testing.T) {
	for _, tc := range []struct {
		transport, path, probeTransport string
		wantVersion                     string
	}{
		{"streamableHttp", "/mcp", TransportAuto, ""},
		{"streamableHttp", "/mcp", TransportStreamableHTTP, ""},
		{"sse", "/sse", TransportSSE, Version20241105},
	} {
		t.Run(tc.transport+"/"+tc.probeTransport, func(t *testing.T) {
			base := tsEverything(t, tc.transport)
			ep := model.Endpoint{ID: "ts", URL: base + tc.path, Transport: tc.probeTransport, Timeout: 10 * time.Second}
			res := testProber(t, nil).Probe(context.Background(), ep, cmd())
			if res.Status != msg.StatusUp || res.Class != ClassOK {
				t.Fatalf("probe of server-everything (%s): %s/%s %q", tc.transport, res.Status, res.Class, res.Error)
			}
			if tc.wantVersion != "" && res.ProtocolVersion != tc.wantVersion {
				t.Errorf("protocol version %q, want %q", res.ProtocolVersion, tc.wantVersion)
			}
			if res.ProtocolVersion == "" || res.ServerName == "" || res.ToolCount == 0 || res.CatalogFingerprint == "" {
				t.Errorf("result %+v: want the negotiated version, server name and tool catalog", res)
			}
		})
	}
}
