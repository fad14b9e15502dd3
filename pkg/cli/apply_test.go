package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpmon/mcpmon/pkg/api/apispec"
	apiv1 "github.com/mcpmon/mcpmon/pkg/api/v1"
)

// TestApplyCannotExfiltrateThroughReferences: against a real `mcpmon run`
// with the applying admin key in MCPMON_TOKEN, an untrusted YAML file (a
// pull request) that sends the key, another variable or a file outside its
// directory to its target as a header is refused with one line naming the
// reference, and the server is left unchanged; the variables --allow-env
// names, the MCPMON_APPLY_ ones and files beside the YAML still resolve.
func TestApplyCannotExfiltrateThroughReferences(t *testing.T) {
	mcpURL, _ := newMCPServer(t)
	dataDir := t.TempDir()
	h := &harness{t: t, hc: apispec.Client(t), env: map[string]string{
		"CI_DEPLOY_KEY": "ci-secret-value", "MCPMON_APPLY_SEARCH_TOKEN": "search-secret",
	}}
	key := strings.TrimSpace(h.ok("keys", "create", "--local", "--name", "admin", "--scope", "admin", "--data-dir", dataDir))
	addr, stop := h.startServer(dataDir)
	defer stop()
	h.setenv("MCPMON_SERVER", "http://"+addr)
	h.setenv("MCPMON_TOKEN", key)

	root := t.TempDir()
	cfg := filepath.Join(root, "cfg")
	if err := os.Mkdir(cfg, 0o700); err != nil {
		t.Fatal(err)
	}
	write := func(name, body string) string {
		p := filepath.Join(root, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("outside.txt", "outside-secret\n")
	write("cfg/key.txt", "beside-secret\n")
	if err := os.Symlink(filepath.Join(root, "outside.txt"), filepath.Join(cfg, "link.txt")); err != nil {
		t.Fatal(err)
	}
	yaml := func(name, header string) string {
		return write("cfg/"+name+".yaml", "endpoints:\n  - name: "+name+"\n    url: "+mcpURL+"\n    headers:\n      Authorization: \""+header+"\"\n")
	}
	for _, c := range []struct{ name, header, want string }{
		{"cli-key", "Bearer ${env:MCPMON_TOKEN}", "${env:MCPMON_TOKEN}"},
		{"server-flag", "${env:MCPMON_SECRETS_KEY}", "${env:MCPMON_SECRETS_KEY}"},
		{"other-var", "${env:CI_DEPLOY_KEY}", "--allow-env CI_DEPLOY_KEY"},
		{"dot-dot", "${file:../outside.txt}", "${file:../outside.txt}"},
		{"absolute", "${file:" + filepath.Join(root, "outside.txt") + "}", "outside the directory"},
		{"symlink", "${file:link.txt}", "${file:link.txt}"},
	} {
		f := yaml(c.name, c.header)
		errOut := h.fails(ExitError, c.want, "apply", "-f", f)
		for _, secret := range []string{key, "ci-secret-value", "outside-secret"} {
			if strings.Contains(errOut, secret) {
				t.Fatalf("apply %s: the error quotes a secret: %s", c.name, errOut)
			}
		}
		if err := os.Remove(f); err != nil {
			t.Fatal(err)
		}
	}
	// Even allowed by name or by prefix, the CLI's key is never read.
	f := yaml("cli-key", "Bearer ${env:MCPMON_TOKEN}")
	h.fails(ExitError, "${env:MCPMON_TOKEN}", "apply", "-f", f, "--allow-env", "MCPMON_TOKEN", "--allow-env", "MCPMON_")
	_ = os.Remove(f)
	var list []apiv1.EndpointView
	h.json(&list, "endpoints", "list")
	if len(list) != 0 {
		t.Fatalf("refused files changed the server: %+v", list)
	}

	yaml("search", "Bearer ${env:MCPMON_APPLY_SEARCH_TOKEN}")
	yaml("beside", "${file:key.txt}")
	yaml("allowed", "${env:CI_DEPLOY_KEY}")
	if out := h.ok("apply", "-f", cfg, "--allow-env", "CI_", "--allow-env", "MCPMON_APPLY_"); strings.Count(out, "+ create") != 3 {
		t.Fatalf("apply of the allowed references:\n%s", out)
	}
}
