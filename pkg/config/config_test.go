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
		{env: map[string]string{"MCPMON_WINDOW": "soon"}, want: "MCPMON_WINDOW"},
		{args: []string{"--webhook-url", "ftp://secret-token@example"}, want: "--webhook-url"},
		{args: []string{"extra"}, want: "unexpected argument"},
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
