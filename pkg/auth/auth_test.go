package auth_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/auth"
	"github.com/mcpmon/mcpmon/pkg/clock"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/store"
	"github.com/mcpmon/mcpmon/pkg/store/bolt"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// What the process wires into NewKeyring.
var _ auth.Store = (*bolt.Store)(nil)

// memStore is an in-memory Objects store that counts calls and can fail.
type memStore struct {
	mu   sync.Mutex
	docs map[string][]byte
	gets map[string]int // kind → GetObject calls
	puts map[string]int // kind → PutObject calls
	down bool
}

func newMemStore() *memStore {
	return &memStore{docs: map[string][]byte{}, gets: map[string]int{}, puts: map[string]int{}}
}

func (m *memStore) PutObject(_ context.Context, kind, id string, doc []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.down {
		return fmt.Errorf("put: %w", store.ErrUnavailable)
	}
	m.puts[kind]++
	m.docs[kind+"/"+id] = append([]byte(nil), doc...)
	return nil
}

func (m *memStore) GetObject(_ context.Context, kind, id string) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.down {
		return nil, fmt.Errorf("get: %w", store.ErrUnavailable)
	}
	m.gets[kind]++
	d, ok := m.docs[kind+"/"+id]
	if !ok {
		return nil, model.ErrNotFound
	}
	return d, nil
}

func (m *memStore) ListObjects(_ context.Context, kind string) (map[string][]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.down {
		return nil, fmt.Errorf("list: %w", store.ErrUnavailable)
	}
	out := map[string][]byte{}
	for k, d := range m.docs {
		if id, ok := strings.CutPrefix(k, kind+"/"); ok {
			out[id] = d
		}
	}
	return out, nil
}

func (m *memStore) count(c map[string]int, kind string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return c[kind]
}

func mustCreate(t *testing.T, k *auth.Keyring, nk auth.NewKey) (string, auth.Key) {
	t.Helper()
	secret, key, err := k.Create(t.Context(), nk)
	if err != nil {
		t.Fatal(err)
	}
	return secret, key
}

func TestGeneratedKeysAreRecognisableAndDistinct(t *testing.T) {
	a, b := auth.Generate(), auth.Generate()
	if a == b {
		t.Fatal("two generated keys are equal")
	}
	for _, k := range []string{a, b} {
		if !strings.HasPrefix(k, "mcpmon_") || len(k) != len("mcpmon_")+52 {
			t.Fatalf("key %q: want mcpmon_ and 52 base32 characters (256 bits)", k)
		}
		if strings.Trim(k[len("mcpmon_"):], "abcdefghijklmnopqrstuvwxyz234567") != "" {
			t.Fatalf("key %q has characters outside lower-case base32", k)
		}
	}
	if h := auth.Hash(a); len(h) != 64 || h == auth.Hash(b) {
		t.Fatalf("Hash(%q) = %q: want 64 hex characters, distinct per key", a, h)
	}
}

func TestStoreHoldsOnlyTheHash(t *testing.T) {
	st := newMemStore()
	k := auth.NewKeyring(st, auth.Options{Clock: clock.NewFake(t0)})
	secret, key := mustCreate(t, k, auth.NewKey{Name: "ci", Scope: auth.ScopeWrite})
	if key.Tenant != auth.DefaultTenant || key.ID != auth.Hash(secret)[:16] {
		t.Fatalf("key = %+v: want the default tenant and the hash's first 16 hex digits as ID", key)
	}
	for id, doc := range st.docs {
		if strings.Contains(id, secret) || strings.Contains(string(doc), secret) || strings.Contains(string(doc), secret[len(auth.Prefix):]) {
			t.Fatalf("the store holds the key in plaintext at %s: %s", id, doc)
		}
	}
	if _, ok := st.docs[auth.KindKey+"/"+auth.Hash(secret)]; !ok {
		t.Fatalf("no record under the key's hash: %v", st.docs)
	}
}

func TestScopeOrder(t *testing.T) {
	for _, tc := range []struct {
		has, needs auth.Scope
		want       bool
	}{
		{auth.ScopeRead, auth.ScopeRead, true},
		{auth.ScopeRead, auth.ScopeWrite, false},
		{auth.ScopeRead, auth.ScopeAdmin, false},
		{auth.ScopeWrite, auth.ScopeRead, true},
		{auth.ScopeWrite, auth.ScopeWrite, true},
		{auth.ScopeWrite, auth.ScopeAdmin, false},
		{auth.ScopeAdmin, auth.ScopeRead, true},
		{auth.ScopeAdmin, auth.ScopeWrite, true},
		{auth.ScopeAdmin, auth.ScopeAdmin, true},
		{"", auth.ScopeRead, false},
		{"root", auth.ScopeRead, false},
	} {
		if got := tc.has.Allows(tc.needs); got != tc.want {
			t.Errorf("%q.Allows(%q) = %v, want %v", tc.has, tc.needs, got, tc.want)
		}
	}
	if _, err := auth.ParseScope("Admin"); err != nil {
		t.Errorf("ParseScope(Admin): %v", err)
	}
	if _, err := auth.ParseScope("root"); err == nil {
		t.Error("ParseScope(root) succeeded")
	}
}

func TestAuthenticate(t *testing.T) {
	st := newMemStore()
	clk := clock.NewFake(t0)
	k := auth.NewKeyring(st, auth.Options{Clock: clk})
	live, _ := mustCreate(t, k, auth.NewKey{Name: "live", Tenant: "acme", Scope: auth.ScopeRead})
	expiring, _ := mustCreate(t, k, auth.NewKey{Name: "expiring", Scope: auth.ScopeWrite, Expires: t0.Add(time.Hour)})
	revoked, rk := mustCreate(t, k, auth.NewKey{Name: "revoked", Scope: auth.ScopeAdmin})
	if _, err := k.Revoke(t.Context(), "", rk.ID); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Hour)

	for _, tc := range []struct {
		name, key string
		want      error
		lookups   int // store lookups this call may make
	}{
		{"live key", live, nil, 1},
		{"expired key", expiring, auth.ErrExpired, 1},
		{"revoked key", revoked, auth.ErrRevoked, 1},
		{"unknown key", auth.Generate(), auth.ErrInvalidKey, 1},
		{"no prefix", strings.TrimPrefix(live, auth.Prefix), auth.ErrInvalidKey, 0},
		{"truncated", live[:len(live)-1], auth.ErrInvalidKey, 0},
		{"bad character", live[:len(live)-1] + "!", auth.ErrInvalidKey, 0},
		{"empty", "", auth.ErrInvalidKey, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := st.count(st.gets, auth.KindKey)
			p, err := k.Authenticate(t.Context(), tc.key)
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			if got := st.count(st.gets, auth.KindKey) - before; got > tc.lookups {
				t.Fatalf("%d store lookups, want at most %d", got, tc.lookups)
			}
			if tc.want == nil && (p.Tenant != "acme" || p.Scope != auth.ScopeRead || p.Name != "live") {
				t.Fatalf("principal = %+v", p)
			}
		})
	}
}

// TestLookupIsCached: a key is looked up once per TTL, positive or negative,
// and a store outage is an error, not a bad key, and is not remembered.
func TestLookupIsCached(t *testing.T) {
	st := newMemStore()
	clk := clock.NewFake(t0)
	k := auth.NewKeyring(st, auth.Options{Clock: clk, CacheTTL: 5 * time.Second})
	good, _ := mustCreate(t, k, auth.NewKey{Name: "a", Scope: auth.ScopeRead})
	bad := auth.Generate()
	for range 100 {
		if _, err := k.Authenticate(t.Context(), good); err != nil {
			t.Fatal(err)
		}
		if _, err := k.Authenticate(t.Context(), bad); !errors.Is(err, auth.ErrInvalidKey) {
			t.Fatal(err)
		}
	}
	if n := st.count(st.gets, auth.KindKey); n != 2 {
		t.Fatalf("%d lookups for 200 requests with two keys, want 2", n)
	}
	clk.Advance(5 * time.Second)
	st.mu.Lock()
	st.down = true
	st.mu.Unlock()
	if _, err := k.Authenticate(t.Context(), good); !errors.Is(err, store.ErrUnavailable) || errors.Is(err, auth.ErrInvalidKey) {
		t.Fatalf("store down: err = %v, want store.ErrUnavailable", err)
	}
	st.mu.Lock()
	st.down = false
	st.mu.Unlock()
	if _, err := k.Authenticate(t.Context(), good); err != nil {
		t.Fatalf("after the outage: %v (an outage must not be cached)", err)
	}
}

// TestRevocationReachesEveryReplicaWithinTheTTL: two keyrings on one store
// are two API replicas. The one that revokes refuses the key at once; the
// other within CacheTTL.
func TestRevocationReachesEveryReplicaWithinTheTTL(t *testing.T) {
	st := newMemStore()
	clk := clock.NewFake(t0)
	a := auth.NewKeyring(st, auth.Options{Clock: clk, CacheTTL: 5 * time.Second})
	b := auth.NewKeyring(st, auth.Options{Clock: clk, CacheTTL: 5 * time.Second})
	secret, key := mustCreate(t, a, auth.NewKey{Name: "ci", Scope: auth.ScopeWrite})
	for _, r := range []*auth.Keyring{a, b} {
		if _, err := r.Authenticate(t.Context(), secret); err != nil {
			t.Fatal(err)
		}
	}
	clk.Advance(2 * time.Second)
	if _, err := a.Revoke(t.Context(), "", key.Name); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Authenticate(t.Context(), secret); !errors.Is(err, auth.ErrRevoked) {
		t.Fatalf("revoking replica: err = %v, want ErrRevoked at once", err)
	}
	clk.Advance(3 * time.Second) // b's entry was cached at 0 s and expires at 5 s
	if _, err := b.Authenticate(t.Context(), secret); !errors.Is(err, auth.ErrRevoked) {
		t.Fatalf("other replica after the TTL: err = %v, want ErrRevoked", err)
	}
}

// TestLastUsedIsFlushedNotWrittenPerRequest: uses are counted in memory and
// written once per flush, and a flush never undoes a revocation made
// elsewhere (it writes a separate document).
func TestLastUsedIsFlushedNotWrittenPerRequest(t *testing.T) {
	st := newMemStore()
	clk := clock.NewFake(t0)
	a := auth.NewKeyring(st, auth.Options{Clock: clk})
	b := auth.NewKeyring(st, auth.Options{Clock: clk})
	secret, key := mustCreate(t, a, auth.NewKey{Name: "ci", Scope: auth.ScopeWrite})
	writes := st.count(st.puts, auth.KindKey)
	for range 1000 {
		clk.Advance(time.Millisecond)
		if _, err := a.Authenticate(t.Context(), secret); err != nil {
			t.Fatal(err)
		}
	}
	if n := st.count(st.puts, auth.KindKey) - writes + st.count(st.puts, auth.KindKeyUse); n != 0 {
		t.Fatalf("%d store writes for 1000 requests, want none before a flush", n)
	}
	lastUse := clk.Now()
	if _, err := b.Revoke(t.Context(), "", key.ID); err != nil {
		t.Fatal(err)
	}
	if err := a.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := a.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	if n := st.count(st.puts, auth.KindKeyUse); n != 1 {
		t.Fatalf("%d last-used writes after two flushes, want 1", n)
	}
	keys, err := b.List(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 1 || !keys[0].LastUsed.Equal(lastUse) || keys[0].Status(clk.Now()) != "revoked" {
		t.Fatalf("keys = %+v: want one revoked key last used at %s", keys, lastUse)
	}
}

func TestCreateListRevokeByTenant(t *testing.T) {
	st := newMemStore()
	clk := clock.NewFake(t0)
	k := auth.NewKeyring(st, auth.Options{Clock: clk})
	_, a1 := mustCreate(t, k, auth.NewKey{Name: "deploy", Tenant: "a", Scope: auth.ScopeWrite})
	mustCreate(t, k, auth.NewKey{Name: "deploy", Tenant: "b", Scope: auth.ScopeWrite}) // names are per tenant
	if _, _, err := k.Create(t.Context(), auth.NewKey{Name: "deploy", Tenant: "a", Scope: auth.ScopeRead}); !errors.Is(err, auth.ErrNameTaken) {
		t.Fatalf("duplicate live name: err = %v, want ErrNameTaken", err)
	}
	for _, nk := range []auth.NewKey{
		{Name: "", Scope: auth.ScopeRead},
		{Name: "x", Scope: "root"},
		{Name: "x", Scope: auth.ScopeRead, Expires: t0.Add(-time.Second)},
		{Name: strings.Repeat("x", 65), Scope: auth.ScopeRead},
	} {
		if _, _, err := k.Create(t.Context(), nk); err == nil {
			t.Errorf("Create(%+v) succeeded", nk)
		}
	}
	if keys, _ := k.List(t.Context(), "a"); len(keys) != 1 || keys[0].ID != a1.ID {
		t.Fatalf("tenant a lists %+v, want only %s", keys, a1.ID)
	}
	if keys, _ := k.List(t.Context(), ""); len(keys) != 2 {
		t.Fatalf("all tenants list %d keys, want 2", len(keys))
	}
	if _, err := k.Revoke(t.Context(), "b", a1.ID); !errors.Is(err, auth.ErrKeyNotFound) {
		t.Fatalf("tenant b revoking tenant a's key: err = %v, want ErrKeyNotFound", err)
	}
	if got, err := k.Revoke(t.Context(), "a", "deploy"); err != nil || got.ID != a1.ID {
		t.Fatalf("revoke by name = %+v, %v", got, err)
	}
	// The name is free again, and revoking by name finds the live key only.
	_, a2 := mustCreate(t, k, auth.NewKey{Name: "deploy", Tenant: "a", Scope: auth.ScopeRead})
	if got, err := k.Revoke(t.Context(), "a", "deploy"); err != nil || got.ID != a2.ID {
		t.Fatalf("revoke by name after reuse = %+v, %v; want %s", got, err, a2.ID)
	}
	if _, err := k.Revoke(t.Context(), "a", "deploy"); !errors.Is(err, auth.ErrKeyNotFound) {
		t.Fatalf("revoking a name with no live key: err = %v", err)
	}
	if got, err := k.Revoke(t.Context(), "a", a1.ID); err != nil || !got.Revoked.Equal(t0) {
		t.Fatalf("revoking again by ID = %+v, %v: want a no-op keeping the first revocation time", got, err)
	}
}

func TestPrincipalTravelsInTheContext(t *testing.T) {
	ctx := context.Background()
	if _, ok := auth.FromContext(ctx); ok || auth.TenantFrom(ctx) != auth.DefaultTenant {
		t.Fatal("a bare context has a principal, or a tenant other than the default")
	}
	ctx = auth.NewContext(ctx, auth.Principal{KeyID: "k", Tenant: "acme", Scope: auth.ScopeRead})
	if p, ok := auth.FromContext(ctx); !ok || p.KeyID != "k" || auth.TenantFrom(ctx) != "acme" {
		t.Fatalf("principal = %+v, %v", p, ok)
	}
}
