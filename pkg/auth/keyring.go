package auth

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"
	"unicode"

	"github.com/mcpmon/mcpmon/pkg/clock"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/schedule"
	"github.com/mcpmon/mcpmon/pkg/store"
)

// Store is the part of store.Objects the keyring uses. pkg/store/bolt and
// pkg/store/redis implement it.
type Store interface {
	PutObject(ctx context.Context, kind, id string, doc []byte) error
	GetObject(ctx context.Context, kind, id string) ([]byte, error)
	ListObjects(ctx context.Context, kind string) (map[string][]byte, error)
}

// Defaults of Options.
const (
	// DefaultCacheTTL bounds how long a lookup is reused: a key revoked on
	// one replica stops working on every other within it, and a replica
	// checks a busy key against the store once per TTL instead of per
	// request.
	DefaultCacheTTL = 5 * time.Second
	// DefaultFlushEvery is how often last-used times are written: at most
	// one store write per key per interval.
	DefaultFlushEvery = time.Minute
	// DefaultMaxCacheEntries bounds the cache of keys the store holds;
	// DefaultMaxUnknownKeys the separate one of well-formed keys it does
	// not (malformed keys reach neither). Each evicts its least recently
	// used entry, and they are apart so that a client spraying random keys
	// pushes out only other random keys, never a live key in use.
	DefaultMaxCacheEntries = 10000
	DefaultMaxUnknownKeys  = 10000
)

// Options configure a Keyring. Zero values take the defaults.
type Options struct {
	Clock           clock.Clock
	CacheTTL        time.Duration
	FlushEvery      time.Duration
	MaxCacheEntries int
	MaxUnknownKeys  int
	Logger          *slog.Logger
}

// Keyring creates, lists, revokes and checks API keys over a store. It is
// safe for concurrent use; each API replica has its own (their caches are
// independent, bounded by CacheTTL).
type Keyring struct {
	st         Store
	clk        clock.Clock
	ttl        time.Duration
	flushEvery time.Duration
	log        *slog.Logger

	mu      sync.Mutex
	known   *lru[string, cacheEntry] // hash → record the store holds
	unknown *lru[string, time.Time]  // hash → until when it is known not to exist
	used    map[string]*usage        // hash → last use seen by this process
}

type cacheEntry struct {
	key   Key
	until time.Time
}

type usage struct {
	last    time.Time
	flushed time.Time // last value written to the store
}

// record is a key's stored document (the hash is its id).
type record struct {
	Name   string `json:"name"`
	Tenant string `json:"tenant"`
	Scope  Scope  `json:"scope"`
	// Location: agent keys only (older records have none).
	Location string    `json:"location,omitempty"`
	Created  time.Time `json:"created"`
	Expires  time.Time `json:"expires,omitzero"`
	Revoked  time.Time `json:"revoked,omitzero"`
}

type useRecord struct {
	LastUsed time.Time `json:"lastUsed"`
}

// NewKeyring returns a keyring over st.
func NewKeyring(st Store, opts Options) *Keyring {
	k := &Keyring{st: st, clk: opts.Clock, ttl: opts.CacheTTL, flushEvery: opts.FlushEvery, log: opts.Logger, used: map[string]*usage{}}
	maxKnown, maxUnknown := opts.MaxCacheEntries, opts.MaxUnknownKeys
	if maxKnown <= 0 {
		maxKnown = DefaultMaxCacheEntries
	}
	if maxUnknown <= 0 {
		maxUnknown = DefaultMaxUnknownKeys
	}
	k.known, k.unknown = newLRU[string, cacheEntry](maxKnown), newLRU[string, time.Time](maxUnknown)
	if k.clk == nil {
		k.clk = clock.Real{}
	}
	if k.ttl <= 0 {
		k.ttl = DefaultCacheTTL
	}
	if k.flushEvery <= 0 {
		k.flushEvery = DefaultFlushEvery
	}
	if k.log == nil {
		k.log = slog.New(slog.DiscardHandler)
	}
	k.log = k.log.With("component", "auth")
	return k
}

// Authenticate returns the principal of a presented key. ErrInvalidKey,
// ErrExpired and ErrRevoked mean the key grants nothing; any other error is
// the store's (store.ErrUnavailable wrapped), and is not cached.
func (k *Keyring) Authenticate(ctx context.Context, key string) (Principal, error) {
	if !wellFormed(key) {
		return Principal{}, ErrInvalidKey
	}
	h := Hash(key)
	now := k.clk.Now()
	k.mu.Lock()
	e, ok := k.known.get(h)
	until, absent := k.unknown.get(h)
	k.mu.Unlock()
	if absent && now.Before(until) {
		return Principal{}, ErrInvalidKey
	}
	if !ok || !now.Before(e.until) {
		var err error
		if e, err = k.load(ctx, h, now); err != nil {
			return Principal{}, err
		}
	}
	switch e.key.Status(now) {
	case "revoked":
		return Principal{}, ErrRevoked
	case "expired":
		return Principal{}, ErrExpired
	}
	k.mu.Lock()
	u := k.used[h]
	if u == nil {
		u = &usage{}
		k.used[h] = u
	}
	if now.After(u.last) {
		u.last = now
	}
	k.mu.Unlock()
	return e.key.Principal(), nil
}

// load reads a key's record and caches the answer for the TTL: a record
// in known, an absent key in unknown (ErrInvalidKey).
func (k *Keyring) load(ctx context.Context, h string, now time.Time) (cacheEntry, error) {
	e := cacheEntry{until: now.Add(k.ttl)}
	doc, err := k.st.GetObject(ctx, store.KindAPIKey, h)
	switch {
	case errors.Is(err, model.ErrNotFound):
		k.mu.Lock()
		k.known.remove(h)
		k.unknown.put(h, e.until)
		k.mu.Unlock()
		return cacheEntry{}, ErrInvalidKey
	case err != nil:
		return cacheEntry{}, fmt.Errorf("look up API key: %w", err)
	}
	if e.key, err = decodeKey(h, doc); err != nil {
		return cacheEntry{}, err
	}
	k.mu.Lock()
	k.unknown.remove(h)
	k.known.put(h, e)
	k.mu.Unlock()
	return e, nil
}

func decodeKey(h string, doc []byte) (Key, error) {
	var r record
	if err := json.Unmarshal(doc, &r); err != nil {
		return Key{}, fmt.Errorf("decode API key %s: %w", idOf(h), err)
	}
	return Key{ID: idOf(h), Name: r.Name, Tenant: r.Tenant, Scope: r.Scope, Location: r.Location, Created: r.Created, Expires: r.Expires, Revoked: r.Revoked, hash: h}, nil
}

func (k *Keyring) put(ctx context.Context, key Key) error {
	doc, err := json.Marshal(record{Name: key.Name, Tenant: key.Tenant, Scope: key.Scope, Location: key.Location, Created: key.Created, Expires: key.Expires, Revoked: key.Revoked})
	if err != nil {
		return err
	}
	if err := k.st.PutObject(ctx, store.KindAPIKey, key.hash, doc); err != nil {
		return fmt.Errorf("store API key %s: %w", key.ID, err)
	}
	k.mu.Lock()
	k.known.remove(key.hash) // this replica sees the change at once
	k.unknown.remove(key.hash)
	k.mu.Unlock()
	return nil
}

// NewKey is what Create needs.
type NewKey struct {
	Name   string
	Tenant string // DefaultTenant if empty
	Scope  Scope
	// Location is required with ScopeAgent (schedule.ValidLocation) and
	// refused with every other scope.
	Location string
	// Expires is zero for a key that does not expire.
	Expires time.Time
}

// MaxNameLen bounds a key's name.
const MaxNameLen = 64

// ValidateName checks a key name: 1 to 64 printable characters. Names appear
// in lists and in `keys revoke NAME`, so they must be unique among a tenant's
// live keys (Create checks that).
func ValidateName(name string) error {
	if name == "" {
		return errors.New("name is required")
	}
	if len(name) > MaxNameLen {
		return fmt.Errorf("name is longer than %d bytes", MaxNameLen)
	}
	for _, r := range name {
		if !unicode.IsPrint(r) {
			return errors.New("name must be printable characters")
		}
	}
	return nil
}

// Create mints a key and stores its record. The returned string is the key:
// it exists nowhere else, so the caller shows it once and forgets it.
func (k *Keyring) Create(ctx context.Context, nk NewKey) (string, Key, error) {
	if err := ValidateName(nk.Name); err != nil {
		return "", Key{}, err
	}
	if !nk.Scope.Valid() {
		return "", Key{}, fmt.Errorf("scope %q: want read, write or admin", nk.Scope)
	}
	switch {
	case nk.Scope == ScopeAgent && !schedule.ValidLocation(nk.Location):
		return "", Key{}, fmt.Errorf("location %q: 1-28 of [a-z0-9-], starting with a letter or digit", nk.Location)
	case nk.Scope != ScopeAgent && nk.Location != "":
		return "", Key{}, errors.New("only agent keys have a location")
	}
	if nk.Tenant == "" {
		nk.Tenant = DefaultTenant
	}
	now := k.clk.Now().UTC()
	if !nk.Expires.IsZero() && !nk.Expires.After(now) {
		return "", Key{}, errors.New("expiry is in the past")
	}
	// Two creates racing on two replicas can both pass this check; Revoke
	// then reports the name as ambiguous and asks for an ID.
	keys, err := k.List(ctx, nk.Tenant)
	if err != nil {
		return "", Key{}, err
	}
	for _, o := range keys {
		if o.Name == nk.Name && o.Status(now) == "active" {
			return "", Key{}, fmt.Errorf("%w: %q (key %s)", ErrNameTaken, nk.Name, o.ID)
		}
	}
	secret := Generate()
	h := Hash(secret)
	key := Key{ID: idOf(h), Name: nk.Name, Tenant: nk.Tenant, Scope: nk.Scope, Location: nk.Location, Created: now, Expires: nk.Expires.UTC(), hash: h}
	if nk.Expires.IsZero() {
		key.Expires = time.Time{}
	}
	if err := k.put(ctx, key); err != nil {
		return "", Key{}, err
	}
	return secret, key, nil
}

// List returns the keys of tenant ("" for every tenant), oldest first, with
// their last-used times. Keys themselves are never returned: they are not
// stored.
func (k *Keyring) List(ctx context.Context, tenant string) ([]Key, error) {
	docs, err := k.st.ListObjects(ctx, store.KindAPIKey)
	if err != nil {
		return nil, fmt.Errorf("list API keys: %w", err)
	}
	uses, err := k.st.ListObjects(ctx, store.KindAPIKeyUse)
	if err != nil {
		return nil, fmt.Errorf("list API key use: %w", err)
	}
	out := make([]Key, 0, len(docs))
	for h, doc := range docs {
		key, err := decodeKey(h, doc)
		if err != nil {
			return nil, err
		}
		if tenant != "" && key.Tenant != tenant {
			continue
		}
		var u useRecord
		if doc, ok := uses[h]; ok && json.Unmarshal(doc, &u) == nil {
			key.LastUsed = u.LastUsed
		}
		k.mu.Lock()
		if mu := k.used[h]; mu != nil && mu.last.After(key.LastUsed) {
			key.LastUsed = mu.last
		}
		k.mu.Unlock()
		out = append(out, key)
	}
	slices.SortFunc(out, func(a, b Key) int {
		return cmp.Or(a.Created.Compare(b.Created), cmp.Compare(a.ID, b.ID))
	})
	return out, nil
}

// Any reports whether the store holds any key record, live or not (the
// daemon bootstraps an admin key only into a store that has none).
func (k *Keyring) Any(ctx context.Context) (bool, error) {
	docs, err := k.st.ListObjects(ctx, store.KindAPIKey)
	if err != nil {
		return false, fmt.Errorf("list API keys: %w", err)
	}
	return len(docs) > 0, nil
}

// Revoke revokes the key of tenant ("" for any tenant) whose ID or name is
// ref. Revoking a revoked key is a no-op that returns it. This replica
// refuses the key at once; others within their CacheTTL.
func (k *Keyring) Revoke(ctx context.Context, tenant, ref string) (Key, error) {
	keys, err := k.List(ctx, tenant)
	if err != nil {
		return Key{}, err
	}
	var byName []Key
	for _, key := range keys {
		if key.ID == ref || key.hash == ref {
			return k.revoke(ctx, key)
		}
		if key.Name == ref && key.Revoked.IsZero() {
			byName = append(byName, key)
		}
	}
	switch len(byName) {
	case 0:
		return Key{}, fmt.Errorf("%w: %q", ErrKeyNotFound, ref)
	case 1:
		return k.revoke(ctx, byName[0])
	}
	ids := make([]string, len(byName))
	for i, key := range byName {
		ids[i] = key.ID
	}
	return Key{}, fmt.Errorf("%w: %q names keys %v; revoke one by ID", ErrAmbiguous, ref, ids)
}

func (k *Keyring) revoke(ctx context.Context, key Key) (Key, error) {
	if !key.Revoked.IsZero() {
		return key, nil
	}
	key.Revoked = k.clk.Now().UTC()
	lastUsed := key.LastUsed
	if err := k.put(ctx, key); err != nil {
		return Key{}, err
	}
	key.LastUsed = lastUsed
	return key, nil
}

// Flush writes last-used times that changed since they were last written.
// Run calls it every FlushEvery; tests call it directly.
func (k *Keyring) Flush(ctx context.Context) error {
	type pending struct {
		hash string
		last time.Time
	}
	var todo []pending
	k.mu.Lock()
	for h, u := range k.used {
		if u.last.After(u.flushed) {
			todo = append(todo, pending{h, u.last})
		}
	}
	k.mu.Unlock()
	var errs []error
	for _, p := range todo {
		// Another replica may have written a later use; keep the latest.
		if doc, err := k.st.GetObject(ctx, store.KindAPIKeyUse, p.hash); err == nil {
			var u useRecord
			if json.Unmarshal(doc, &u) == nil && !u.LastUsed.Before(p.last) {
				k.markFlushed(p.hash, p.last)
				continue
			}
		}
		doc, _ := json.Marshal(useRecord{LastUsed: p.last.UTC()})
		if err := k.st.PutObject(ctx, store.KindAPIKeyUse, p.hash, doc); err != nil {
			errs = append(errs, fmt.Errorf("store last use of API key %s: %w", idOf(p.hash), err))
			continue
		}
		k.markFlushed(p.hash, p.last)
	}
	return errors.Join(errs...)
}

func (k *Keyring) markFlushed(h string, t time.Time) {
	k.mu.Lock()
	if u := k.used[h]; u != nil && t.After(u.flushed) {
		u.flushed = t
	}
	k.mu.Unlock()
}

// Run flushes last-used times every FlushEvery until ctx is done, then once
// more (on a detached context) so a clean shutdown loses none.
func (k *Keyring) Run(ctx context.Context) error {
	t := time.NewTicker(k.flushEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			if err := k.Flush(fctx); err != nil {
				k.log.Warn("flush API key last-used times at shutdown", "err", err)
			}
			return nil
		case <-t.C:
			if err := k.Flush(ctx); err != nil {
				// Last-used times are advisory: a store outage loses none
				// (they stay dirty in memory) and is not worth stopping for.
				k.log.Warn("flush API key last-used times", "err", err)
			}
		}
	}
}
