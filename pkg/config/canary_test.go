package config

import (
	"io"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestCanaryFlags(t *testing.T) {
	o, err := Parse("mcpmon", nil, envOf(nil), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if len(o.CanaryURLs) != 0 || o.CanaryInterval != 30*time.Second || o.CanaryTimeout != 5*time.Second {
		t.Fatalf("canary defaults: %v %s %s", o.CanaryURLs, o.CanaryInterval, o.CanaryTimeout)
	}
	env := envOf(map[string]string{"MCPMON_CANARY_URL": "https://env-a.example/, https://env-b.example/"})
	o, err = Parse("mcpmon", nil, env, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"https://env-a.example/", "https://env-b.example/"}; !slices.Equal(o.CanaryURLs, want) {
		t.Fatalf("canaries from the environment = %v, want %v", o.CanaryURLs, want)
	}
	o, err = Parse("mcpmon", []string{"--canary-url", "https://a.example/", "--canary-url", "https://b.example/,https://c.example/",
		"--canary-interval", "10s", "--canary-timeout", "2s"}, env, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"https://a.example/", "https://b.example/", "https://c.example/"}; !slices.Equal(o.CanaryURLs, want) {
		t.Fatalf("repeated --canary-url = %v, want %v (the command line replaces the environment)", o.CanaryURLs, want)
	}
	if o.CanaryInterval != 10*time.Second || o.CanaryTimeout != 2*time.Second {
		t.Fatalf("interval %s timeout %s", o.CanaryInterval, o.CanaryTimeout)
	}
}

func TestCanaryFlagErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--canary-url", "example.com"}, "--canary-url"},
		{[]string{"--canary-url", "ftp://example.com/"}, "--canary-url"},
		{[]string{"--canary-interval", "100ms"}, "--canary-interval"},
		{[]string{"--canary-timeout", "0s"}, "--canary-timeout"},
		{[]string{"--canary-interval", "5s", "--canary-timeout", "10s"}, "--canary-timeout"},
	} {
		_, err := Parse("mcpmon", tc.args, envOf(nil), io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%v) = %v, want an error naming %s", tc.args, err, tc.want)
		}
	}
	_, err := Parse("mcpmon", []string{"--canary-url", "ftp://user:hunter2@example.com/"}, envOf(nil), io.Discard)
	if err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("error %v shows the canary URL's password", err)
	}
}
