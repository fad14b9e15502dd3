// Package auth owns mcpmon's API keys: it mints them, keeps their records,
// and answers "whose key is this, and may it do that?" on every request.
//
// A key is "mcpmon_" followed by 52 lower-case base32 characters (32 random
// bytes); the prefix lets secret scanners find a leaked one. The key itself
// is shown once, at creation, and never stored: the store holds a record
// (name, tenant, scope, created, expires, revoked) under the hex SHA-256 of
// the key, in store.Objects kind KindKey, so checking a presented key is one
// GetObject. Last-used times live in memory and are flushed to a separate
// kind (KindKeyUse) at most once a minute per key, so a busy API does not
// write the store per request and never rewrites a key record (a revocation
// written by another replica cannot be undone by a stale flush).
//
// Data enters through Keyring.Create (the API's /v1/keys, the `mcpmon keys`
// command in pkg/auth/keys, and Keyring.Bootstrap: the first admin key of
// an empty store, shown once or written to a KeyFile) and Keyring.Authenticate
// (the API middleware); it leaves as Key records and, through NewContext, as
// the request's Principal, which carries the tenant handlers scope by.
package auth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/mcpmon/mcpmon/pkg/model"
)

// Prefix starts every key, so secret scanners can recognise leaked ones.
const Prefix = "mcpmon_"

// keyBytes of randomness: 256 bits, beyond any brute force.
const keyBytes = 32

var keyEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// keyLen is the length of a well-formed key; anything else is rejected
// without a store lookup.
var keyLen = len(Prefix) + keyEncoding.EncodedLen(keyBytes)

// DefaultTenant owns the bootstrap key and everything created before tenants
// existed. It is the store's: records without a tenant belong to it.
const DefaultTenant = model.DefaultTenant

// Errors. Every one of them means 401 to an API client: the middleware does
// not tell a client whether its key was unknown, expired or revoked.
var (
	ErrInvalidKey = errors.New("invalid API key")
	ErrExpired    = errors.New("API key expired")
	ErrRevoked    = errors.New("API key revoked")
	// ErrKeyNotFound: no key with that ID or name (in the tenant).
	ErrKeyNotFound = errors.New("API key not found")
	// ErrAmbiguous: a name matches several live keys; revoke by ID.
	ErrAmbiguous = errors.New("API key name is ambiguous")
	// ErrNameTaken: a live key of the tenant already has that name.
	ErrNameTaken = errors.New("API key name is taken")
)

// Scope is what a key may do. Scopes are ordered: admin ⊇ write ⊇ read.
type Scope string

const (
	ScopeRead  Scope = "read"  // GET and HEAD
	ScopeWrite Scope = "write" // plus every state-changing request
	ScopeAdmin Scope = "admin" // plus managing keys (and, later, tenants)
	// ScopeAgent is outside the order: an agent key (`mcpmon agent`) may
	// fetch its location's probe commands and post their results, and
	// nothing else; no other key may do that.
	ScopeAgent Scope = "agent"
)

func (s Scope) rank() int {
	switch s {
	case ScopeRead:
		return 1
	case ScopeWrite:
		return 2
	case ScopeAdmin:
		return 3
	}
	return 0
}

// Valid reports whether s is one of the four scopes.
func (s Scope) Valid() bool { return s.rank() > 0 || s == ScopeAgent }

// Allows reports whether a key of scope s may do what needs requires.
func (s Scope) Allows(needs Scope) bool {
	if s == ScopeAgent || needs == ScopeAgent {
		return s == needs
	}
	return s.Valid() && s.rank() >= needs.rank()
}

// ParseScope parses "read", "write" or "admin". Agent keys are made by
// CreateAgent, with their location, never by naming the scope.
func ParseScope(v string) (Scope, error) {
	s := Scope(strings.ToLower(strings.TrimSpace(v)))
	if s.rank() == 0 {
		return "", fmt.Errorf("scope %q: want read, write or admin", v)
	}
	return s, nil
}

// Key is a key's record: everything but the key itself.
type Key struct {
	// ID is the first 16 hex characters of the key's hash: enough to name
	// it in lists and revocations, and useless for guessing the key.
	ID     string `json:"id"`
	Name   string `json:"name"`
	Tenant string `json:"tenant"`
	Scope  Scope  `json:"scope"`
	// Location is an agent key's location (schedule.ValidLocation); empty
	// for every other scope.
	Location string    `json:"location,omitempty"`
	Created  time.Time `json:"created"`
	// Expires is zero for a key that does not expire.
	Expires time.Time `json:"expires,omitzero"`
	// Revoked is zero for a live key.
	Revoked time.Time `json:"revoked,omitzero"`
	// LastUsed is zero for a key never used (and lags by up to the flush
	// interval). It is not part of the stored record.
	LastUsed time.Time `json:"lastUsed,omitzero"`
	// hash is the store id (hex SHA-256 of the key).
	hash string
}

// Status is "active", "expired" or "revoked" at now.
func (k Key) Status(now time.Time) string {
	switch {
	case !k.Revoked.IsZero():
		return "revoked"
	case !k.Expires.IsZero() && !now.Before(k.Expires):
		return "expired"
	}
	return "active"
}

// Principal is who a request acts as: the key's identity, tenant and scope
// (and an agent key's location).
type Principal struct {
	KeyID    string
	Name     string
	Tenant   string
	Scope    Scope
	Location string
}

// Principal returns the request identity a key grants.
func (k Key) Principal() Principal {
	return Principal{KeyID: k.ID, Name: k.Name, Tenant: k.Tenant, Scope: k.Scope, Location: k.Location}
}

// contextKey is a typed context key, as chi does it: no other package can
// collide with it.
type contextKey struct{ name string }

var principalKey = &contextKey{"principal"}

// NewContext returns ctx carrying p.
func NewContext(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, principalKey, p)
}

// FromContext returns the request's principal, if the request was
// authenticated.
func FromContext(ctx context.Context) (Principal, bool) {
	p, ok := ctx.Value(principalKey).(Principal)
	return p, ok
}

// TenantFrom returns the request's tenant: the key's, or DefaultTenant when
// the API runs without keys (--auth none, package tests).
func TenantFrom(ctx context.Context) string {
	if p, ok := FromContext(ctx); ok && p.Tenant != "" {
		return p.Tenant
	}
	return DefaultTenant
}

// Generate returns a fresh key.
func Generate() string {
	var b [keyBytes]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return Prefix + keyEncoding.EncodeToString(b[:])
}

// Hash returns the hex SHA-256 of a key: its store id.
//
// A plain hash, not bcrypt/scrypt/argon2: those slow a guesser down when the
// secret has little entropy (a password). A key has 256 random bits, so no
// dictionary exists and brute force of the hash is as hopeless as of the key;
// a slow KDF would only add milliseconds to every request. SHA-256 also makes
// the lookup one exact GetObject instead of a scan comparing every hash.
func Hash(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])
}

// wellFormed cheaply rejects what cannot be a key (no store lookup, no
// negative-cache entry for garbage).
func wellFormed(key string) bool {
	if len(key) != keyLen || !strings.HasPrefix(key, Prefix) {
		return false
	}
	for i := len(Prefix); i < len(key); i++ {
		if c := key[i]; (c < 'a' || c > 'z') && (c < '2' || c > '7') {
			return false
		}
	}
	return true
}

func idOf(hash string) string { return hash[:16] }
