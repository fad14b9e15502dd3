package auth_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/auth"
	"github.com/mcpmon/mcpmon/pkg/store"
	"github.com/mcpmon/mcpmon/pkg/store/bolt"
	"github.com/mcpmon/mcpmon/pkg/store/redis"
	"github.com/mcpmon/mcpmon/pkg/store/redis/redistest"
)

// What the process wires into Bootstrap.
var (
	_ auth.Claims = (*bolt.Store)(nil)
	_ auth.Claims = (*redis.Store)(nil)
)

// bootstrapStore is a store both the keyring and the bootstrap claim use.
type bootstrapStore interface {
	auth.Store
	auth.Claims
}

func bootstrapStores(t *testing.T) map[string]func(t *testing.T) bootstrapStore {
	return map[string]func(t *testing.T) bootstrapStore{
		"bolt": func(t *testing.T) bootstrapStore {
			st, err := bolt.Open(filepath.Join(t.TempDir(), "store.db"), bolt.Options{SweepInterval: -1})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			return st
		},
		"redis": func(t *testing.T) bootstrapStore { return redistest.Open(t, redis.Options{}) },
	}
}

// TestBootstrapCreatesOneKeyAmongReplicas: API replicas starting together on
// one store create exactly one admin key, and a later start none.
func TestBootstrapCreatesOneKeyAmongReplicas(t *testing.T) {
	for name, open := range bootstrapStores(t) {
		t.Run(name, func(t *testing.T) {
			st := open(t)
			var mu sync.Mutex
			var printed []string
			var wg sync.WaitGroup
			for i := range 8 {
				wg.Go(func() {
					kr := auth.NewKeyring(st, auth.Options{})
					key, err := kr.Bootstrap(t.Context(), st, fmt.Sprintf("replica-%d", i))
					if err != nil {
						t.Error(err)
					}
					if key != "" {
						mu.Lock()
						printed = append(printed, key)
						mu.Unlock()
					}
				})
			}
			wg.Wait()
			keys, err := auth.NewKeyring(st, auth.Options{}).List(t.Context(), "")
			if err != nil {
				t.Fatal(err)
			}
			if len(printed) != 1 || len(keys) != 1 || keys[0].Scope != auth.ScopeAdmin || keys[0].Tenant != auth.DefaultTenant {
				t.Fatalf("%d replicas printed a key, the store has %+v: want one admin key of the default tenant", len(printed), keys)
			}
			if key, err := auth.NewKeyring(st, auth.Options{}).Bootstrap(t.Context(), st, "late"); key != "" || err != nil {
				t.Fatalf("a later start bootstrapped again: %q, %v", key, err)
			}
		})
	}
}

// TestBootstrapLeavesARevokedStoreAlone: a store whose every key is revoked
// gets no new admin key from a restart (`mcpmon keys create` makes one).
func TestBootstrapLeavesARevokedStoreAlone(t *testing.T) {
	st := bootstrapStores(t)["bolt"](t)
	kr := auth.NewKeyring(st, auth.Options{})
	_, k := mustCreate(t, kr, auth.NewKey{Name: "only", Scope: auth.ScopeAdmin})
	if _, err := kr.Revoke(t.Context(), "", k.ID); err != nil {
		t.Fatal(err)
	}
	if key, err := kr.Bootstrap(t.Context(), st, "a"); key != "" || err != nil {
		t.Fatalf("bootstrap over a revoked key = %q, %v; want none", key, err)
	}
}

// TestBootstrapWaitsForTheClaimHolder: while another replica holds the
// claim, a start creates nothing; once the holder's lease lapses without a
// key (it crashed), the next start creates it.
func TestBootstrapWaitsForTheClaimHolder(t *testing.T) {
	claims := &fakeClaims{state: store.ClaimHeld}
	kr := auth.NewKeyring(newMemStore(), auth.Options{})
	if key, err := kr.Bootstrap(t.Context(), claims, "b"); key != "" || err != nil {
		t.Fatalf("bootstrap with the claim held elsewhere = %q, %v; want none", key, err)
	}
	claims.state = store.ClaimAcquired
	key, err := kr.Bootstrap(t.Context(), claims, "b")
	if err != nil || key == "" {
		t.Fatalf("bootstrap with the lapsed claim = %q, %v; want a key", key, err)
	}
	if claims.completed != 1 {
		t.Fatalf("the claim was completed %d times, want once", claims.completed)
	}
}

type fakeClaims struct {
	state     store.ClaimState
	completed int
}

func (f *fakeClaims) Claim(context.Context, string, string, time.Duration) (store.ClaimState, error) {
	return f.state, nil
}

func (f *fakeClaims) Complete(context.Context, string, string) error {
	f.completed++
	return nil
}

// TestKeyFileAppearsWholeAndPrivate: nothing is at the target until Commit,
// the committed file is the key and a newline with mode 0600, and Discard
// after a failure leaves no temporary file behind.
func TestKeyFileAppearsWholeAndPrivate(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "admin.key")
	f, err := auth.CreateKeyFile(target)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(target); !os.IsNotExist(err) {
		t.Fatalf("the target exists before Commit: %v", err)
	}
	if err := f.Commit("mcpmon_k"); err != nil {
		t.Fatal(err)
	}
	f.Discard() // after Commit: keeps the file
	b, err := os.ReadFile(target)
	if err != nil || string(b) != "mcpmon_k\n" {
		t.Fatalf("target holds %q (%v), want the key and a newline", b, err)
	}
	if fi, _ := os.Stat(target); fi.Mode().Perm() != 0o600 {
		t.Fatalf("target mode %04o, want 0600", fi.Mode().Perm())
	}

	g, err := auth.CreateKeyFile(filepath.Join(dir, "other.key"))
	if err != nil {
		t.Fatal(err)
	}
	g.Discard()
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Fatalf("after Discard the dir holds %d files, want only admin.key", len(ents))
	}

	if _, err := auth.CreateKeyFile(filepath.Join(dir, "missing", "k")); err == nil {
		t.Fatal("a key file in a missing directory was created")
	}
}
