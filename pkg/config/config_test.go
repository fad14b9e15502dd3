package config

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"
)

func envOf(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestParseDefaultsAndEnv(t *testing.T) {
	o, err := Parse("mcpmon", nil, envOf(nil), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if o.Listen != "127.0.0.1:8080" || o.Queue != QueueEmbedded || o.Window != time.Minute || o.AllowPrivateTargets {
		t.Fatalf("defaults: %+v", o)
	}
	o, err = Parse("mcpmon", []string{"--window", "2s"}, envOf(map[string]string{
		"MCPMON_WINDOW": "30s", "MCPMON_STORE": "redis", "MCPMON_REDIS_URL": "redis://127.0.0.1:1/0",
	}), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if o.Window != 2*time.Second {
		t.Errorf("flag should beat env: window = %s", o.Window)
	}
	if o.Store != StoreRedis || o.RedisURL == "" {
		t.Errorf("env not applied: %+v", o)
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		env  map[string]string
		want string
	}{
		{args: []string{"--queue", "kafka"}, want: "--queue"},
		{args: []string{"--store", "redis"}, want: "--redis-url"},
		{args: []string{"--window", "7s"}, want: "divide a minute"},
		{args: []string{"--window", "90s"}, want: "divide a minute"},
		{args: []string{"--listen", "nope"}, want: "--listen"},
		{args: []string{"--ledger-ttl", "1m"}, want: "--ledger-ttl"},
		{args: []string{"--max-endpoints-per-tenant", "-1"}, want: "--max-endpoints-per-tenant"},
		{args: []string{"--rate-limit", "-2"}, want: "--rate-limit"},
		{args: []string{"--max-in-flight-per-tenant", "-1"}, want: "--max-in-flight-per-tenant"},
		{args: []string{"--allow-target-networks", "10.0.0.0/8,office"}, want: `--allow-target-networks: "office" is not a network`},
		{args: []string{"--audit-ttl", "59m"}, want: "--audit-ttl"},
		{args: []string{"--audit-ttl", "17521h"}, want: "--audit-ttl"},
		{env: map[string]string{"MCPMON_WINDOW": "soon"}, want: `MCPMON_WINDOW="soon": parse error; want a Go duration such as 30s`},
		{env: map[string]string{"MCPMON_ALLOW_PRIVATE_TARGETS": "yes"}, want: `MCPMON_ALLOW_PRIVATE_TARGETS="yes": parse error; want true or false`},
		{env: map[string]string{"MCPMON_PROBE_CONCURRENCY": "many"}, want: `MCPMON_PROBE_CONCURRENCY="many": parse error; want a whole number`},
		{args: []string{"--webhook-url", "ftp://secret-token@example"}, want: "--webhook-url"},
		{args: []string{"extra"}, want: "unexpected argument"},
		{args: []string{"--tls-cert", "cert.pem"}, want: "--tls-key"},
		{args: []string{"--tls-key", "key.pem"}, want: "--tls-cert"},
		{args: []string{"--api-hosts", "https://mcpmon.example.com"}, want: "--api-hosts"},
		{args: []string{"--api-hosts", "mcpmon.example.com:0"}, want: "--api-hosts"},
		{args: []string{"--api-hosts", "::1"}, want: "--api-hosts"},
		{args: []string{"--http-read-timeout", "0s"}, want: "--http-read-timeout"},
		{args: []string{"--http-idle-timeout", "2h"}, want: "--http-idle-timeout"},
		{args: []string{"--agent-offline-after", "30s"}, want: "--agent-offline-after"}, // below the longest poll plus a record write
		{args: []string{"--agent-offline-after", "2h"}, want: "--agent-offline-after"},
		{args: []string{"--status-page-host-recheck-interval", "10m"}, want: "--status-page-host-recheck-interval"},
		{args: []string{"--status-page-host-recheck-interval", "-1h"}, want: "--status-page-host-recheck-interval"},
		{args: []string{"--status-page-host-recheck-grace", "0s"}, want: "--status-page-host-recheck-grace"},
		{args: []string{"--status-page-host-resolver", "1.1.1.1"}, want: "--status-page-host-resolver"},
	} {
		_, err := Parse("mcpmon", tc.args, envOf(tc.env), io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%v, %v) = %v, want error containing %q", tc.args, tc.env, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "secret-token") {
			t.Errorf("error leaks the webhook URL: %v", err)
		}
	}
}

func TestParseErrorIsOneLineAndHelpPrintsUsage(t *testing.T) {
	var out strings.Builder
	_, err := Parse("mcpmon run", []string{"--bogus"}, envOf(nil), &out)
	if err == nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "-bogus") {
		t.Fatalf("err = %q, want one line naming the flag", err)
	}
	if out.Len() != 0 {
		t.Fatalf("a bad flag printed usage:\n%s", out.String())
	}
	_, err = Parse("mcpmon run", []string{"--help"}, envOf(nil), &out)
	if !errors.Is(err, flag.ErrHelp) || !strings.Contains(out.String(), "-window") {
		t.Fatalf("--help: err = %v, output:\n%s", err, out.String())
	}
}

// TestDefaultReplicaIDSurvivesRestartOnlyWithEmbeddedStore: an embedded-store
// process keeps one identity across restarts (it is the only process that
// can open its data dir), so its alert claims are its own again at once;
// replicas sharing Redis each get a distinct host-pid identity.
func TestDefaultReplicaIDSurvivesRestartOnlyWithEmbeddedStore(t *testing.T) {
	o, err := Parse("mcpmon", nil, envOf(nil), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if o.ReplicaID != EmbeddedReplicaID {
		t.Errorf("embedded store: replica ID %q, want %q", o.ReplicaID, EmbeddedReplicaID)
	}
	o, err = Parse("mcpmon", []string{"--store", "redis", "--redis-url", "redis://127.0.0.1:6379/0"}, envOf(nil), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if o.ReplicaID == EmbeddedReplicaID || !strings.HasSuffix(o.ReplicaID, fmt.Sprintf("-%d", os.Getpid())) {
		t.Errorf("redis store: replica ID %q, want host-pid", o.ReplicaID)
	}
	o, err = Parse("mcpmon", []string{"--replica-id", "mine"}, envOf(nil), io.Discard)
	if err != nil || o.ReplicaID != "mine" {
		t.Errorf("explicit replica ID: %q, %v", o.ReplicaID, err)
	}
}

// TestServerHardeningOptions: the HTTP server limits have defaults, each can
// be set by flag or environment, and --api-hosts is a list the command line
// replaces.
func TestServerHardeningOptions(t *testing.T) {
	o, err := Parse("mcpmon", nil, envOf(nil), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if o.HTTPReadTimeout != 30*time.Second || o.HTTPWriteTimeout != time.Minute || o.HTTPIdleTimeout != 2*time.Minute || o.APIHosts != nil || o.TLSCert != "" {
		t.Fatalf("defaults: read %s write %s idle %s hosts %v tls %q", o.HTTPReadTimeout, o.HTTPWriteTimeout, o.HTTPIdleTimeout, o.APIHosts, o.TLSCert)
	}
	o, err = Parse("mcpmon", []string{"--api-hosts", "mcpmon.example.com, [::1]:8080", "--tls-cert", "c.pem", "--tls-key", "k.pem"},
		envOf(map[string]string{"MCPMON_API_HOSTS": "env.example.com", "MCPMON_HTTP_IDLE_TIMEOUT": "30s"}), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(o.APIHosts) != "[mcpmon.example.com [::1]:8080]" || o.HTTPIdleTimeout != 30*time.Second || o.TLSKey != "k.pem" {
		t.Fatalf("hosts %v idle %s key %q", o.APIHosts, o.HTTPIdleTimeout, o.TLSKey)
	}
}

// TestStatusPageHostVerificationIsOnByDefault: a custom host needs proof
// unless the operator turns the check off, by flag or environment.
func TestStatusPageHostVerificationIsOnByDefault(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		want bool
	}{
		{"default", nil, nil, true},
		{"flag", []string{"--status-page-host-verification=false"}, nil, false},
		{"env", nil, map[string]string{"MCPMON_STATUS_PAGE_HOST_VERIFICATION": "false"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, err := Parse("mcpmon", tc.args, envOf(tc.env), io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			if o.StatusPageHostVerification != tc.want {
				t.Errorf("StatusPageHostVerification = %v, want %v", o.StatusPageHostVerification, tc.want)
			}
		})
	}
}

// TestPublicIndexIsAnOperatorOption: the deployment-wide /status list is
// off unless the operator turns it on, by flag or environment.
func TestPublicIndexIsAnOperatorOption(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		want bool
	}{
		{"default", nil, nil, false},
		{"flag", []string{"--public-index"}, nil, true},
		{"env", nil, map[string]string{"MCPMON_PUBLIC_INDEX": "true"}, true},
		{"flag overrides env", []string{"--public-index=false"}, map[string]string{"MCPMON_PUBLIC_INDEX": "true"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, err := Parse("mcpmon", tc.args, envOf(tc.env), io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			if o.PublicIndex != tc.want {
				t.Errorf("PublicIndex = %v, want %v", o.PublicIndex, tc.want)
			}
		})
	}
}
