package prober

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/msg"
)

func TestMain(m *testing.M) {
	if os.Getenv(benchServerEnv) != "" {
		os.Exit(runBenchServer())
	}
	goleak.VerifyTestMain(m)
}

type echoIn struct {
	Text string `json:"text" jsonschema:"text to echo"`
}

// sdkServer is a go-sdk MCP server with one tool.
func sdkServer(versions ...string) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "fixture", Version: "1.2.3"}, &mcp.ServerOptions{SupportedProtocolVersions: versions})
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echo the text back."},
		func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
		})
	return s
}

// serve starts h on 127.0.0.1:0 and closes it with the test.
func serve(t testing.TB, h http.Handler) *httptest.Server {
	t.Helper()
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	return ts
}

func streamable(t testing.TB, s *mcp.Server, opts mcp.StreamableHTTPOptions) *httptest.Server {
	return serve(t, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &opts))
}

func legacySSE(t testing.TB, s *mcp.Server) *httptest.Server {
	return serve(t, mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return s }, nil))
}

// testProber allows loopback targets and logs into buf (if non-nil).
func testProber(t testing.TB, mod func(*Options)) *Prober {
	opts := Options{AllowPrivateTargets: true, DefaultLatencyThreshold: -1}
	if mod != nil {
		mod(&opts)
	}
	return New(opts)
}

func endpoint(url string) model.Endpoint {
	return model.Endpoint{ID: "ep1", URL: url, Transport: TransportAuto, Timeout: 5 * time.Second}
}

var testSlot = time.Date(2026, 11, 29, 13, 0, 0, 0, time.UTC)

func cmd() msg.ProbeCommand { return msg.NewProbeCommand("ep1", testSlot) }

// rpcHandler answers POSTed JSON-RPC by method with the function's result;
// a nil result answers the JSON-RPC response as is.
type rpcFunc func(w http.ResponseWriter, r *http.Request, method string, id json.RawMessage)

func rpcServer(t testing.TB, f rpcFunc) *httptest.Server {
	return serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		var m struct {
			Method string          `json:"method"`
			ID     json.RawMessage `json:"id"`
		}
		b, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		_ = json.Unmarshal(b, &m)
		f(w, r, m.Method, m.ID)
	}))
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func result(id json.RawMessage, res any) map[string]any {
	return map[string]any{"jsonrpc": "2.0", "id": id, "result": res}
}

func initResult(version string) map[string]any {
	return map[string]any{
		"protocolVersion": version,
		"capabilities":    map[string]any{"tools": map[string]any{}},
		"serverInfo":      map[string]any{"name": "raw", "version": "0.1"},
	}
}

// goodRaw answers a 2025-11-25 handshake; override per method.
func goodRaw(over map[string]func(w http.ResponseWriter, id json.RawMessage)) rpcFunc {
	return func(w http.ResponseWriter, r *http.Request, method string, id json.RawMessage) {
		if f, ok := over[method]; ok {
			f(w, id)
			return
		}
		switch method {
		case "initialize":
			writeJSON(w, 200, result(id, initResult(Version20251125)))
		case "notifications/initialized":
			w.WriteHeader(http.StatusAccepted)
		case "ping":
			writeJSON(w, 200, result(id, map[string]any{}))
		case "tools/list":
			writeJSON(w, 200, result(id, map[string]any{"tools": []any{}}))
		default:
			writeJSON(w, 400, map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": -32000, "message": "Server not initialized"}})
		}
	}
}

// countingListener counts accepted connections.
type countingListener struct {
	net.Listener
	n atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.n.Add(1)
	}
	return c, err
}

func testLogger(w io.Writer) *slog.Logger {
	if w == nil {
		w = io.Discard
	}
	if os.Getenv("PROBER_TEST_LOG") != "" {
		w = io.MultiWriter(w, os.Stderr)
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

func mustContain(t *testing.T, s, sub string) {
	t.Helper()
	if !strings.Contains(s, sub) {
		t.Fatalf("%q does not contain %q", s, sub)
	}
}
