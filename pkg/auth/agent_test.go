package auth_test

import (
	"context"
	"testing"

	"github.com/mcpmon/mcpmon/pkg/auth"
	"github.com/mcpmon/mcpmon/pkg/clock"
)

// An agent key grants its own scope only, in both directions: it reads
// nothing, and no admin key can act as an agent (it has no location).
func TestAgentScopeIsOutsideTheOrder(t *testing.T) {
	for _, tc := range []struct {
		has, needs auth.Scope
		ok         bool
	}{
		{auth.ScopeAgent, auth.ScopeAgent, true},
		{auth.ScopeAgent, auth.ScopeRead, false},
		{auth.ScopeAgent, auth.ScopeWrite, false},
		{auth.ScopeAgent, auth.ScopeAdmin, false},
		{auth.ScopeAdmin, auth.ScopeAgent, false},
		{auth.ScopeRead, auth.ScopeAgent, false},
		{auth.ScopeAdmin, auth.ScopeRead, true},
	} {
		if got := tc.has.Allows(tc.needs); got != tc.ok {
			t.Errorf("%s.Allows(%s) = %v, want %v", tc.has, tc.needs, got, tc.ok)
		}
	}
	if _, err := auth.ParseScope("agent"); err == nil {
		t.Error(`ParseScope("agent") succeeded: an agent key must be made with its location`)
	}
}

func TestAgentKeyCarriesItsLocation(t *testing.T) {
	ctx := context.Background()
	kr := auth.NewKeyring(newMemStore(), auth.Options{Clock: clock.NewFake(t0)})
	if _, _, err := kr.Create(ctx, auth.NewKey{Name: "a", Scope: auth.ScopeAgent}); err == nil {
		t.Error("an agent key without a location was created")
	}
	if _, _, err := kr.Create(ctx, auth.NewKey{Name: "a", Scope: auth.ScopeAgent, Location: "Bad:Name"}); err == nil {
		t.Error("an agent key with a malformed location was created")
	}
	if _, _, err := kr.Create(ctx, auth.NewKey{Name: "w", Scope: auth.ScopeWrite, Location: "office"}); err == nil {
		t.Error("a write key with a location was created")
	}
	secret, key, err := kr.Create(ctx, auth.NewKey{Name: "office-1", Tenant: "acme", Scope: auth.ScopeAgent, Location: "office"})
	if err != nil {
		t.Fatal(err)
	}
	p, err := kr.Authenticate(ctx, secret)
	if err != nil {
		t.Fatal(err)
	}
	if p.Scope != auth.ScopeAgent || p.Location != "office" || p.Tenant != "acme" || p.KeyID != key.ID {
		t.Fatalf("principal = %+v", p)
	}
	keys, err := kr.List(ctx, "acme")
	if err != nil || len(keys) != 1 || keys[0].Location != "office" {
		t.Fatalf("List = %+v, %v; want the agent key with its location", keys, err)
	}
}
