package api

import (
	"errors"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	apiv1 "github.com/mcpmon/mcpmon/pkg/api/v1"
	"github.com/mcpmon/mcpmon/pkg/auth"
)

// keyRoutes serves /v1/keys: an admin key of a tenant creates, lists and
// revokes that tenant's keys. Another tenant's keys do not exist for it.
func (s *server) keyRoutes(r chi.Router) {
	r.Use(s.requireScope(auth.ScopeAdmin))
	r.Get("/", s.listKeys)
	r.Post("/", s.createKey)
	r.Delete("/{id}", s.revokeKey)
}

func keyView(k auth.Key, now time.Time) apiv1.KeyView {
	opt := func(t time.Time) *time.Time {
		if t.IsZero() {
			return nil
		}
		return &t
	}
	return apiv1.KeyView{ID: k.ID, Name: k.Name, Tenant: k.Tenant, Scope: string(k.Scope), Status: k.Status(now), Created: k.Created,
		Expires: opt(k.Expires), Revoked: opt(k.Revoked), LastUsed: opt(k.LastUsed)}
}

// keyRequest is the body of POST /v1/keys. At most one of Expires (a time)
// and ExpiresIn (a duration from now) may be given.
type keyRequest struct {
	Name      string     `json:"name"`
	Scope     string     `json:"scope"`
	Expires   *time.Time `json:"expires"`
	ExpiresIn string     `json:"expiresIn"`
}

// keyExpiry is a new key's expiry from at most one of expires (a time)
// and expiresIn (a duration from now); zero: never.
func keyExpiry(expires *time.Time, expiresIn string, now time.Time) (time.Time, []apiv1.FieldError) {
	var at time.Time
	var errs []apiv1.FieldError
	switch {
	case expires != nil && expiresIn != "":
		errs = append(errs, apiv1.FieldError{Pointer: "#/expiresIn", Detail: "give expires or expiresIn, not both"})
	case expires != nil:
		if at = *expires; !at.After(now) {
			errs = append(errs, apiv1.FieldError{Pointer: "#/expires", Detail: "must be in the future"})
		}
	case expiresIn != "":
		d, err := time.ParseDuration(expiresIn)
		if err != nil || d <= 0 {
			errs = append(errs, apiv1.FieldError{Pointer: "#/expiresIn", Detail: `must be a positive duration such as "720h"`})
		}
		at = now.Add(d)
	}
	return at, errs
}

// createKeyProblem is the answer to a failed KeyManager.Create.
func (s *server) createKeyProblem(r *http.Request, err error, name string) *apiv1.Problem {
	if errors.Is(err, auth.ErrNameTaken) {
		return problemf(http.StatusConflict, "", "a live key of this tenant is already named %q; revoke it or pick another name", name)
	}
	return s.storeProblem(r, err, "API keys")
}

// keysOff answers /v1/keys when the process runs without keys.
func (s *server) keysOff(w http.ResponseWriter, r *http.Request) bool {
	if s.keys != nil {
		return false
	}
	writeProblem(w, r, problemf(http.StatusNotFound, "", "API keys are off: this server runs with --auth none"))
	return true
}

func (s *server) createKey(w http.ResponseWriter, r *http.Request) {
	if s.keysOff(w, r) {
		return
	}
	body, p := s.readBody(w, r, false)
	if p != nil {
		writeProblem(w, r, p)
		return
	}
	var req keyRequest
	if p := decodeStrict(body, &req); p != nil {
		writeProblem(w, r, p)
		return
	}
	now := s.clock.Now().UTC()
	var errs []apiv1.FieldError
	if err := auth.ValidateName(req.Name); err != nil {
		errs = append(errs, apiv1.FieldError{Pointer: "#/name", Detail: err.Error()})
	}
	scope, err := auth.ParseScope(req.Scope)
	if err != nil {
		errs = append(errs, apiv1.FieldError{Pointer: "#/scope", Detail: "must be read, write or admin"})
	}
	expires, expErrs := keyExpiry(req.Expires, req.ExpiresIn, now)
	errs = append(errs, expErrs...)
	if len(errs) > 0 {
		writeProblem(w, r, invalid(errs...))
		return
	}
	// Keys are created in the caller's own tenant: an admin manages its
	// tenant, never another's.
	secret, key, err := s.keys.Create(r.Context(), auth.NewKey{Name: req.Name, Tenant: auth.TenantFrom(r.Context()), Scope: scope, Expires: expires})
	if err != nil {
		writeProblem(w, r, s.createKeyProblem(r, err, req.Name))
		return
	}
	s.log.Info("API key created", "key_id", key.ID, "name", key.Name, "tenant", key.Tenant, "scope", key.Scope, "by", principalID(r))
	v := keyView(key, now)
	v.Key = secret
	// The key is in this response only: no cache may keep it.
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusCreated, v)
}

func (s *server) listKeys(w http.ResponseWriter, r *http.Request) {
	if s.keysOff(w, r) {
		return
	}
	limit, cur, p := pageParams(r, cursorKeys)
	if p != nil {
		writeProblem(w, r, p)
		return
	}
	// A tenant's keys are few: the page is cut from its whole list.
	keys, err := s.keys.List(r.Context(), auth.TenantFrom(r.Context()))
	if err != nil {
		writeProblem(w, r, s.storeProblem(r, err, "API keys"))
		return
	}
	slices.SortFunc(keys, func(a, b auth.Key) int { return strings.Compare(a.ID, b.ID) })
	if cur != nil {
		i, _ := slices.BinarySearchFunc(keys, cur.ID, func(k auth.Key, id string) int { return strings.Compare(k.ID, id) })
		for i < len(keys) && keys[i].ID <= cur.ID {
			i++
		}
		keys = keys[i:]
	}
	keys, next := cutPage(keys, limit, func(k auth.Key) cursor { return cursor{Kind: cursorKeys, ID: k.ID} })
	now := s.clock.Now()
	out := make([]apiv1.KeyView, len(keys))
	for i, k := range keys {
		out[i] = keyView(k, now)
	}
	writeJSON(w, http.StatusOK, struct {
		Keys       []apiv1.KeyView `json:"keys"`
		NextCursor string          `json:"nextCursor,omitempty"`
	}{out, next})
}

// revokeKey revokes a key of the caller's tenant by ID (or name). Another
// tenant's key is 404, as if it did not exist.
func (s *server) revokeKey(w http.ResponseWriter, r *http.Request) {
	if s.keysOff(w, r) {
		return
	}
	ref := chi.URLParam(r, "id")
	key, err := s.keys.Revoke(r.Context(), auth.TenantFrom(r.Context()), ref)
	switch {
	case errors.Is(err, auth.ErrKeyNotFound):
		writeProblem(w, r, problemf(http.StatusNotFound, "", "no such API key"))
		return
	case errors.Is(err, auth.ErrAmbiguous):
		writeProblem(w, r, problemf(http.StatusConflict, "", "%v", err))
		return
	case err != nil:
		writeProblem(w, r, s.storeProblem(r, err, "API keys"))
		return
	}
	if key.Scope == auth.ScopeAgent {
		if err := s.seen.forget(r.Context(), s.store, key); err != nil { // agents.go
			s.log.Warn("agent revoked: its last-seen record stays", "key_id", key.ID, "err", err)
		}
	}
	s.log.Info("API key revoked", "key_id", key.ID, "name", key.Name, "tenant", key.Tenant, "by", principalID(r))
	writeJSON(w, http.StatusOK, keyView(key, s.clock.Now()))
}

func principalID(r *http.Request) string {
	if p, ok := auth.FromContext(r.Context()); ok {
		return p.KeyID
	}
	return "anonymous"
}
