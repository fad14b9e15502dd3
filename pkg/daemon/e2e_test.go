package daemon

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmon/mcpmon/pkg/api/apispec"
	"github.com/mcpmon/mcpmon/pkg/config"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/msg"
	"github.com/mcpmon/mcpmon/pkg/testpeers"
)

// mcpServer is a go-sdk MCP server on a fixed 127.0.0.1 port that a test can
// stop and start again, like an outage.
type mcpServer struct {
	t    *testing.T
	addr string
	srv  *http.Server
}

func newMCPServer(t *testing.T) *mcpServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &mcpServer{t: t, addr: ln.Addr().String()}
	s.serve(ln)
	t.Cleanup(s.stop)
	return s
}

func (s *mcpServer) url() string { return "http://" + s.addr + "/mcp" }

func (s *mcpServer) serve(ln net.Listener) {
	srv := echoMCPServer("e2e-fixture")
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	s.srv = hs
	// The goroutine serves its own server, never reading s.srv: stop (a
	// cleanup when a test skips right after creating the server) sets the
	// field to nil concurrently.
	go func() { _ = hs.Serve(ln) }()
}

// echoMCPServer is a go-sdk MCP server named name with one tool, echo.
func echoMCPServer(name string) *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: name, Version: "1.0.0"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "echo", Description: "Echo the text back."},
		func(_ context.Context, _ *mcp.CallToolRequest, in struct {
			Text string `json:"text"`
		}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
		})
	return srv
}

func (s *mcpServer) stop() {
	if s.srv != nil {
		_ = s.srv.Close()
		s.srv = nil
	}
}

func (s *mcpServer) start() {
	s.t.Helper()
	ln, err := net.Listen("tcp", s.addr)
	if err != nil {
		s.t.Fatalf("restart MCP server on %s: %v", s.addr, err)
	}
	s.serve(ln)
}

// receiver records webhook alerts: the one sink test receiver
// (testpeers.Receiver), its bodies read as JSON.
type receiver struct{ *testpeers.Receiver }

func newReceiver(t *testing.T) (*receiver, string) {
	r := testpeers.NewReceiver(t, nil)
	return &receiver{r}, r.URL + "/hook"
}

// wait returns the next alert that wait has not returned yet.
func (r *receiver) wait(t *testing.T, timeout time.Duration) map[string]any {
	t.Helper()
	return decodeAlert(t, r.Next(timeout).Body)
}

// all returns every alert so far, in arrival order.
func (r *receiver) all() []map[string]any {
	var out []map[string]any
	for _, b := range r.Bodies() {
		var a map[string]any
		if err := json.Unmarshal(b, &a); err != nil {
			a = map[string]any{"undecodable": string(b)}
		}
		out = append(out, a)
	}
	return out
}

func decodeAlert(t *testing.T, body []byte) map[string]any {
	t.Helper()
	var a map[string]any
	if err := json.Unmarshal(body, &a); err != nil {
		t.Fatalf("alert body is not JSON: %v: %q", err, body)
	}
	return a
}

// backend is one queue × store combination the end-to-end test runs on.
type backend struct {
	name  string
	setup func(t *testing.T, o *config.Options)
}

func e2eBackends() []backend {
	return []backend{
		{name: "embedded", setup: func(t *testing.T, o *config.Options) {}},
		{name: "sqs", setup: setupSQS},
		{name: "redis", setup: setupRedis},
	}
}

// fastOptions are the embedded defaults on a free loopback port with a
// fresh data dir, one-second windows and private targets allowed: what an
// end-to-end test of this package starts from.
func fastOptions(t *testing.T) config.Options {
	o := config.Defaults()
	o.Listen = "127.0.0.1:0"
	o.DataDir = t.TempDir()
	o.Window = time.Second
	o.Grace = 300 * time.Millisecond
	o.AllowPrivateTargets = true
	return o
}

func testLogger(t *testing.T) *slog.Logger {
	if os.Getenv("MCPMON_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

// TestEndToEnd is the walking skeleton's acceptance: register a real MCP
// server over REST, see up verdicts, stop it and get exactly one alert,
// restart mcpmon during the incident (no second alert), bring the server back
// and get exactly one resolve.
func TestEndToEnd(t *testing.T) {
	t.Parallel() // minutes of waiting on windows: overlapped with the other long end-to-end tests
	for _, b := range e2eBackends() {
		t.Run(b.name, func(t *testing.T) { runEndToEnd(t, b) })
	}
}

func runEndToEnd(t *testing.T, b backend) {
	srv := newMCPServer(t)
	rcv, hook := newReceiver(t)
	o := fastOptions(t)
	o.WebhookURL = model.SecretURL(hook)
	o.ReplicaID = "e2e"
	b.setup(t, &o)

	// API keys on (the default): the first start prints the admin key.
	var banner bytes.Buffer
	start := func() *Daemon {
		t.Helper()
		d, err := Start(t.Context(), RoleAll, o, Deps{Logger: testLogger(t), Stdout: &banner})
		if err != nil {
			t.Fatalf("start mcpmon: %v", err)
		}
		return d
	}
	d := start()
	c := apiClient{addr: d.Addr(), key: bootstrapKey(t, banner.String())}
	stop := func() {
		d.Stop()
		if err := d.Wait(); err != nil {
			t.Fatalf("mcpmon stopped with: %v", err)
		}
	}
	defer func() {
		if d != nil {
			stop()
		}
	}()

	const secret = "Bearer e2e-secret-token"
	id := c.register(t, map[string]any{"name": "fixture", "url": srv.url(), "schedule": "@every 1s", "timeout": "1s",
		"headers": map[string]string{"Authorization": secret}})
	eventually(t, 20*time.Second, "an up verdict", func() bool {
		return c.latestState(t, id) == msg.StateUp
	})
	for _, path := range []string{"/v1/endpoints/" + id, "/v1/endpoints", "/v1/endpoints/" + id + "/verdicts", "/metrics"} {
		if body := c.get(t, path); strings.Contains(body, "e2e-secret-token") {
			t.Fatalf("GET %s returns the secret header value", path)
		}
	}

	srv.stop()
	open := rcv.wait(t, 30*time.Second)
	if ep, _ := open["endpoint"].(map[string]any); open["state"] != "open" || open["kind"] != "open" || ep["id"] != id {
		t.Fatalf("first alert = %v, want an open alert for %s", open, id)
	}
	incidentID, _ := open["incidentId"].(string)
	if !strings.HasPrefix(incidentID, id+"-") {
		t.Fatalf("incident ID %q is not derived from the endpoint", incidentID)
	}

	// Restart mcpmon on the same data dir while the incident is open.
	stop()
	banner.Reset()
	d = start()
	if strings.Contains(banner.String(), "mcpmon_") {
		t.Fatalf("the restart printed an API key again:\n%s", banner.String())
	}
	c.addr = d.Addr()
	eventually(t, 20*time.Second, "down verdicts after the restart", func() bool {
		return c.latestState(t, id) == msg.StateDown
	})

	srv.start()
	resolve := rcv.wait(t, 30*time.Second)
	if resolve["state"] != "resolved" || resolve["kind"] != "resolve" || resolve["incidentId"] != incidentID {
		t.Fatalf("second alert = %v, want the resolve of %s", resolve, incidentID)
	}
	stop()
	d = nil
	if got := rcv.all(); len(got) != 2 {
		t.Fatalf("received %d alerts, want exactly one open and one resolve: %v", len(got), got)
	}
}

// apiClient calls a daemon's API with an API key (key "" sends none: a
// process started with --auth none, or a path outside /v1). Every exchange
// with /v1 is held to openapi.yaml (apispec.Client): a response the
// document does not describe fails the test, naming the operation.
type apiClient struct{ addr, key string }

func (c apiClient) do(t *testing.T, method, path string, body io.Reader) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, "http://"+c.addr+path, body)
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.key != "" {
		req.Header.Set("Authorization", "Bearer "+c.key)
	}
	resp, err := apispec.Client(t).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func register(t *testing.T, addr string, body map[string]any) string {
	t.Helper()
	return apiClient{addr: addr}.register(t, body)
}

func (c apiClient) register(t *testing.T, body map[string]any) string {
	t.Helper()
	b, _ := json.Marshal(body)
	resp := c.do(t, http.MethodPost, "/v1/endpoints", bytes.NewReader(b))
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("register: %d %s", resp.StatusCode, raw)
	}
	var ep struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(raw, &ep); err != nil || ep.ID == "" {
		t.Fatalf("register: no id in %s (%v)", raw, err)
	}
	return ep.ID
}

func get(t *testing.T, addr, path string) string {
	t.Helper()
	return apiClient{addr: addr}.get(t, path)
}

func (c apiClient) get(t *testing.T, path string) string {
	t.Helper()
	resp := c.do(t, http.MethodGet, path, nil)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, resp.StatusCode, b)
	}
	return string(b)
}

func latestState(t *testing.T, addr, id string) msg.State {
	t.Helper()
	return apiClient{addr: addr}.latestState(t, id)
}

func (c apiClient) latestState(t *testing.T, id string) msg.State {
	t.Helper()
	resp := c.do(t, http.MethodGet, fmt.Sprintf("/v1/endpoints/%s/verdicts?limit=1", id), nil)
	defer resp.Body.Close()
	var out struct {
		Verdicts []msg.Verdict `json:"verdicts"`
	}
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("verdicts: %d %s", resp.StatusCode, raw)
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		// Accept a bare array too.
		var arr []msg.Verdict
		if err2 := json.Unmarshal(raw, &arr); err2 != nil {
			t.Fatalf("verdicts body %s: %v", raw, err)
		}
		out.Verdicts = arr
	}
	if len(out.Verdicts) == 0 {
		return ""
	}
	return out.Verdicts[0].State
}

// eventually polls cond until it holds or timeout passes. It is for real
// processes and sockets, where no fake clock reaches; each poll is an
// observation of real state, not a guess of how long something takes.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	eventuallyEvery(t, 50*time.Millisecond, timeout, what, cond)
}

// eventuallyEvery is eventually checking cond every interval, for
// conditions that read many endpoints through the API.
func eventuallyEvery(t *testing.T, every, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(every)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		<-tick.C
	}
}
