package cli

import (
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAnotherServerAtServerIsNamed: --server pointing at an HTTP server
// that is not mcpmon (an HTML 404 or 501) fails with one line asking
// whether it is one, naming the URL and how to change it; its 404 is an
// error (1), not "not found" (3): nothing named on the command line is
// missing.
func TestAnotherServerAtServerIsNamed(t *testing.T) {
	for _, status := range []int{http.StatusNotFound, http.StatusNotImplemented} {
		other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(status)
			_, _ = w.Write([]byte("<html><body>Error response</body></html>"))
		}))
		h := &harness{t: t, env: map[string]string{"MCPMON_SERVER": other.URL}}
		h.fails(ExitError, "is "+other.URL+" an mcpmon server? set --server or MCPMON_SERVER", "endpoints", "list")
		other.Close()
	}
}

// TestServerRoleErrorsGetNoClientHints: a server role's error (here its
// --listen address already taken) is the daemon's own line, with the
// daemon's advice; the REST client's hints ("is mcpmon running at
// --server?") are about another command and would send a user looking at
// the wrong process.
func TestServerRoleErrorsGetNoClientHints(t *testing.T) {
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	h := &harness{t: t, env: map[string]string{}}
	// The daemon logs to stderr before it fails (the generated secrets
	// key); its error is the last line.
	_, errOut, code := h.run("run", "--listen", held.Addr().String(), "--data-dir", t.TempDir())
	lines := strings.Split(strings.TrimSpace(errOut), "\n")
	last := lines[len(lines)-1]
	if code != ExitError || !strings.HasPrefix(last, "mcpmon run: ") || !strings.Contains(last, "pick another with --listen") {
		t.Fatalf("exit %d, last stderr line %q; want 1 and the daemon's error", code, last)
	}
	if strings.Contains(last, "MCPMON_SERVER") || strings.Contains(last, "is mcpmon running") {
		t.Errorf("a server role's error carries the client's hint: %q", last)
	}
}

// TestClientErrorsKeepTheirHints: a REST command that cannot reach
// --server names it and what to do, and `keys`, which takes --local, points
// at the offline path.
func TestClientErrorsKeepTheirHints(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := "http://" + ln.Addr().String()
	ln.Close() // nothing listens there now: connection refused
	h := &harness{t: t, env: map[string]string{"MCPMON_SERVER": down, "MCPMON_TOKEN": "mcpmon_x"}}
	h.fails(ExitError, "is mcpmon running at "+down+"? set --server or MCPMON_SERVER", "endpoints", "list")
	h.fails(ExitError, "mcpmon keys list --local works on the store directly", "keys", "list")
}

// TestNoTokenSaysNoKeyWasSent: a user who has not yet exported
// MCPMON_TOKEN is told that no key went out, not to find one "with the
// needed scope".
func TestNoTokenSaysNoKeyWasSent(t *testing.T) {
	h := &harness{t: t, env: map[string]string{}}
	addr, stop := h.startServer(t.TempDir())
	defer stop()
	h.setenv("MCPMON_SERVER", "http://"+addr)
	errOut := h.fails(ExitError, "no key was sent: set --token or MCPMON_TOKEN", "endpoints", "list")
	if strings.Contains(errOut, "needed scope") {
		t.Errorf("no key sent, yet the hint is about its scope: %q", errOut)
	}
	h.setenv("MCPMON_TOKEN", "mcpmon_notakey")
	h.fails(ExitError, "set --token or MCPMON_TOKEN", "endpoints", "list")
}

// TestAFileThatIsNotThereIsAUsageError: a file named on the command line
// that does not exist is a mistake in the command line (exit 2, naming the
// flag and the path), as for status-pages create -f, whatever the command.
func TestAFileThatIsNotThereIsAUsageError(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nope.yaml")
	h := &harness{t: t, env: map[string]string{"MCPMON_TOKEN": "mcpmon_x", "MCPMON_SERVER": "http://127.0.0.1:1"}}
	h.fails(ExitUsage, "-f "+missing+": no such file or directory", "apply", "-f", missing)
	h.fails(ExitUsage, "--sinks-file: open "+missing, "endpoints", "add", "--name", "a", "--url", "https://mcp.example.com/mcp", "--sinks-file", missing)
	h.fails(ExitUsage, "-f: open "+missing, "status-pages", "create", "-f", missing)
	h.fails(ExitUsage, "--scope (read, write or admin)", "keys", "create", "--name", "ci")
}

// TestEditWithALiteralSinkSecretNamesTheField: a sinks file with a literal
// webhook URL is refused before any request, naming the field, and an edit
// that keeps the endpoint's name does not call it `endpoint ""`.
func TestEditWithALiteralSinkSecretNamesTheField(t *testing.T) {
	file := filepath.Join(t.TempDir(), "sinks.yaml")
	if err := os.WriteFile(file, []byte("- {name: hook, type: webhook, url: \"https://hooks.example/T0K3N\"}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, env: map[string]string{"MCPMON_TOKEN": "mcpmon_x", "MCPMON_SERVER": "http://127.0.0.1:1"}}
	errOut := h.fails(ExitUsage, "sinks[0].url: a sink secret", "endpoints", "edit", "search", "--sinks-file", file)
	if strings.Contains(errOut, `endpoint ""`) || strings.Contains(errOut, "T0K3N") {
		t.Errorf("edit's error = %q, want no empty endpoint name and no secret", errOut)
	}
}
