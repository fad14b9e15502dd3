package auth_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/mcpmon/mcpmon/pkg/auth"
	"github.com/mcpmon/mcpmon/pkg/clock"
	"github.com/mcpmon/mcpmon/pkg/store"
)

// FuzzAuthenticate: whatever a client presents as a key, Authenticate
// answers without panicking, refuses it with ErrInvalidKey unless it is
// the live key, and reads the store only for well-formed keys (so garbage
// cannot cost a store read). ClientAddress never panics and never returns
// more than it was given plus a prefix length.
func FuzzAuthenticate(f *testing.F) {
	for _, seed := range []string{
		"", "mcpmon_", "Bearer mcpmon_", strings.Repeat("a", 59),
		"mcpmon_" + strings.Repeat("a", 52), "mcpmon_" + strings.Repeat("A", 52), "mcpmon_" + strings.Repeat("1", 52),
		"mcpmon_" + strings.Repeat("a", 51) + "\x00", "mcpmon_" + strings.Repeat("é", 26),
		"[::ffff:127.0.0.1]:1", "[fe80::1%25eth0]:80", "127.0.0.1:99999",
	} {
		f.Add(seed)
	}
	st := newMemStore()
	kr := auth.NewKeyring(st, auth.Options{Clock: clock.NewFake(t0), MaxUnknownKeys: 64})
	live, _, err := kr.Create(f.Context(), auth.NewKey{Name: "live", Scope: auth.ScopeRead})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, key string) {
		before := st.count(st.gets, store.KindAPIKey)
		_, err := kr.Authenticate(t.Context(), key)
		switch {
		case key == live && err != nil:
			t.Fatalf("the live key was refused: %v", err)
		case key != live && !errors.Is(err, auth.ErrInvalidKey):
			t.Fatalf("Authenticate(%q) = %v, want ErrInvalidKey", key, err)
		}
		wellFormed := len(key) == len(live) && strings.HasPrefix(key, auth.Prefix) &&
			strings.Trim(key[len(auth.Prefix):], "abcdefghijklmnopqrstuvwxyz234567") == ""
		if reads := st.count(st.gets, store.KindAPIKey) - before; !wellFormed && reads != 0 {
			t.Fatalf("a malformed key %q cost %d store reads", key, reads)
		}
		if got := auth.ClientAddress(key); len(got) > len(key)+4 {
			t.Fatalf("ClientAddress(%q) = %q: longer than its input", key, got)
		}
	})
}
