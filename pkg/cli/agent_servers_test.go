package cli

import (
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// `mcpmon agent` takes its servers from --server repeated, a comma list
// or MCPMON_SERVER, and checks each: a plain-HTTP second server beyond
// loopback is a usage error naming it.
func TestAgentTakesEveryServer(t *testing.T) {
	const bad = "http://mcpmon.example.com"
	for name, tc := range map[string]struct {
		env  string
		args []string
	}{
		"repeated":      {args: []string{"--server", "http://127.0.0.1:1", "--server", bad}},
		"comma list":    {args: []string{"--server", "http://127.0.0.1:1," + bad}},
		"MCPMON_SERVER": {env: "http://127.0.0.1:1, " + bad},
	} {
		t.Run(name, func(t *testing.T) {
			h := &harness{t: t, env: map[string]string{"MCPMON_AGENT_TOKEN": "mcpmon_test", "MCPMON_SERVER": tc.env}}
			// Quoted alone: a list that was not split would be quoted whole.
			h.fails(ExitUsage, `--server "`+bad+`"`, append([]string{"agent"}, tc.args...)...)
		})
	}
}

// An agent whose first server is gone moves to the next: refused there,
// it exits 1 naming the refusal.
func TestAgentMovesOnFromADeadServer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String()
	ln.Close() // nothing listens there now: connection refused
	refusing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusUnauthorized)
	}))
	t.Cleanup(refusing.Close)
	h := &harness{t: t, env: map[string]string{"MCPMON_AGENT_TOKEN": "mcpmon_revoked"}}
	_, errOut, code := h.run("agent", "--server", dead, "--server", refusing.URL)
	if code != ExitError || !strings.Contains(errOut, "refused the agent key") || !strings.Contains(errOut, "switching to the next") {
		t.Fatalf("exit %d, stderr:\n%s\nwant 1 after switching from the dead server to the refusing one", code, errOut)
	}
}
