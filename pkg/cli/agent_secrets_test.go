package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A secrets file the agent cannot use stops it before it polls: a
// non-zero exit and one line naming the file and the line, not a value.
func TestAgentRefusesABadSecretsFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agent.secrets")
	if err := os.WriteFile(path, []byte("ok=fine\nhunter2-no-equals\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	env := map[string]string{"MCPMON_AGENT_TOKEN": "mcpmon_test"}
	code := Run(t.Context(), []string{"agent", "--server", "http://127.0.0.1:1", "--secrets-file", path},
		IO{Getenv: func(k string) string { return env[k] }, Stdout: &stdout, Stderr: &stderr})
	out := strings.TrimSpace(stderr.String())
	if code == 0 || strings.Count(out, "\n") != 0 || !strings.Contains(out, "--secrets-file") || !strings.Contains(out, "line 2") ||
		strings.Contains(out, "hunter2") {
		t.Fatalf("exit %d, stderr:\n%s\nwant non-zero and one line naming the file's line 2, no value", code, out)
	}
}
