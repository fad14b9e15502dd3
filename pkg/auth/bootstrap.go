package auth

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mcpmon/mcpmon/pkg/store"
)

// BootstrapClaim is the ledger key that lets one API replica of many create
// the first admin key.
const BootstrapClaim = "bootstrap-admin-api-key"

// Claims is what Bootstrap needs of the store's ledger (store.Ledger).
type Claims interface {
	Claim(ctx context.Context, key, owner string, lease time.Duration) (store.ClaimState, error)
	Complete(ctx context.Context, key, owner string) error
}

// Bootstrap creates an admin key for the default tenant if the store holds
// no key record at all (revoked ones count: an operator who revoked every
// key gets a new one from `mcpmon keys create`, not from a restart). It
// returns the key, or "" when none was created.
//
// Several API replicas may start at once on one Redis: the claim lets one
// create the key. A crash after the claim and before the create leaves no
// key; the claim lapses after its lease and the next start creates it. A
// crash after the create and before the caller shows the key loses the key
// itself (only its hash is stored): `mcpmon keys create` makes another.
func (k *Keyring) Bootstrap(ctx context.Context, claims Claims, owner string) (string, error) {
	if exists, err := k.Any(ctx); err != nil || exists {
		return "", err
	}
	state, err := claims.Claim(ctx, BootstrapClaim, owner, time.Minute)
	if err != nil {
		return "", fmt.Errorf("claim the bootstrap: %w", err)
	}
	if state != store.ClaimAcquired {
		return "", nil // another replica creates it, or did
	}
	// Re-check under the claim: a replica that finished before our first
	// look completed its claim (ClaimDone above), but `mcpmon keys create`
	// takes no claim.
	if exists, err := k.Any(ctx); err != nil || exists {
		return "", errors.Join(err, claims.Complete(ctx, BootstrapClaim, owner))
	}
	secret, _, err := k.Create(ctx, NewKey{Name: "admin", Tenant: DefaultTenant, Scope: ScopeAdmin})
	if err != nil {
		return "", err
	}
	// A failed Complete is harmless: the key exists, and a replica that
	// takes the lapsed claim finds it.
	_ = claims.Complete(ctx, BootstrapClaim, owner)
	return secret, nil
}
