package declarative

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	apiv1 "github.com/mcpmon/mcpmon/pkg/api/v1"
)

// TestEnvAllowed: a confined ${env:} reads the allowed names and prefixes,
// never a variable that configures mcpmon itself, even when allowed.
func TestEnvAllowed(t *testing.T) {
	for _, c := range []struct {
		name  string
		allow []string
		ok    bool
		want  string
	}{
		{"MCPMON_APPLY_SEARCH_TOKEN", nil, true, ""},
		{"SEARCH_TOKEN", nil, false, "--allow-env SEARCH_TOKEN"},
		{"SEARCH_TOKEN", []string{"SEARCH_TOKEN"}, true, ""},
		{"SEARCH_TOKENX", []string{"SEARCH_TOKEN"}, false, "--allow-env"},
		{"CI_SEARCH", []string{"CI_"}, true, ""},
		{"CIX", []string{"CI_"}, false, "--allow-env"},
		{"MCPMON_TOKEN", nil, false, "configure mcpmon itself"},
		{"MCPMON_TOKEN", []string{"MCPMON_TOKEN"}, false, "configure mcpmon itself"},
		{"MCPMON_TOKEN", []string{"MCPMON_"}, false, "configure mcpmon itself"},
		{"MCPMON_SERVER", []string{"MCPMON_"}, false, "configure mcpmon itself"},
		{"MCPMON_SECRETS_KEY", []string{"MCPMON_SECRETS_KEY"}, false, "configure mcpmon itself"},
		{"MCPMON_APPLY_X", []string{"OTHER"}, false, "--allow-env"},
	} {
		err := envAllowed(c.name, c.allow)
		if (err == nil) != c.ok || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("envAllowed(%q, %q) = %v, want ok=%v naming %q", c.name, c.allow, err, c.ok, c.want)
		}
	}
}

// TestConfineRef: a confined ${file:} reads inside the declaring file's
// directory only, after cleaning the path and resolving symbolic links.
func TestConfineRef(t *testing.T) {
	root := t.TempDir()
	cfg := filepath.Join(root, "cfg")
	for _, d := range []string{cfg, filepath.Join(cfg, "sub")} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{filepath.Join(cfg, "key.txt"), filepath.Join(cfg, "sub", "k"), filepath.Join(root, "outside.txt")} {
		if err := os.WriteFile(f, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Symlink(filepath.Join(root, "outside.txt"), filepath.Join(cfg, "escape")))
	must(os.Symlink("key.txt", filepath.Join(cfg, "inner")))
	must(os.Symlink(root, filepath.Join(cfg, "up")))
	for _, c := range []struct {
		arg     string
		outside bool
	}{
		{"key.txt", false},
		{"./sub/k", false},
		{"sub/../key.txt", false},
		{"inner", false},
		{filepath.Join(cfg, "key.txt"), false},
		{"../outside.txt", true},
		{"sub/../../outside.txt", true},
		{filepath.Join(root, "outside.txt"), true},
		{"/etc/passwd", true},
		{"escape", true},
		{"up/outside.txt", true},
	} {
		got, err := ConfineRef(cfg, c.arg, nil)
		switch {
		case c.outside && !errors.Is(err, ErrRefOutside):
			t.Errorf("ConfineRef(%q) = %q, %v; want ErrRefOutside", c.arg, got, err)
		case !c.outside && err != nil:
			t.Errorf("ConfineRef(%q): %v", c.arg, err)
		case err != nil && !strings.Contains(err.Error(), "${file:"+c.arg+"}"):
			t.Errorf("ConfineRef(%q) error %q does not name the reference", c.arg, err)
		}
	}
}

// TestResolveConfinesReferences: through Resolve, an untrusted file cannot
// read the CLI's key or a file outside its directory; a trusted resolver
// (the operator's command line) can.
func TestResolveConfinesReferences(t *testing.T) {
	env := func(k string) (string, bool) { return "mcpmon_admin_key", true }
	read := func(string) ([]byte, error) { return []byte("root:x:0:0"), nil }
	for _, c := range []struct {
		name, header, want string
		trusted            bool
	}{
		{"cli key", "Bearer ${env:MCPMON_TOKEN}", "configure mcpmon itself", false},
		{"any variable", "${env:AWS_SECRET_ACCESS_KEY}", "--allow-env AWS_SECRET_ACCESS_KEY", false},
		{"absolute file", "${file:/etc/passwd}", "outside the directory", false},
		{"dot-dot file", "${file:../../home/admin/.mcpmon}", "outside the directory", false},
		{"trusted command line", "${env:ANY}", "", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := Resolver{Env: env, ReadFile: read, Trusted: c.trusted}
			got, err := r.Resolve([]Desired{{Source: filepath.Join(t.TempDir(), "e.yaml"), Input: inputWithHeader(c.header)}})
			if c.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil {
				t.Fatalf("resolved %q to %q, want a refusal", c.header, got[0].Headers["Authorization"])
			}
			if !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "mcpmon_admin_key") || strings.Contains(err.Error(), "root:x") {
				t.Fatalf("err = %v, want it to name %q and quote nothing read", err, c.want)
			}
		})
	}
}

func inputWithHeader(v string) apiv1.EndpointInput {
	return input("e", func(in *apiv1.EndpointInput) { in.Headers = map[string]string{"Authorization": v} })
}
