package auth_test

import (
	"errors"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/auth"
	"github.com/mcpmon/mcpmon/pkg/clock"
	"github.com/mcpmon/mcpmon/pkg/store"
)

// TestFailureBudgetPerAddress: an address may fail Burst times at once,
// then is blocked until the bucket refills; other addresses are not.
func TestFailureBudgetPerAddress(t *testing.T) {
	l := auth.NewFailureLimiter(auth.FailureLimits{Rate: 1, Burst: 3})
	now := t0
	for i := range 3 {
		if _, blocked := l.Blocked("192.0.2.1", now); blocked {
			t.Fatalf("blocked after %d failures, want 3 allowed", i)
		}
		l.Failed("192.0.2.1", now)
	}
	wait, blocked := l.Blocked("192.0.2.1", now)
	if !blocked || wait <= 0 || wait > time.Second {
		t.Fatalf("after 3 failures: blocked %v, wait %s; want blocked about 1 s", blocked, wait)
	}
	if _, blocked := l.Blocked("192.0.2.2", now); blocked {
		t.Fatal("another address is blocked too")
	}
	if _, blocked := l.Blocked("192.0.2.1", now.Add(time.Second)); blocked {
		t.Fatal("still blocked after the refill")
	}
}

// TestFailureLimiterForgetsLeastRecentlySeen: the map is bounded; the
// address seen least recently is forgotten, the busy one is kept.
func TestFailureLimiterForgetsLeastRecentlySeen(t *testing.T) {
	l := auth.NewFailureLimiter(auth.FailureLimits{Rate: 0.001, Burst: 1, MaxClients: 2})
	l.Failed("a", t0)
	l.Failed("b", t0)
	l.Blocked("a", t0) // a is now the most recently seen
	l.Failed("c", t0)  // evicts b
	for addr, want := range map[string]bool{"a": true, "b": false, "c": true} {
		if _, blocked := l.Blocked(addr, t0); blocked != want {
			t.Errorf("%s blocked = %v, want %v", addr, blocked, want)
		}
	}
}

func TestClientAddress(t *testing.T) {
	for _, tc := range []struct{ remote, want string }{
		{"192.0.2.7:51234", "192.0.2.7"},
		{"[::ffff:192.0.2.7]:1", "192.0.2.7"},
		{"[2001:db8:1:2:3:4:5:6]:443", "2001:db8:1:2::/64"},
		{"[2001:db8:1:2:ffff::1]:443", "2001:db8:1:2::/64"},
		{"[fe80::1%eth0]:80", "fe80::/64"},
		{"@", "@"}, // a unix socket's peer: kept as given
	} {
		if got := auth.ClientAddress(tc.remote); got != tc.want {
			t.Errorf("ClientAddress(%q) = %q, want %q", tc.remote, got, tc.want)
		}
	}
}

// TestRandomKeysNeverEvictLiveKeys: a spray of well-formed random keys
// fills only the unknown-key cache; the live key stays cached (no store
// read per request), and a repeated random key within the TTL costs no
// store read either.
func TestRandomKeysNeverEvictLiveKeys(t *testing.T) {
	st := newMemStore()
	clk := clock.NewFake(t0)
	kr := auth.NewKeyring(st, auth.Options{Clock: clk, MaxCacheEntries: 4, MaxUnknownKeys: 8})
	secret, _ := mustCreate(t, kr, auth.NewKey{Name: "ci", Scope: auth.ScopeRead})
	if _, err := kr.Authenticate(t.Context(), secret); err != nil {
		t.Fatal(err)
	}
	base := st.count(st.gets, store.KindAPIKey)
	for range 100 {
		if _, err := kr.Authenticate(t.Context(), auth.Generate()); !errors.Is(err, auth.ErrInvalidKey) {
			t.Fatalf("random key: %v", err)
		}
	}
	if got := st.count(st.gets, store.KindAPIKey) - base; got != 100 {
		t.Fatalf("%d store reads for 100 random keys, want 100", got)
	}
	if _, err := kr.Authenticate(t.Context(), secret); err != nil {
		t.Fatal(err)
	}
	if got := st.count(st.gets, store.KindAPIKey) - base; got != 100 {
		t.Errorf("the live key was read from the store again after the spray (%d reads): the spray evicted it", got-100)
	}
	again := auth.Generate()
	_, _ = kr.Authenticate(t.Context(), again)
	before := st.count(st.gets, store.KindAPIKey)
	for range 10 {
		_, _ = kr.Authenticate(t.Context(), again)
	}
	if got := st.count(st.gets, store.KindAPIKey) - before; got != 0 {
		t.Errorf("a repeated unknown key cost %d store reads within the TTL, want 0", got)
	}
}
