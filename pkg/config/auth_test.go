package config

import (
	"io"
	"strings"
	"testing"
)

// TestAuthNoneOnlyOnLoopback: an open API is a local convenience, never a
// network service.
func TestAuthNoneOnlyOnLoopback(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		wantErr string
	}{
		{nil, ""}, // keys by default
		{[]string{"--auth", "none"}, ""},
		{[]string{"--auth", "none", "--listen", "[::1]:8080"}, ""},
		{[]string{"--auth", "none", "--listen", "localhost:0"}, ""},
		{[]string{"--auth", "none", "--listen", "0.0.0.0:8080"}, "--auth none: only with a loopback --listen"},
		{[]string{"--auth", "none", "--listen", ":8080"}, "--auth none: only with a loopback --listen"},
		{[]string{"--auth", "none", "--listen", "10.0.0.5:8080"}, "--auth none: only with a loopback --listen"},
		{[]string{"--auth", "keys", "--listen", "0.0.0.0:8080"}, ""},
		{[]string{"--auth", "basic"}, `--auth "basic": want keys or none`},
	} {
		o, err := Parse("mcpmon", tc.args, envOf(nil), io.Discard)
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("%v: %v", tc.args, err)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("%v: err = %v, want %q", tc.args, err, tc.wantErr)
		case tc.args == nil && o.Auth != AuthKeys:
			t.Errorf("default --auth = %q, want keys", o.Auth)
		}
	}
}
