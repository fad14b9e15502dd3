package config

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSecretFlagsFromFiles: the *-file flags fill their values, the plain
// flags on the command line warn (the environment does not), and a bad
// file is refused without quoting it.
func TestSecretFlagsFromFiles(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	url, secret, token := write("url", "https://hooks.example.com/T/B/abc\n"), write("secret", "  s3cret\n"), write("token", "scrape-token")
	empty, twoLines := write("empty", "\n"), write("two", "top-secret-1\ntop-secret-2\n")
	big := write("big", strings.Repeat("x", MaxSecretFileBytes+1))
	for _, tc := range []struct {
		name     string
		args     []string
		env      map[string]string
		check    func(Options) bool
		warnings int
		wantErr  string
	}{
		{name: "files", args: []string{"--webhook-url-file", url, "--webhook-secret-file", secret, "--metrics-token-file", token},
			check: func(o Options) bool {
				return o.WebhookURL == "https://hooks.example.com/T/B/abc" && o.WebhookSecret == "s3cret" && o.MetricsToken == "scrape-token"
			}},
		{name: "plain flags warn", args: []string{"--webhook-url", "https://hooks.example.com/x", "--webhook-secret", "s"}, warnings: 2,
			check: func(o Options) bool { return o.WebhookURL == "https://hooks.example.com/x" }},
		{name: "environment does not warn", env: map[string]string{"MCPMON_WEBHOOK_URL": "https://hooks.example.com/x", "MCPMON_WEBHOOK_SECRET": "s"},
			check: func(o Options) bool { return o.WebhookSecret == "s" }},
		{name: "file and flag", args: []string{"--webhook-secret", "s", "--webhook-secret-file", secret}, wantErr: "--webhook-secret-file and --webhook-secret are both set"},
		{name: "empty", args: []string{"--metrics-token-file", empty}, wantErr: "is empty"},
		{name: "two lines", args: []string{"--webhook-secret-file", twoLines}, wantErr: "more than one line"},
		{name: "too big", args: []string{"--metrics-token-file", big}, wantErr: "larger than"},
		{name: "missing", args: []string{"--webhook-url-file", filepath.Join(dir, "nope")}, wantErr: "--webhook-url-file"},
		{name: "bootstrap file without a key", args: []string{"--bootstrap-key=false", "--bootstrap-key-file", filepath.Join(dir, "k")}, wantErr: "--bootstrap-key-file with --bootstrap-key=false"},
		{name: "metrics listen bad", args: []string{"--metrics-listen", "9090"}, wantErr: "--metrics-listen"},
		{name: "metrics listen same", args: []string{"--metrics-listen", "127.0.0.1:8080"}, wantErr: "must differ from --listen"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, err := Parse("mcpmon", tc.args, envOf(tc.env), io.Discard)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				if strings.Contains(err.Error(), "top-secret") || strings.Contains(err.Error(), "xxxx") {
					t.Fatalf("err quotes the file: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !tc.check(o) {
				t.Errorf("options: %+v", o)
			}
			if len(o.Warnings) != tc.warnings {
				t.Errorf("warnings %q, want %d", o.Warnings, tc.warnings)
			}
			for _, w := range o.Warnings {
				if strings.Contains(w, "hooks.example.com") {
					t.Errorf("warning quotes the value: %s", w)
				}
			}
		})
	}
}

// TestParsedOptionsNeverPrintTheirSecrets: an Options printed by accident
// (%v, %+v, %#v, JSON, slog) shows none of the webhook URL's path, the
// webhook secret, the scrape token or the sealing keys; the explicit
// Reveal is the only way to them.
func TestParsedOptionsNeverPrintTheirSecrets(t *testing.T) {
	dir := t.TempDir()
	token := filepath.Join(dir, "token")
	if err := os.WriteFile(token, []byte("scrape-token-xyz"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{
		"MCPMON_WEBHOOK_URL":    "https://hooks.example.com/services/T0/B0/hook-path-xyz",
		"MCPMON_WEBHOOK_SECRET": "hmac-secret-xyz",
		EnvSecretsKey:           "c2VhbGluZy1rZXkteHl6LXNlYWxpbmcta2V5LXh5eg==",
	}
	o, err := Parse("mcpmon", []string{"--metrics-token-file", token}, func(k string) string { return env[k] }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if o.WebhookSecret.Reveal() != "hmac-secret-xyz" || o.MetricsToken.Reveal() != "scrape-token-xyz" || o.WebhookURL.Reveal() != env["MCPMON_WEBHOOK_URL"] {
		t.Fatalf("Reveal lost a value: %q %q %q", o.WebhookSecret.Reveal(), o.MetricsToken.Reveal(), o.WebhookURL.Reveal())
	}
	js, err := json.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	var logged strings.Builder
	slog.New(slog.NewTextHandler(&logged, nil)).Info("options", "opts", o, "secret", o.WebhookSecret)
	for _, out := range []string{fmt.Sprintf("%v", o), fmt.Sprintf("%+v", o), fmt.Sprintf("%#v", o), string(js), logged.String()} {
		for _, secret := range []string{"hook-path-xyz", "hmac-secret-xyz", "scrape-token-xyz", "c2VhbGluZy1rZXkteHl6"} {
			if strings.Contains(out, secret) {
				t.Errorf("printed options show %q:\n%s", secret, out)
			}
		}
	}
}
