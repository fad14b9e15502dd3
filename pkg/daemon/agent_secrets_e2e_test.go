package daemon

import (
	"context"
	"encoding/json"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmon/mcpmon/pkg/msg"
	"github.com/mcpmon/mcpmon/pkg/testpeers"
	"github.com/mcpmon/mcpmon/pkg/testpeers/e2e"
)

// agentSideSecret is the value only the agent holds; the test looks for
// it, and for the token it makes, everywhere the central service keeps or
// says anything.
const agentSideSecret = "agentside-7f3c9a51e2"

// TestAgentSideSecretStaysInside is the acceptance of agent-side secrets
// on `mcpmon run` (plain HTTP, without --agent-secrets-over-http: an
// endpoint whose only secret is a reference carries no central secret). An
// endpoint's Authorization is "Bearer ${agent:billing-token}"; the agent
// first lacks the secret, so the probe fails as secret_missing and one
// incident names the secret and what to set; the secret added to its
// --secrets-file and SIGHUP, the target (401 unless the header matches)
// is up and the incident resolves. The value is nowhere in the store's
// files, the server's or the agent's logs, the API's answers or the
// alerts.
func TestAgentSideSecretStaysInside(t *testing.T) {
	t.Parallel()
	target := guardedMCPServer(t, "Bearer "+agentSideSecret)
	rcv, hook := newReceiver(t)
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	serverLog := e2e.NewBanner()
	srvProc := testpeers.StartProcess(t, e2e.Spec{Name: "mcpmon", Path: testpeers.Mcpmon(t), Output: serverLog,
		Args: []string{"run", "--listen", "127.0.0.1:0", "--data-dir", data, "--window", "1s", "--grace", "300ms", "--replica-id", "e2e"},
		Env:  append(os.Environ(), "MCPMON_WEBHOOK_URL="+hook)})
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	addr, err := serverLog.Addr(ctx, srvProc.Exited())
	var adminKey string
	if err == nil {
		adminKey, err = serverLog.Token(ctx, srvProc.Exited())
	}
	cancel()
	if err == nil {
		err = srvProc.WaitReady(t.Context(), 90*time.Second, e2e.HTTPReady(addr))
	}
	if err != nil {
		t.Fatalf("mcpmon run: %v", err)
	}
	c := apiClient{addr: addr, key: adminKey}

	body := map[string]any{"name": "billing", "url": target, "schedule": "@every 1s", "timeout": "1s",
		"headers": map[string]string{"Authorization": "Bearer ${agent:billing-token}"}}
	if status, b := c.send(t, http.MethodPost, "/v1/endpoints", body); status != http.StatusBadRequest || !strings.Contains(string(b), "#/regions") {
		t.Fatalf("an agent-side reference for the central probers: %d %s, want 400 naming #/regions", status, b)
	}
	body["regions"] = []string{"loc-office"}
	id := c.register(t, body)
	if got := c.get(t, "/v1/endpoints/"+id); !strings.Contains(got, `"Authorization":"Bearer ${agent:billing-token}"`) {
		t.Errorf("GET shows %s, want the reference as written", got)
	}

	status, b := c.send(t, http.MethodPost, "/v1/agents", map[string]any{"name": "office-1", "location": "office"})
	var created struct{ Key string }
	if status != http.StatusCreated || json.Unmarshal(b, &created) != nil {
		t.Fatalf("create agent: %d %s", status, b)
	}
	secrets := filepath.Join(dir, "agent.secrets")
	if err := os.WriteFile(secrets, []byte("# office-1's secrets\nunrelated=x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	agentLog := &e2e.Buffer{}
	agent := testpeers.StartProcess(t, e2e.Spec{Name: "mcpmon agent", Path: testpeers.Mcpmon(t), Output: agentLog,
		Env:  append(os.Environ(), "MCPMON_AGENT_TOKEN="+created.Key),
		Args: []string{"agent", "--server", "http://" + addr, "--allow-private-targets", "--secrets-file", secrets}})

	// Without the secret: secret_missing, one incident that says what to do.
	const wantReason = "agent office-1 has no secret billing-token: set MCPMON_AGENT_SECRET_BILLING_TOKEN or add it to --secrets-file"
	open := rcv.wait(t, 30*time.Second)
	if open["kind"] != "open" {
		t.Fatalf("first alert = %v, want an open alert", open)
	}
	incidentID, _ := open["incidentId"].(string)
	var inc struct{ Class, Reason string }
	if err := json.Unmarshal([]byte(c.get(t, "/v1/incidents/"+incidentID)), &inc); err != nil || inc.Class != "secret_missing" || inc.Reason != wantReason {
		t.Fatalf("incident %+v (%v), want class secret_missing and reason %q", inc, err, wantReason)
	}

	// The secret added and the file re-read: up, and the incident resolves.
	if err := os.WriteFile(secrets, []byte("unrelated=x\nbilling-token="+agentSideSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(agent.PID(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	resolve := rcv.wait(t, 30*time.Second)
	if resolve["kind"] != "resolve" || resolve["incidentId"] != incidentID {
		t.Fatalf("second alert = %v, want the resolve of %s", resolve, incidentID)
	}
	eventually(t, 30*time.Second, "an up verdict", func() bool { return c.latestState(t, id) == msg.StateUp })
	if got := rcv.all(); len(got) != 2 {
		t.Errorf("received %d alerts, want one open and one resolve: %v", len(got), got)
	}

	// Nowhere central: API answers, alerts, logs, the store's bytes.
	var said strings.Builder
	for _, path := range []string{"/v1/endpoints", "/v1/endpoints/" + id, "/v1/endpoints/" + id + "/verdicts", "/v1/endpoints/" + id + "/events",
		"/v1/endpoints/" + id + "/history", "/v1/incidents", "/v1/incidents/" + incidentID, "/v1/agents", "/v1/audit"} {
		said.WriteString(c.get(t, path))
	}
	if !strings.Contains(said.String(), "secret_missing") {
		t.Error("the API's answers do not show the secret_missing result: the search below would prove nothing")
	}
	for _, a := range rcv.Bodies() {
		said.Write(a)
	}
	srvProc.Stop(10 * time.Second) // the store closed: every page on disk
	agent.Stop(10 * time.Second)
	said.WriteString(serverLog.String())
	said.WriteString(agentLog.String())
	if !strings.Contains(agentLog.String(), "secret_missing") {
		t.Errorf("the agent's log does not mention the missing secret:\n%s", agentLog.String())
	}
	if strings.Contains(said.String(), agentSideSecret) {
		t.Fatalf("the agent-side secret appears in the API's answers, the alerts or the logs")
	}
	files := 0
	if err := filepath.WalkDir(data, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		files++
		if strings.Contains(string(raw), agentSideSecret) {
			t.Errorf("the agent-side secret is in the store file %s", path)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if files == 0 {
		t.Fatalf("no store files under %s", data)
	}
}

// guardedMCPServer is a go-sdk MCP server on 127.0.0.1 that answers 401
// unless the request's Authorization is auth.
func guardedMCPServer(t *testing.T, auth string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := echoMCPServer("guarded")
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	hs := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != auth {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})}
	go func() { _ = hs.Serve(ln) }()
	t.Cleanup(func() { _ = hs.Close() })
	return "http://" + ln.Addr().String() + "/mcp"
}
