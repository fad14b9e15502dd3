// Package sealed keeps endpoint secrets encrypted at rest. It owns which
// parts of a model.Endpoint are secret — every header value, the whole
// per-endpoint sinks document, a URL carrying a credential-like query
// parameter (see model.IsSecretParam), the tool check's arguments and the OAuth
// client secret — and the Store decorator that seals them on
// the way into any backend and opens them on the way out, so pkg/store/bolt
// and pkg/store/redis only ever hold ciphertext and need not know.
//
// Endpoints enter sealed through CreateEndpoint and UpdateEndpoint and leave
// opened through GetEndpoint, GetEndpointOf and the endpoint lists (and the
// returns of the first two); every other Store method passes straight
// through. A record
// written before sealing existed reads as it is and is sealed on its next
// write or by Reseal. SealEndpoint and OpenEndpoint are the pure functions
// underneath.
package sealed

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/seal"
	"github.com/mcpmon/mcpmon/pkg/store"
)

// Store is a store.Store whose endpoint secrets are sealed at rest.
type Store struct {
	store.Store
	keys *seal.Keyring
}

// Wrap returns st with endpoint secrets sealed under keys.
func Wrap(st store.Store, keys *seal.Keyring) *Store { return &Store{Store: st, keys: keys} }

// EndpointsStamp passes the wrapped store's endpoints stamp through, or
// errors.ErrUnsupported when it keeps none (readers then list every time).
func (s *Store) EndpointsStamp(ctx context.Context) (uint64, error) {
	if st, ok := s.Store.(interface {
		EndpointsStamp(context.Context) (uint64, error)
	}); ok {
		return st.EndpointsStamp(ctx)
	}
	return 0, errors.ErrUnsupported
}

// Unwrap returns the backend underneath (what is actually stored).
func (s *Store) Unwrap() store.Store { return s.Store }

// CreateEndpoint seals e's secrets and stores it.
func (s *Store) CreateEndpoint(ctx context.Context, e model.Endpoint) (model.Endpoint, error) {
	return s.CreateEndpointWithin(ctx, e, 0)
}

// CreateEndpointWithin seals e's secrets and stores it within its tenant's
// limit.
func (s *Store) CreateEndpointWithin(ctx context.Context, e model.Endpoint, limit int) (model.Endpoint, error) {
	sealed, err := SealEndpoint(s.keys, e)
	if err != nil {
		return model.Endpoint{}, err
	}
	out, err := s.Store.CreateEndpointWithin(ctx, sealed, limit)
	if err != nil {
		return model.Endpoint{}, err
	}
	return withSecretsOf(out, e), nil
}

// UpdateEndpoint seals e's secrets and compare-and-sets it.
func (s *Store) UpdateEndpoint(ctx context.Context, e model.Endpoint) (model.Endpoint, error) {
	sealed, err := SealEndpoint(s.keys, e)
	if err != nil {
		return model.Endpoint{}, err
	}
	out, err := s.Store.UpdateEndpoint(ctx, sealed)
	if err != nil {
		return model.Endpoint{}, err
	}
	return withSecretsOf(out, e), nil
}

// GetEndpoint returns the endpoint with its secrets opened.
func (s *Store) GetEndpoint(ctx context.Context, id string) (model.Endpoint, error) {
	e, err := s.Store.GetEndpoint(ctx, id)
	if err != nil {
		return model.Endpoint{}, err
	}
	return OpenEndpoint(s.keys, e)
}

// GetEndpointOf returns the tenant's endpoint with its secrets opened. The
// backend decides ownership from its index first, so another tenant's ID
// is never read, let alone opened.
func (s *Store) GetEndpointOf(ctx context.Context, tenant, id string) (model.Endpoint, error) {
	e, err := s.Store.GetEndpointOf(ctx, tenant, id)
	if err != nil {
		return model.Endpoint{}, err
	}
	return OpenEndpoint(s.keys, e)
}

// ListEndpoints returns every endpoint with its secrets opened. One that
// does not open fails the list: a replica with the wrong key must not
// carry on probing without credentials or alerting nowhere.
func (s *Store) ListEndpoints(ctx context.Context) ([]model.Endpoint, error) {
	return s.openAll(s.Store.ListEndpoints(ctx))
}

// openAll opens the secrets of a listing; the first that does not open
// fails it.
func (s *Store) openAll(eps []model.Endpoint, err error) ([]model.Endpoint, error) {
	if err != nil {
		return nil, err
	}
	for i, e := range eps {
		if eps[i], err = OpenEndpoint(s.keys, e); err != nil {
			return nil, err
		}
	}
	return eps, nil
}

// ListEndpointsIn returns the endpoints of shards with their secrets
// opened (one that does not open fails the list, as in ListEndpoints).
// EndpointsStampsIn is the wrapped store's: sealing changes no stamp.
func (s *Store) ListEndpointsIn(ctx context.Context, shards []int) ([]model.Endpoint, error) {
	return s.openAll(s.Store.ListEndpointsIn(ctx, shards))
}

// ListEndpointsOf returns the tenant's endpoints with their secrets opened
// (one that does not open fails the list, as in ListEndpoints).
func (s *Store) ListEndpointsOf(ctx context.Context, tenant string) ([]model.Endpoint, error) {
	return s.openAll(s.Store.ListEndpointsOf(ctx, tenant))
}

// ListEndpointsPage returns one page of the tenant's endpoints with their
// secrets opened (one that does not open fails the page, as in
// ListEndpoints).
func (s *Store) ListEndpointsPage(ctx context.Context, tenant, after string, limit int) (store.EndpointPage, error) {
	page, err := s.Store.ListEndpointsPage(ctx, tenant, after, limit)
	if err != nil {
		return store.EndpointPage{}, err
	}
	for i, e := range page.Endpoints {
		if page.Endpoints[i], err = OpenEndpoint(s.keys, e); err != nil {
			return store.EndpointPage{}, err
		}
	}
	return page, nil
}

// Reseal rewrites every endpoint whose secrets are not all sealed under the
// keyring's current key (plaintext records from before sealing, and those
// sealed under an older key), compare-and-set like any update, and returns
// how many it rewrote. Each rewrite bumps the endpoint's version. It is
// idempotent: interrupted, it can simply be run again.
func (s *Store) Reseal(ctx context.Context) (int, error) {
	eps, err := s.Store.ListEndpoints(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, e := range eps {
		for attempt := 1; ; attempt++ {
			if !NeedsReseal(s.keys, e) {
				break
			}
			plain, err := OpenEndpoint(s.keys, e)
			if err != nil {
				return n, err
			}
			if _, err = s.UpdateEndpoint(ctx, plain); err == nil {
				n++
				break
			}
			if !errors.Is(err, store.ErrConflict) || attempt == 5 {
				return n, fmt.Errorf("reseal endpoint %s: %w", e.ID, err)
			}
			// Written meanwhile (and so sealed under the current key by
			// whoever wrote it, unless they run an older keyring): look again.
			if e, err = s.Store.GetEndpoint(ctx, e.ID); errors.Is(err, model.ErrNotFound) {
				break
			} else if err != nil {
				return n, err
			}
		}
	}
	return n, nil
}

func withSecretsOf(out, in model.Endpoint) model.Endpoint {
	out.URL, out.Headers, out.Sinks = in.URL, in.Headers, in.Sinks
	out.ToolCheck, out.OAuth = in.ToolCheck, in.OAuth
	return out
}

// Associated data binds each ciphertext to its endpoint and field: a sealed
// value copied to another endpoint (one whose URL an attacker with write
// access to the store chose) does not open there.
func headerAAD(id, name string) []byte { return []byte("mcpmon endpoint " + id + " header " + name) }
func sinksAAD(id string) []byte        { return []byte("mcpmon endpoint " + id + " sinks") }
func urlAAD(id string) []byte          { return []byte("mcpmon endpoint " + id + " url") }
func toolArgsAAD(id string) []byte     { return []byte("mcpmon endpoint " + id + " tool arguments") }
func oauthAAD(id string) []byte        { return []byte("mcpmon endpoint " + id + " oauth client secret") }

// SealEndpoint returns e with every header value, its sinks document (as a
// JSON string) and, if it carries a credential-like query parameter, its
// URL sealed under the current key. e itself is not modified.
func SealEndpoint(k *seal.Keyring, e model.Endpoint) (model.Endpoint, error) {
	if e.ID == "" {
		return model.Endpoint{}, errors.New("seal endpoint: ID is required (it is bound into every ciphertext)")
	}
	if len(e.Headers) > 0 {
		hs := make(map[string]string, len(e.Headers))
		for name, v := range e.Headers {
			hs[name] = k.Seal([]byte(v), headerAAD(e.ID, name))
		}
		e.Headers = hs
	}
	if hasSinks(e.Sinks) {
		doc, err := json.Marshal(k.Seal(e.Sinks, sinksAAD(e.ID)))
		if err != nil {
			return model.Endpoint{}, err
		}
		e.Sinks = doc
	}
	if len(model.QuerySecrets(e.URL)) > 0 {
		e.URL = k.Seal([]byte(e.URL), urlAAD(e.ID))
	}
	if tc := e.ToolCheck; tc != nil && hasSinks(tc.Arguments) {
		doc, err := json.Marshal(k.Seal(tc.Arguments, toolArgsAAD(e.ID)))
		if err != nil {
			return model.Endpoint{}, err
		}
		c := *tc
		c.Arguments = doc
		e.ToolCheck = &c
	}
	if o := e.OAuth; o != nil && o.ClientSecret != "" {
		c := *o
		c.ClientSecret = k.Seal([]byte(o.ClientSecret), oauthAAD(e.ID))
		e.OAuth = &c
	}
	return e, nil
}

// OpenEndpoint returns e with its sealed fields opened. Fields that are not
// sealed (records written before sealing) are returned as they are.
func OpenEndpoint(k *seal.Keyring, e model.Endpoint) (model.Endpoint, error) {
	fail := func(what string, err error) (model.Endpoint, error) {
		if errors.Is(err, seal.ErrUnknownKey) {
			err = fmt.Errorf("%w (does this process have the --secrets-key-file / MCPMON_SECRETS_KEY the writer used?)", err)
		}
		return model.Endpoint{}, fmt.Errorf("open %s of endpoint %s: %w", what, e.ID, err)
	}
	if len(e.Headers) > 0 {
		hs := make(map[string]string, len(e.Headers))
		for name, v := range e.Headers {
			if seal.IsSealed(v) {
				pt, err := k.Open(v, headerAAD(e.ID, name))
				if err != nil {
					return fail("header "+name, err)
				}
				v = string(pt)
			}
			hs[name] = v
		}
		e.Headers = hs
	}
	if s, ok := sealedSinks(e.Sinks); ok {
		pt, err := k.Open(s, sinksAAD(e.ID))
		if err != nil {
			return fail("sinks", err)
		}
		e.Sinks = json.RawMessage(pt)
	}
	if seal.IsSealed(e.URL) {
		pt, err := k.Open(e.URL, urlAAD(e.ID))
		if err != nil {
			return fail("URL", err)
		}
		e.URL = string(pt)
	}
	if tc := e.ToolCheck; tc != nil {
		if s, ok := sealedSinks(tc.Arguments); ok {
			pt, err := k.Open(s, toolArgsAAD(e.ID))
			if err != nil {
				return fail("tool check arguments", err)
			}
			c := *tc
			c.Arguments = json.RawMessage(pt)
			e.ToolCheck = &c
		}
	}
	if o := e.OAuth; o != nil && seal.IsSealed(o.ClientSecret) {
		pt, err := k.Open(o.ClientSecret, oauthAAD(e.ID))
		if err != nil {
			return fail("OAuth client secret", err)
		}
		c := *o
		c.ClientSecret = string(pt)
		e.OAuth = &c
	}
	return e, nil
}

// NeedsReseal reports whether some secret of e (as stored) is plaintext or
// sealed under a key other than k's current one.
func NeedsReseal(k *seal.Keyring, e model.Endpoint) bool {
	cur := k.CurrentID()
	stale := func(v string) bool {
		id, ok := seal.SealedKeyID(v)
		return !ok || id != cur
	}
	for _, v := range e.Headers {
		if stale(v) {
			return true
		}
	}
	if hasSinks(e.Sinks) {
		s, ok := sealedSinks(e.Sinks)
		if !ok || stale(s) {
			return true
		}
	}
	if tc := e.ToolCheck; tc != nil && hasSinks(tc.Arguments) {
		s, ok := sealedSinks(tc.Arguments)
		if !ok || stale(s) {
			return true
		}
	}
	if o := e.OAuth; o != nil && o.ClientSecret != "" && stale(o.ClientSecret) {
		return true
	}
	if seal.IsSealed(e.URL) {
		return stale(e.URL)
	}
	return len(model.QuerySecrets(e.URL)) > 0
}

func hasSinks(doc json.RawMessage) bool {
	s := strings.TrimSpace(string(doc))
	return s != "" && s != "null"
}

// sealedSinks returns the sealed text if doc is a JSON string holding one.
func sealedSinks(doc json.RawMessage) (string, bool) {
	var s string
	if len(doc) == 0 || doc[0] != '"' || json.Unmarshal(doc, &s) != nil || !seal.IsSealed(s) {
		return "", false
	}
	return s, true
}
