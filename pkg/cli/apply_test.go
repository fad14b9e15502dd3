package cli

import (
	"os"
	"path/filepath"
	"slices"
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
	h, key := startAdmin(t, map[string]string{"CI_DEPLOY_KEY": "ci-secret-value", "MCPMON_APPLY_SEARCH_TOKEN": "search-secret"})

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

// TestApplyKeepsRegionsAndDeepChecksInStep: against a real `mcpmon run`,
// a file's regions, credential warning, tool check and OAuth client are
// created, planned as no change once applied, survive export → apply with
// no change, and an edit of them (a location added, the tool check dropped,
// another client ID) is patched so the server ends exactly as the file
// says. The secrets (a tool argument, the client secret) come from
// references and never appear in the export.
func TestApplyKeepsRegionsAndDeepChecksInStep(t *testing.T) {
	mcpURL, _ := newMCPServer(t)
	h, _ := startAdmin(t, map[string]string{"MCPMON_APPLY_DEEP_Q": "query-secret", "MCPMON_APPLY_DEEP_CS": "client-secret"})
	dir := t.TempDir()
	write := func(name, body string) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	file := func(regions, toolCheck, clientID string) string {
		return write("deep.yaml", "endpoints:\n  - name: deep\n    url: "+mcpURL+"\n    regions: "+regions+
			"\n    credentialWarning: 24h\n"+toolCheck+
			"    oauth: {tokenUrl: \"https://auth.example.com/token\", clientId: "+clientID+", clientSecret: \"${env:MCPMON_APPLY_DEEP_CS}\", scopes: [read]}\n")
	}
	const tool = "    toolCheck: {name: echo, arguments: {q: \"${env:MCPMON_APPLY_DEEP_Q}\", n: 7}, expect: {contains: ok}}\n"
	get := func() apiv1.EndpointView {
		t.Helper()
		var list []apiv1.EndpointView
		h.json(&list, "endpoints", "list")
		if len(list) != 1 {
			t.Fatalf("%d endpoints, want 1", len(list))
		}
		var v apiv1.EndpointView
		h.json(&v, "endpoints", "get", list[0].ID)
		return v
	}
	noChange := func(f, when string) {
		t.Helper()
		if out := h.ok("apply", "-f", f, "--dry-run"); !strings.Contains(out, "no changes") {
			t.Fatalf("%s: apply --dry-run plans changes:\n%s", when, out)
		}
	}

	f := file("[loc-office]", tool, "c1")
	if out := h.ok("apply", "-f", f); !strings.Contains(out, "+ create deep") {
		t.Fatalf("apply:\n%s", out)
	}
	v := get()
	if !slices.Equal(v.Regions, []string{"loc-office"}) || v.ToolCheck == nil || v.ToolCheck.Name != "echo" || v.OAuth == nil || v.OAuth.ClientID != "c1" {
		t.Fatalf("created %+v", v)
	}
	noChange(f, "the applied file")

	exported := h.ok("export")
	for _, secret := range []string{"query-secret", "client-secret", apiv1.Redacted} {
		if strings.Contains(exported, secret) {
			t.Fatalf("export holds %q:\n%s", secret, exported)
		}
	}
	for _, want := range []string{"loc-office", "${env:MCPMON_APPLY_DEEP_TOOLCHECK_Q}", "${env:MCPMON_APPLY_DEEP_OAUTH_CLIENTSECRET}", "clientId: c1"} {
		if !strings.Contains(exported, want) {
			t.Fatalf("export lacks %q:\n%s", want, exported)
		}
	}
	h.setenv("MCPMON_APPLY_DEEP_TOOLCHECK_Q", "x")
	h.setenv("MCPMON_APPLY_DEEP_TOOLCHECK_N", "7")
	h.setenv("MCPMON_APPLY_DEEP_OAUTH_CLIENTSECRET", "y")
	noChange(write("export.yaml", exported), "the export")

	f = file("[loc-office, loc-lab]", "", "c2")
	out := h.ok("apply", "-f", f)
	for _, want := range []string{"regions", "toolCheck", "oauth"} {
		if !strings.Contains(out, want) {
			t.Fatalf("apply of the edit does not name %s:\n%s", want, out)
		}
	}
	v = get()
	if !slices.Equal(v.Regions, []string{"loc-lab", "loc-office"}) || v.ToolCheck != nil || v.OAuth == nil || v.OAuth.ClientID != "c2" ||
		!slices.Equal(v.OAuth.Scopes, []string{"read"}) {
		t.Fatalf("after the edit %+v (oauth %+v)", v, v.OAuth)
	}
	noChange(f, "the edited file")
}

// startAdmin starts a real `mcpmon run` with API keys on and returns a
// harness whose CLI talks to it with a fresh admin key (also returned),
// env being the rest of the CLI's environment. The server stops with the
// test.
func startAdmin(t *testing.T, env map[string]string) (*harness, string) {
	t.Helper()
	dataDir := t.TempDir()
	h := &harness{t: t, hc: apispec.Client(t), env: env}
	key := strings.TrimSpace(h.ok("keys", "create", "--local", "--init", "--name", "admin", "--scope", "admin", "--data-dir", dataDir))
	addr, stop := h.startServer(dataDir)
	t.Cleanup(stop)
	h.setenv("MCPMON_SERVER", "http://"+addr)
	h.setenv("MCPMON_TOKEN", key)
	return h, key
}
