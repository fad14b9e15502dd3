package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/mcpmon/mcpmon/pkg/api/apispec"
	apiv1 "github.com/mcpmon/mcpmon/pkg/api/v1"
	"github.com/mcpmon/mcpmon/pkg/declarative"
	"github.com/mcpmon/mcpmon/pkg/registry"
	"github.com/mcpmon/mcpmon/pkg/store"
	"github.com/mcpmon/mcpmon/pkg/testpeers"
	"github.com/mcpmon/mcpmon/pkg/testpeers/e2e"
)

// newMCPServer is a real go-sdk MCP server on 127.0.0.1; the test adds
// tools to it while it is probed.
func newMCPServer(t *testing.T) (string, *mcp.Server) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "cli-e2e", Version: "1.0.0"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "echo", Description: "Echo the text back."},
		func(_ context.Context, _ *mcp.CallToolRequest, in struct {
			Text string `json:"text"`
		}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
		})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(hs.Close)
	return hs.URL + "/mcp", srv
}

// harness runs the command tree in-process against one environment. Its
// REST commands send through hc, which holds every exchange with the API
// to openapi.yaml (apispec.Client): a mismatch fails the test.
type harness struct {
	t   *testing.T
	env map[string]string
	hc  *http.Client
	mu  sync.Mutex
	// progressEvery is IO.ProgressEvery (0: the default).
	progressEvery time.Duration
}

func (h *harness) getenv(k string) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.env[k]
}

func (h *harness) setenv(k, v string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.env[k] = v
}

// run executes `mcpmon args...` and returns stdout, stderr and the exit code.
func (h *harness) run(args ...string) (string, string, int) {
	h.t.Helper()
	var out, errOut bytes.Buffer
	code := Run(h.t.Context(), args, IO{Getenv: h.getenv, Stdout: &out, Stderr: &errOut, HTTPClient: h.hc, ProgressEvery: h.progressEvery})
	return out.String(), errOut.String(), code
}

// ok runs and fails the test unless the exit code is 0.
func (h *harness) ok(args ...string) string {
	h.t.Helper()
	out, errOut, code := h.run(args...)
	if code != ExitOK {
		h.t.Fatalf("mcpmon %s: exit %d, stderr %q", strings.Join(args, " "), code, errOut)
	}
	return out
}

// fails runs and asserts the exit code, a one-line error on stderr naming
// the command, and that it mentions want.
func (h *harness) fails(code int, want string, args ...string) string {
	h.t.Helper()
	out, errOut, got := h.run(args...)
	if got != code {
		h.t.Fatalf("mcpmon %s: exit %d, want %d (stdout %q, stderr %q)", strings.Join(args, " "), got, code, out, errOut)
	}
	first, _, _ := strings.Cut(errOut, "\n")
	if strings.Count(errOut, "\n") != 1 || !strings.HasPrefix(first, "mcpmon") || !strings.Contains(first, want) {
		h.t.Fatalf("mcpmon %s: stderr %q, want one line starting with the command and naming %q", strings.Join(args, " "), errOut, want)
	}
	return errOut
}

func (h *harness) json(v any, args ...string) {
	h.t.Helper()
	out := h.ok(append(args, "-o", "json")...)
	if err := json.Unmarshal([]byte(out), v); err != nil {
		h.t.Fatalf("mcpmon %s -o json: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	testpeers.Eventually(t, within, what, func() error {
		if !cond() {
			return errors.New("not yet")
		}
		return nil
	})
}

// startServer runs `mcpmon run` in-process through the command tree and
// returns its address and a stop function that waits for a clean exit.
func (h *harness) startServer(dataDir string) (addr string, stop func()) {
	t := h.t
	ctx, cancel := context.WithCancel(context.Background())
	banner, logs := e2e.NewBanner(), &e2e.Buffer{}
	done := make(chan int, 1)
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		done <- Run(ctx, []string{"run", "--listen", "127.0.0.1:0", "--data-dir", dataDir, "--allow-private-targets",
			"--window", "1s", "--grace", "300ms", "--rate-limit", "0", "--log-level", "warn"},
			IO{Getenv: h.getenv, Stdout: banner, Stderr: logs})
	}()
	wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
	addr, err := banner.Addr(wctx, exited)
	wcancel()
	if err != nil {
		cancel()
		t.Fatalf("mcpmon run: %v\n%s", err, logs.String())
	}
	return addr, func() {
		cancel()
		select {
		case code := <-done:
			if code != ExitOK {
				t.Errorf("mcpmon run exited %d:\n%s", code, logs.String())
			}
		case <-time.After(30 * time.Second):
			t.Errorf("mcpmon run did not stop")
		}
	}
}

// TestEveryCommandAgainstARealServer bootstraps an admin key offline,
// starts a real `mcpmon run` with API keys on, and drives every command of
// the tree against it and a real MCP server: output formats, exit codes
// (2 usage, 3 not found) and apply → export → apply --dry-run converging.
// Every request the commands send and every answer they get is validated
// against openapi.yaml on the way (apispec.Client).
func TestEveryCommandAgainstARealServer(t *testing.T) {
	mcpURL, mcpSrv := newMCPServer(t)
	hook := testpeers.NewReceiver(t, nil)
	hook.Answer(http.StatusOK, nil, "")
	dataDir := t.TempDir()
	h := &harness{t: t, hc: apispec.Client(t), env: map[string]string{
		"ALPHA_TOKEN": "alpha-secret", "MCPMON_APPLY_BETA_TOKEN": "beta-secret", "MCPMON_APPLY_HOOK_URL": hook.URL + "/hook/t0k",
	}}

	// A data dir with no store (the default ./data of another directory)
	// is refused, naming the path: a key in a new empty store works
	// against nothing.
	elsewhere := filepath.Join(t.TempDir(), "data")
	h.fails(ExitUsage, "no store at "+filepath.Join(elsewhere, "store.db")+": pass the --data-dir",
		"keys", "create", "--local", "--name", "admin", "--scope", "admin", "--data-dir", elsewhere)
	if _, err := os.Stat(elsewhere); err == nil {
		t.Fatal("keys create --local made a store where there was none")
	}
	h.fails(ExitUsage, "--init", "keys", "create", "--init", "--name", "admin", "--scope", "admin")

	// Offline bootstrap: the first admin key, straight into a new store;
	// the key alone on stdout, the store it went to on stderr.
	out, errOut, code := h.run("keys", "create", "--local", "--init", "--name", "admin", "--scope", "admin", "--data-dir", dataDir)
	if code != ExitOK || !strings.Contains(errOut, "store: the embedded store at "+filepath.Join(dataDir, "store.db")) {
		t.Fatalf("keys create --local --init: exit %d, stderr %q; want the store it wrote to", code, errOut)
	}
	key := strings.TrimSpace(out)
	if !strings.HasPrefix(key, "mcp_") && len(key) < 20 {
		t.Fatalf("keys create --local printed %q, want only the key", key)
	}
	if out := h.ok("keys", "list", "--local", "--data-dir", dataDir); !strings.Contains(out, "admin") {
		t.Fatalf("keys list --local:\n%s", out)
	}
	h.fails(ExitUsage, "scope", "keys", "create", "--local", "--name", "x", "--scope", "root", "--data-dir", dataDir)

	// Roles keep their own flags and rules.
	if _, errOut, code := h.run("prober"); code != ExitUsage || !strings.Contains(errOut, "embedded queue") {
		t.Fatalf("mcpmon prober on the embedded queue: exit %d, %q; want 2 and the daemon's reason", code, errOut)
	}
	for _, role := range []string{"aggregator", "alerter"} {
		if _, errOut, code := h.run(role, "--queue", "sqs"); code != ExitUsage || !strings.Contains(errOut, "embedded store") {
			t.Fatalf("mcpmon %s on the embedded store: exit %d, %q; want 2 and the daemon's reason", role, code, errOut)
		}
	}
	if out := h.ok("help", "endpoints"); !strings.Contains(out, "Examples:") {
		t.Fatalf("help endpoints:\n%s", out)
	}
	if _, errOut, code := h.run("api", "--help"); code != ExitOK || !strings.Contains(errOut, "-listen") {
		t.Fatalf("mcpmon api --help: exit %d, want the daemon's flags, got %q", code, errOut)
	}
	if _, errOut, code := h.run("queues", "ensure", "--help"); code != ExitOK || !strings.Contains(errOut, "sqs") {
		t.Fatalf("mcpmon queues ensure --help: exit %d, %q", code, errOut)
	}
	h.fails(ExitUsage, "unknown command", "queues", "destroy")
	h.fails(ExitUsage, "unknown command", "frobnicate")
	if out := h.ok("version"); strings.TrimSpace(out) == "" {
		t.Fatal("version printed nothing")
	}
	for _, sh := range []string{"bash", "zsh", "fish"} {
		if out := h.ok("completion", sh); !strings.Contains(out, "mcpmon") {
			t.Fatalf("completion %s: %q", sh, out[:min(len(out), 200)])
		}
	}
	h.fails(ExitUsage, "shell", "completion")

	addr, stop := h.startServer(dataDir)
	h.setenv("MCPMON_SERVER", "http://"+addr)
	h.setenv("MCPMON_TOKEN", key)
	if out := h.ok("status", "--help"); strings.Contains(out, key) {
		t.Fatalf("--help prints the key from MCPMON_TOKEN:\n%s", out)
	}

	var st Status
	h.json(&st, "status")
	if !st.Ready || st.Endpoints != 0 {
		t.Fatalf("status = %+v, want ready with no endpoints", st)
	}
	if out := h.ok("status"); !strings.Contains(out, "ready") {
		t.Fatalf("status table:\n%s", out)
	}
	h.fails(ExitUsage, "-o", "status", "-o", "xml")
	h.fails(ExitError, "--token", "status", "--token", "mcp_wrong")

	// endpoints
	var alpha apiv1.EndpointView
	h.json(&alpha, "endpoints", "add", "--name", "alpha", "--url", mcpURL, "--schedule", "@every 1s", "--timeout", "1s",
		"--label", "team=a", "--header", "Authorization=Bearer ${env:ALPHA_TOKEN}")
	if alpha.ID == "" || alpha.Headers["Authorization"] != apiv1.Redacted {
		t.Fatalf("endpoints add = %+v", alpha)
	}
	errOut = h.fails(ExitUsage, "headers.Authorization", "endpoints", "add", "--name", "lit", "--url", mcpURL, "--header", "Authorization=Bearer literal")
	if !strings.Contains(errOut, "not be written on the command line") || strings.Contains(errOut, "in the file") || strings.Contains(errOut, "Bearer literal") {
		t.Fatalf("a literal --header: %q, want it refused as written on the command line, not in a file, and not quoted", errOut)
	}
	h.fails(ExitUsage, "--name and --url", "endpoints", "add", "--name", "x")
	h.fails(ExitError, "schedule", "endpoints", "add", "--name", "bad", "--url", mcpURL, "--schedule", "whenever")
	h.fails(ExitUsage, "unknown flag", "endpoints", "add", "--nme", "x")

	var list []apiv1.EndpointView
	h.json(&list, "endpoints", "list", "--selector", "team=a")
	if len(list) != 1 || list[0].ID != alpha.ID {
		t.Fatalf("endpoints list --selector team=a = %+v", list)
	}
	h.json(&list, "endpoints", "list", "--selector", "team=b")
	if len(list) != 0 {
		t.Fatalf("endpoints list --selector team=b = %+v, want none", list)
	}
	if out := h.ok("endpoints", "list"); !strings.Contains(out, "alpha") || !strings.Contains(out, "NAME") {
		t.Fatalf("endpoints list table:\n%s", out)
	}
	if out := h.ok("endpoints", "list", "-o", "yaml"); !strings.Contains(out, "name: alpha") {
		t.Fatalf("endpoints list -o yaml:\n%s", out)
	}
	eventually(t, 60*time.Second, "alpha up", func() bool {
		var v apiv1.EndpointView
		h.json(&v, "endpoints", "get", "alpha")
		return v.State == "up"
	})
	if out := h.ok("endpoints", "get", alpha.ID); !strings.Contains(out, "Last verdict") || strings.Contains(out, "alpha-secret") {
		t.Fatalf("endpoints get table:\n%s", out)
	}
	h.fails(ExitNotFound, "no-such", "endpoints", "get", "no-such")
	h.fails(ExitUsage, "endpoint ID or name", "endpoints", "get")

	var edited apiv1.EndpointView
	h.json(&edited, "endpoints", "edit", "alpha", "--schedule", "@every 2s", "--if-match", fmt.Sprint(alpha.Version))
	if edited.Schedule != "@every 2s" || edited.Version <= alpha.Version {
		t.Fatalf("endpoints edit = %+v", edited)
	}
	h.fails(ExitError, "412", "endpoints", "edit", "alpha", "--timeout", "2s", "--if-match", fmt.Sprint(alpha.Version))
	h.fails(ExitUsage, "nothing to change", "endpoints", "edit", "alpha")
	h.fails(ExitNotFound, "nope", "endpoints", "edit", "nope", "--timeout", "2s")

	var paused []apiv1.EndpointView
	h.json(&paused, "endpoints", "pause", "alpha")
	if len(paused) != 1 || !paused[0].Paused {
		t.Fatalf("endpoints pause = %+v", paused)
	}
	h.json(&paused, "endpoints", "resume", alpha.ID)
	if paused[0].Paused {
		t.Fatalf("endpoints resume = %+v", paused)
	}
	h.fails(ExitNotFound, "nope", "endpoints", "pause", "nope")

	// incidents: an endpoint nobody answers for.
	var down apiv1.EndpointView
	h.json(&down, "endpoints", "add", "--name", "down", "--url", "http://127.0.0.1:1/mcp", "--schedule", "@every 1s", "--timeout", "1s")
	var incs []apiv1.IncidentView
	eventually(t, 60*time.Second, "an open incident", func() bool {
		h.json(&incs, "incidents", "list", "--state", "open", "--endpoint", down.ID)
		return len(incs) > 0
	})
	var byName []apiv1.IncidentView
	h.json(&byName, "incidents", "list", "--state", "open", "--endpoint", "down")
	if len(byName) == 0 || byName[0].ID != incs[0].ID {
		t.Fatalf("incidents list --endpoint down (a name) = %+v, want the incidents of %s", byName, down.ID)
	}
	h.fails(ExitNotFound, `"no-such-endpoint"`, "incidents", "list", "--endpoint", "no-such-endpoint")
	var detail apiv1.IncidentDetail
	h.json(&detail, "incidents", "get", incs[0].ID)
	if detail.EndpointID != down.ID {
		t.Fatalf("incidents get = %+v", detail)
	}
	var acked apiv1.IncidentView
	h.json(&acked, "incidents", "ack", incs[0].ID, "--by", "tester", "--reason", "known")
	if acked.State != "acknowledged" || acked.AckedBy != "tester" {
		t.Fatalf("incidents ack = %+v", acked)
	}
	if out := h.ok("incidents", "list"); !strings.Contains(out, incs[0].ID) {
		t.Fatalf("incidents list table:\n%s", out)
	} else if f := tableRow(out, incs[0].ID); len(f) < 2 || f[1] != "down" {
		t.Fatalf("incidents list table names the endpoint %v, want its name (down):\n%s", f, out)
	}
	if out := h.ok("incidents", "get", incs[0].ID); !strings.Contains(out, "down ("+down.ID+")") {
		t.Fatalf("incidents get table does not name the endpoint down (%s):\n%s", down.ID, out)
	}
	var updated apiv1.IncidentView
	h.json(&updated, "incidents", "update", incs[0].ID, "--status", "investigating", "--message", "looking")
	h.json(&updated, "incidents", "update", incs[0].ID, "--status", "resolved", "--message", "fixed")
	if len(updated.Updates) != 2 || updated.Updates[0].Message != "fixed" || updated.Updates[0].By != "admin" || updated.State != "acknowledged" {
		t.Fatalf("incidents update = %+v, want two updates newest first by the admin key, the incident still acknowledged", updated)
	}
	if out := h.ok("incidents", "get", incs[0].ID); !strings.Contains(out, "resolved: fixed") || !strings.Contains(out, "investigating: looking") {
		t.Fatalf("incidents get table lacks the updates:\n%s", out)
	}
	h.fails(ExitUsage, "--status", "incidents", "update", incs[0].ID, "--status", "fixed", "--message", "m")
	h.fails(ExitUsage, "--message", "incidents", "update", incs[0].ID, "--status", "monitoring")
	h.fails(ExitNotFound, "404", "incidents", "update", "no-such-incident", "--status", "monitoring", "--message", "m")
	h.json(&st, "status")
	if st.AckedIncidents < 1 || st.Endpoints != 2 {
		t.Fatalf("status = %+v, want two endpoints and the acknowledged incident", st)
	}
	if errOut := h.fails(ExitNotFound, "404 incident no-such-incident not found (mcpmon incidents list shows them)", "incidents", "get", "no-such-incident"); strings.Contains(errOut, "mcpmon server?") {
		t.Fatalf("mcpmon's own 404: %q, want no doubt that the server is mcpmon", errOut)
	}
	h.fails(ExitNotFound, "(mcpmon incidents list shows them)", "incidents", "ack", "no-such-incident")
	h.fails(ExitUsage, "--state", "incidents", "list", "--state", "sideways")

	h.readSide(alpha, down, mcpSrv)
	h.documentation(addr)

	// maintenance
	var mw apiv1.MaintenanceView
	h.json(&mw, "maintenance", "add", "--name", "deploy", "--endpoint", "alpha", "--for", "1h")
	if mw.ID == "" || len(mw.EndpointIDs) != 1 || mw.EndpointIDs[0] != alpha.ID {
		t.Fatalf("maintenance add = %+v", mw)
	}
	var mws []apiv1.MaintenanceView
	h.json(&mws, "maintenance", "list")
	if len(mws) != 1 || mws[0].ID != mw.ID {
		t.Fatalf("maintenance list = %+v", mws)
	}
	if out := h.ok("maintenance", "list"); !slices.Contains(tableRow(out, mw.ID), "alpha") {
		t.Fatalf("maintenance list table does not name the endpoint alpha:\n%s", out)
	}
	// Confirmations go to stdout, as every command's; stderr is for errors.
	if out, errOut, code := h.run("maintenance", "rm", mw.ID); code != ExitOK || out != "deleted maintenance window "+mw.ID+"\n" || errOut != "" {
		t.Fatalf("maintenance rm: exit %d, stdout %q, stderr %q; want the confirmation on stdout alone", code, out, errOut)
	}
	h.fails(ExitNotFound, "(mcpmon maintenance list shows them)", "maintenance", "rm", mw.ID)
	h.fails(ExitUsage, "RFC 3339", "maintenance", "add", "--endpoint", "alpha", "--start", "tomorrow", "--end", "later")
	// Missing input is a usage error naming the CLI's flags, not the API's members.
	h.fails(ExitUsage, "--endpoint ID|NAME or --selector", "maintenance", "add")
	h.fails(ExitUsage, "--for D", "maintenance", "add", "--endpoint", "alpha")
	h.fails(ExitUsage, "--cron and --duration", "maintenance", "add", "--selector", "team=x", "--cron", "0 2 * * 0")
	h.fails(ExitUsage, "--slug and --title", "status-pages", "create")
	h.fails(ExitUsage, `--state "bogus"`, "endpoints", "list", "--state", "bogus")
	h.fails(ExitUsage, `--state "bogus"`, "verdicts", "list", "alpha", "--state", "bogus")
	h.json(&list, "endpoints", "list", "--state", "no-data,pending")

	// keys over REST
	var keys []apiv1.KeyView
	h.json(&keys, "keys", "list")
	if len(keys) != 1 || keys[0].Name != "admin" {
		t.Fatalf("keys list = %+v", keys)
	}
	readKey := strings.TrimSpace(h.ok("keys", "create", "--name", "reader", "--scope", "read"))
	if readKey == "" || strings.Contains(readKey, " ") {
		t.Fatalf("keys create printed %q, want only the key", readKey)
	}
	h.fails(ExitError, "MCPMON_TOKEN", "endpoints", "add", "--name", "x", "--url", mcpURL, "--token", readKey)
	// Without a key: where to get one that needs no key to make.
	h.fails(ExitError, "mcpmon keys create --local --data-dir DIR", "endpoints", "list", "--token", "")
	h.json(&list, "endpoints", "list", "--token", readKey)
	// A list that fails prints no table (not even its header) above the error.
	if out, _, code := h.run("endpoints", "list", "--token", "mcpmon_notakey"); code != ExitError || out != "" {
		t.Errorf("endpoints list with a wrong key: exit %d, stdout %q; want 1 and nothing", code, out)
	}
	if len(list) != 2 {
		t.Fatalf("a read key lists %d endpoints, want 2", len(list))
	}
	h.ok("keys", "revoke", "reader")
	h.fails(ExitNotFound, "(mcpmon keys list shows them)", "keys", "revoke", "no-such-key")
	h.fails(ExitUsage, "--name and --scope", "keys", "create")

	// dead-letter queues (the operator's)
	var qs []apiv1.DLQView
	h.json(&qs, "dlq", "list")
	if len(qs) == 0 {
		t.Fatal("dlq list: no queues")
	}
	h.ok("dlq", "show", "verdicts")
	h.fails(ExitNotFound, "no-such-message", "dlq", "replay", "verdicts", "--id", "no-such-message")
	h.fails(ExitNotFound, "404", "dlq", "show", "no-such-queue")
	h.fails(ExitUsage, "--yes", "dlq", "purge", "verdicts")
	var purged map[string]int
	h.json(&purged, "dlq", "purge", "verdicts", "--yes")
	if _, ok := purged["purged"]; !ok {
		t.Fatalf("dlq purge = %v", purged)
	}
	var redrive apiv1.RedriveView
	h.json(&redrive, "dlq", "replay", "results")
	if redrive.Moved != 0 {
		t.Fatalf("dlq replay of an empty queue = %+v", redrive)
	}

	// declarative config
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cfg := filepath.Join(dir, "cfg")
	if err := os.Mkdir(cfg, 0o700); err != nil {
		t.Fatal(err)
	}
	write("cfg/beta.yaml", fmt.Sprintf(`endpoints:
  - name: beta
    url: %s
    schedule: "@every 5s"
    headers:
      Authorization: Bearer ${env:MCPMON_APPLY_BETA_TOKEN}
      X-Key: ${file:key.txt}
    labels: {team: b}
    rules: {openAfter: 2}
    sinks:
      - {name: hook, type: webhook, url: "${env:MCPMON_APPLY_HOOK_URL}"}
`, mcpURL))
	write("cfg/key.txt", "file-secret\n")
	write("cfg/gamma.yml", fmt.Sprintf("endpoints:\n  - name: gamma\n    url: %s\n    paused: true\n", mcpURL))

	var plan declarative.Plan
	h.json(&plan, "apply", "-f", cfg, "--dry-run")
	if len(plan.Changes) != 2 || plan.Changes[0].Action != declarative.Create {
		t.Fatalf("apply --dry-run = %+v, want two creates", plan)
	}
	h.json(&list, "endpoints", "list")
	if len(list) != 2 {
		t.Fatalf("a dry run changed the server: %d endpoints", len(list))
	}
	if out := h.ok("apply", "-f", cfg); !strings.Contains(out, "+ create beta") || !strings.Contains(out, "+ create gamma") {
		t.Fatalf("apply:\n%s", out)
	}
	if out := h.ok("endpoints", "get", "beta"); !strings.Contains(out, "hook (webhook)") || strings.Contains(out, "t0k") {
		t.Fatalf("endpoints get beta: want its sink named, not its URL:\n%s", out)
	}
	h.json(&plan, "apply", "-f", cfg, "--dry-run")
	if !plan.Empty() {
		t.Fatalf("apply twice: the second plans %+v", plan)
	}
	if out := h.ok("apply", "-f", cfg, "--dry-run"); !strings.Contains(out, "no changes") {
		t.Fatalf("apply --dry-run of a converged file:\n%s", out)
	}
	// A rotated secret alone is no diff; --force-secrets re-sends it.
	h.setenv("MCPMON_APPLY_BETA_TOKEN", "beta-secret-2")
	h.json(&plan, "apply", "-f", cfg, "--dry-run")
	if !plan.Empty() {
		t.Fatalf("a changed secret value planned %+v, want no diff", plan)
	}
	h.json(&plan, "apply", "-f", cfg, "--dry-run", "--force-secrets")
	if len(plan.Changes) != 1 || plan.Changes[0].Name != "beta" {
		t.Fatalf("--force-secrets planned %+v, want beta's secrets", plan)
	}
	h.ok("apply", "-f", cfg, "--force-secrets")

	// export → apply --dry-run: no diff, against the original and the export.
	exported := h.ok("export")
	if strings.Contains(exported, "-secret") || strings.Contains(exported, "t0k") || strings.Contains(exported, apiv1.Redacted) {
		t.Fatalf("export leaks a secret or a placeholder:\n%s", exported)
	}
	for _, want := range []string{"name: beta", "${env:MCPMON_APPLY_BETA_AUTHORIZATION}", "${env:MCPMON_APPLY_BETA_SINK_HOOK_URL}"} {
		if !strings.Contains(exported, want) {
			t.Fatalf("export lacks %q:\n%s", want, exported)
		}
	}
	exportFile := write("export.yaml", exported)
	for _, k := range []string{"BETA_AUTHORIZATION", "BETA_X_KEY", "ALPHA_AUTHORIZATION"} {
		h.setenv("MCPMON_APPLY_"+k, "from-env")
	}
	h.setenv("MCPMON_APPLY_BETA_SINK_HOOK_URL", hook.URL+"/hook/other")
	h.json(&plan, "apply", "-f", exportFile, "--dry-run", "--prune")
	if !plan.Empty() {
		t.Fatalf("apply --dry-run --prune of the export plans %+v\n%s", plan, exported)
	}
	var doc declarative.Document
	h.json(&doc, "export")
	if len(doc.Endpoints) != 4 {
		t.Fatalf("export -o json has %d endpoints, want 4", len(doc.Endpoints))
	}

	// Refusals: a literal secret, two endpoints of one name in the files or
	// on the server.
	lit := write("lit.yaml", "endpoints:\n  - name: lit\n    url: "+mcpURL+"\n    headers: {Authorization: Bearer hunter2}\n")
	if errOut := h.fails(ExitError, "headers.Authorization", "apply", "-f", lit); strings.Contains(errOut, "hunter2") {
		t.Fatalf("the error quotes the secret: %s", errOut)
	}
	dup := write("dup.yaml", "endpoints:\n  - {name: d, url: "+mcpURL+"}\n  - {name: d, url: "+mcpURL+"}\n")
	h.fails(ExitError, `"d"`, "apply", "-f", dup)
	var twin apiv1.EndpointView
	// The API allows a second endpoint of a name; add warns at once,
	// naming the IDs, and keeps stdout for the result.
	stdout, errOut, code := h.run("endpoints", "add", "--name", "beta", "--url", mcpURL, "-o", "json")
	if err := json.Unmarshal([]byte(stdout), &twin); code != ExitOK || err != nil {
		t.Fatalf("a second endpoint named beta: exit %d, %v, stdout %q", code, err, stdout)
	}
	if !strings.HasPrefix(errOut, `warning: 2 endpoints are named "beta"`) || !strings.Contains(errOut, twin.ID) || strings.Count(errOut, "\n") != 1 {
		t.Fatalf("a second endpoint named beta: stderr %q, want one warning naming both IDs", errOut)
	}
	h.fails(ExitError, twin.ID, "apply", "-f", cfg, "--dry-run")
	h.fails(ExitUsage, "give an ID", "endpoints", "get", "beta")
	if out, errOut, code := h.run("endpoints", "rm", twin.ID); code != ExitOK || !strings.Contains(out, "deleted endpoint "+twin.ID) || errOut != "" {
		t.Fatalf("endpoints rm: exit %d, stdout %q, stderr %q; want the confirmation on stdout alone", code, out, errOut)
	}
	h.fails(ExitUsage, "-f", "apply")
	h.fails(ExitUsage, "no such file", "apply", "-f", filepath.Join(dir, "missing.yaml"))

	// --prune: only gamma stays.
	only := write("only.yaml", fmt.Sprintf("endpoints:\n  - name: gamma\n    url: %s\n    paused: true\n", mcpURL))
	out = h.ok("apply", "-f", only, "--prune")
	for _, name := range []string{"beta", "alpha", "down"} {
		if !strings.Contains(out, "- delete "+name) {
			t.Fatalf("apply --prune did not delete %s:\n%s", name, out)
		}
	}
	h.json(&list, "endpoints", "list")
	if len(list) != 1 || list[0].Name != "gamma" {
		t.Fatalf("after --prune: %+v, want gamma alone", list)
	}
	var gone []apiv1.EndpointView
	h.json(&gone, "endpoints", "rm", "gamma")
	if len(gone) != 1 || gone[0].Name != "gamma" {
		t.Fatalf("endpoints rm -o json = %+v, want the deleted endpoint", gone)
	}
	h.fails(ExitNotFound, "gamma", "endpoints", "rm", "gamma")

	// import registry, from a registry serving the v0.1 shape: one server
	// with a remote (the MCP server above) and a deleted one.
	reg := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v0.1/servers" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"servers":[
			{"server":{"name":"io.example/live","version":"1.2.0","remotes":[{"type":"streamable-http","url":%q}]},
			 "_meta":{"io.modelcontextprotocol.registry/official":{"status":"active","publishedAt":"2026-11-01T00:00:00Z","updatedAt":"2026-11-01T00:00:00Z","isLatest":true}}},
			{"server":{"name":"io.example/gone","version":"0.1.0","remotes":[{"type":"sse","url":"https://gone.example.com/sse"}]},
			 "_meta":{"io.modelcontextprotocol.registry/official":{"status":"deprecated","publishedAt":"2026-10-01T00:00:00Z","updatedAt":"2026-10-02T00:00:00Z","isLatest":true}}}
		],"metadata":{"count":2}}`, mcpURL)
	}))
	t.Cleanup(reg.Close)
	h.fails(ExitUsage, "--url", "import", "registry")
	if out := h.ok("import", "registry", "--url", reg.URL, "--dry-run"); !strings.Contains(out, "create") {
		t.Fatalf("import registry --dry-run:\n%s", out)
	}
	h.json(&list, "endpoints", "list")
	if len(list) != 0 {
		t.Fatalf("import registry --dry-run created %d endpoints", len(list))
	}
	var rep registry.Report
	h.json(&rep, "import", "registry", "--url", reg.URL)
	if rep.Created != 1 || rep.Skipped != 1 || rep.Failed != 0 {
		t.Fatalf("import registry: %+v, want 1 created and the deprecated server skipped", rep)
	}
	h.json(&list, "endpoints", "list", "--selector", "source=mcp-registry")
	if len(list) != 1 || list[0].URL != mcpURL || list[0].Labels["mcp-registry/version"] != "1.2.0" {
		t.Fatalf("imported endpoints: %+v", list)
	}
	h.json(&rep, "import", "registry", "--url", reg.URL)
	if rep.Created != 0 || rep.Updated != 0 || rep.Unchanged != 1 {
		t.Fatalf("second import registry: %+v, want a no-op", rep)
	}
	h.ok("endpoints", "rm", list[0].ID)

	stop()
	// With the server stopped: the offline commands.
	h.ok("secrets", "rotate", "--data-dir", dataDir)
	if out := h.ok("keys", "revoke", "admin", "--local", "--data-dir", dataDir); !strings.Contains(out, "revoked") {
		t.Fatalf("keys revoke --local: %q", out)
	}
	h.fails(ExitError, "MCPMON_SERVER", "status")
}

// readSide drives the read-side commands — verdicts, uptime, events,
// catalog, audit — against the running server: alpha is up and probed
// every second, down has an open incident. It adds a tool to alpha's
// server, so alpha's catalog changes and leaves a durable event.
func (h *harness) readSide(alpha, down apiv1.EndpointView, mcpSrv *mcp.Server) {
	t := h.t

	// verdicts
	var vs []apiv1.VerdictView
	h.json(&vs, "verdicts", "list", "down", "--state", "down", "--limit", "2", "--page-size", "1")
	if len(vs) != 2 || vs[0].State != "down" || vs[1].State != "down" || !vs[0].Window.After(vs[1].Window) {
		t.Fatalf("verdicts list down --state down --limit 2 = %+v, want two down verdicts, newest first", vs)
	}
	eventually(t, 30*time.Second, "three up verdicts of alpha", func() bool {
		h.json(&vs, "verdicts", "list", alpha.ID, "--state", "up", "--limit", "3")
		return len(vs) == 3
	})
	for _, v := range vs {
		if v.State != "up" {
			t.Fatalf("verdicts list --state up has a %s verdict", v.State)
		}
	}
	if out := h.ok("verdicts", "list", "alpha", "--limit", "2"); !strings.Contains(out, "WINDOW") || strings.Count(out, "\n") != 3 {
		t.Fatalf("verdicts list table, want a header and two rows:\n%s", out)
	}
	if out := h.ok("verdicts", "list", "alpha", "--limit", "1", "-o", "yaml"); !strings.Contains(out, "state: up") {
		t.Fatalf("verdicts list -o yaml:\n%s", out)
	}
	h.fails(ExitUsage, "--state", "verdicts", "list", "alpha", "--state", "paused")
	h.fails(ExitNotFound, "no-such", "verdicts", "list", "no-such")
	h.fails(ExitUsage, "endpoint ID or name", "verdicts", "list")

	// uptime
	var up apiv1.UptimeView
	h.json(&up, "uptime", "alpha")
	if up.EndpointID != alpha.ID || up.Range != "24h" || !up.Uptime.Measured || up.Uptime.Up == 0 || up.Latency["total"].Count == 0 {
		t.Fatalf("uptime alpha = %+v, want measured up seconds and total latency", up)
	}
	if out := h.ok("uptime", "alpha", "--range", "7d"); !strings.Contains(out, "Uptime:") || !strings.Contains(out, "Latency total:") {
		t.Fatalf("uptime table:\n%s", out)
	}
	now := time.Now().UTC()
	h.json(&up, "uptime", down.ID, "--from", now.Add(-time.Hour).Format(time.RFC3339), "--to", now.Add(time.Minute).Format(time.RFC3339))
	if up.Range != "custom" || up.Uptime.Down == 0 || up.Incidents < 1 {
		t.Fatalf("uptime down --from --to = %+v, want down seconds and its incident", up)
	}
	h.fails(ExitUsage, "--range", "uptime", "alpha", "--range", "1y")
	h.fails(ExitUsage, "--from", "uptime", "alpha", "--from", "yesterday")
	h.fails(ExitNotFound, "no-such", "uptime", "no-such")

	// catalog, then a change to it: a durable event.
	var cat apiv1.CatalogView
	eventually(t, 30*time.Second, "alpha's catalog", func() bool {
		h.json(&cat, "catalog", "alpha")
		return len(cat.Tools) == 1
	})
	if cat.Fingerprint == "" || !strings.Contains(string(cat.Tools[0]), `"echo"`) {
		t.Fatalf("catalog alpha = %+v, want the echo tool and a fingerprint", cat)
	}
	if out := h.ok("catalog", alpha.ID); !strings.Contains(out, "echo") || !strings.Contains(out, "Echo the text back.") {
		t.Fatalf("catalog table:\n%s", out)
	}
	if out := h.ok("catalog", "alpha"); !strings.Contains(out, "alpha ("+alpha.ID+")") {
		t.Fatalf("catalog alpha: the table does not name the endpoint as asked:\n%s", out)
	}
	h.fails(ExitNotFound, "no-such", "catalog", "no-such")

	var evs []apiv1.EventView
	h.json(&evs, "events", "list", "alpha")
	if len(evs) != 0 {
		t.Fatalf("events list alpha before any change = %+v", evs)
	}
	mcp.AddTool(mcpSrv, &mcp.Tool{Name: "reverse", Description: "Reverse the text."},
		func(_ context.Context, _ *mcp.CallToolRequest, in struct {
			Text string `json:"text"`
		}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{}, nil, nil
		})
	eventually(t, 30*time.Second, "a catalog change event for alpha", func() bool {
		h.json(&evs, "events", "list", "alpha")
		return len(evs) > 0
	})
	if evs[0].Kind != "catalog_info" || evs[0].EndpointID != alpha.ID {
		t.Fatalf("events list alpha = %+v, want a catalog_info event (a tool added)", evs)
	}
	h.json(&evs, "events", "list", "alpha", "--kind", "catalog_breaking")
	if len(evs) != 0 {
		t.Fatalf("events list --kind catalog_breaking = %+v, want none", evs)
	}
	if out := h.ok("events", "list", "alpha", "--kind", "catalog_info"); !strings.Contains(out, "catalog_info") || !strings.Contains(out, "KIND") {
		t.Fatalf("events list table:\n%s", out)
	}
	h.fails(ExitUsage, "--kind", "events", "list", "alpha", "--kind", "weather")
	h.fails(ExitNotFound, "no-such", "events", "list", "no-such")

	// audit: what this test changed, newest first.
	var entries []store.AuditEntry
	h.json(&entries, "audit", "list", "--since", "1h", "--page-size", "2")
	if len(entries) < 4 || !entries[0].Time.After(entries[len(entries)-1].Time) {
		t.Fatalf("audit list = %+v, want this test's changes, newest first", entries)
	}
	created := false
	for _, e := range entries {
		created = created || (e.Action == "create" && e.ObjectID == alpha.ID && e.Actor.Name == "admin")
	}
	if !created {
		t.Fatalf("audit list lacks the admin's create of alpha: %+v", entries)
	}
	h.json(&entries, "audit", "list", "--limit", "1")
	if len(entries) != 1 {
		t.Fatalf("audit list --limit 1 = %d entries", len(entries))
	}
	if out := h.ok("audit", "list", "--limit", "3"); !strings.Contains(out, "ACTION") || !strings.Contains(out, "admin") {
		t.Fatalf("audit list table:\n%s", out)
	}
	h.json(&entries, "audit", "list", "--until", "2000-01-01T00:00:00Z")
	if len(entries) != 0 {
		t.Fatalf("audit list --until 2000 = %+v, want none", entries)
	}
	h.fails(ExitUsage, "--since", "audit", "list", "--since", "last tuesday")

	// Shell completion of endpoint arguments asks the server for names.
	out := h.ok("__complete", "verdicts", "list", "al")
	if !strings.Contains(out, "alpha\t"+alpha.ID) || strings.Contains(out, "down\t") {
		t.Fatalf("completion of verdicts list al:\n%s", out)
	}
	if out := h.ok("__complete", "endpoints", "rm", "alpha", ""); !strings.Contains(out, "down\t") || strings.Contains(out, "alpha\t") {
		t.Fatalf("completion of endpoints rm alpha …:\n%s", out)
	}
}

// documentation fetches the API's two documentation routes from the
// running server, as the README tells people to, through the validating
// client: both must be served, as the document says.
func (h *harness) documentation(addr string) {
	for _, path := range []string{"/v1/openapi.json", "/docs"} {
		resp, err := h.hc.Get("http://" + addr + path)
		if err != nil {
			h.t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			h.t.Errorf("GET %s on mcpmon run: %d, want 200", path, resp.StatusCode)
		}
	}
}

// TestEveryCommandHasExamples: --help of every command shows examples.
func TestEveryCommandHasExamples(t *testing.T) {
	a := &app{io: IO{Getenv: func(string) string { return "" }}}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Name() != "help" && c.Example == "" {
			t.Errorf("%s has no Example", c.CommandPath())
		}
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(a.root())
	var out bytes.Buffer
	if code := Run(t.Context(), []string{"endpoints", "add", "--help"}, IO{Stdout: &out, Stderr: &out}); code != ExitOK || !strings.Contains(out.String(), "Examples:") {
		t.Fatalf("endpoints add --help: exit %d\n%s", code, out.String())
	}
}

func TestNoArgumentsOrDaemonFlagsMeanRun(t *testing.T) {
	for _, tc := range []struct{ in, want []string }{
		{nil, []string{"run"}},
		{[]string{"--listen", ":9090"}, []string{"run", "--listen", ":9090"}},
		{[]string{"--server=http://x", "status"}, []string{"--server=http://x", "status"}},
		{[]string{"-o", "json", "status"}, []string{"-o", "json", "status"}},
		{[]string{"status"}, []string{"status"}},
	} {
		if got := defaultToRun(tc.in); strings.Join(got, " ") != strings.Join(tc.want, " ") {
			t.Errorf("defaultToRun(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// tableRow is the whitespace-separated fields of the line of a table that
// starts with first, or nil.
func tableRow(table, first string) []string {
	for line := range strings.Lines(table) {
		if f := strings.Fields(line); len(f) > 0 && f[0] == first {
			return f
		}
	}
	return nil
}
