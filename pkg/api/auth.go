package api

import (
	"context"
	"errors"
	"math"
	"net/http"
	"strconv"
	"strings"

	apiv1 "github.com/mcpmon/mcpmon/pkg/api/v1"
	"github.com/mcpmon/mcpmon/pkg/auth"
)

// Authenticator checks the API key a request presents. *auth.Keyring
// implements it; Options.Authenticator nil turns authentication off (package
// tests that are not about it, and `--auth none` on a loopback listener).
type Authenticator interface {
	// Authenticate returns the key's principal, or auth.ErrInvalidKey,
	// auth.ErrExpired or auth.ErrRevoked (one 401 for all three), or a
	// store error (503/500).
	Authenticate(ctx context.Context, key string) (auth.Principal, error)
}

// KeyManager serves /v1/keys. *auth.Keyring implements it.
type KeyManager interface {
	Create(ctx context.Context, nk auth.NewKey) (string, auth.Key, error)
	List(ctx context.Context, tenant string) ([]auth.Key, error)
	Revoke(ctx context.Context, tenant, ref string) (auth.Key, error)
}

// RequiredScope is the scope a request needs by its method: reads need
// read, anything that can change state needs write. Routes that need more
// (/v1/keys: admin) say so with requireScope.
func RequiredScope(method string) auth.Scope {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return auth.ScopeRead
	}
	return auth.ScopeWrite
}

// authenticate admits a /v1 request that carries a live key
// (Authorization: Bearer mcpmon_…) whose scope covers the method, and puts
// the key's principal (tenant, scope) into the context. It runs before
// routing inside /v1, so without a key even an unknown path is a 401: the
// API does not tell strangers which routes or objects exist.
//
// A refused key is one answer whether it was unknown, expired or revoked:
// the difference tells a holder of a leaked key whether it ever worked.
// The reason goes to the log and the audit log (refusals.go) only. A
// client address over its failed-authentication budget
// (auth.FailureLimiter) is refused with 429 before its key is looked at.
func (s *server) authenticate(next http.Handler) http.Handler {
	return s.authenticateFor(func(r *http.Request) auth.Scope { return RequiredScope(r.Method) })(next)
}

// authenticateFor is authenticate with the scope a request needs decided
// by need: /mcp (mcp.go) admits any live key at the door, and each tool's
// REST request is held to its own route's scope; the agent exchange
// (agents.go) needs auth.ScopeAgent whatever the method.
func (s *server) authenticateFor(need func(*http.Request) auth.Scope) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		if s.authn == nil {
			return next
		}
		return s.authenticated(need, next)
	}
}

func (s *server) authenticated(needOf func(*http.Request) auth.Scope, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		client := auth.ClientAddress(r.RemoteAddr)
		if wait, blocked := s.failures.Blocked(client, s.clock.Now()); blocked {
			secs := max(1, int(math.Ceil(wait.Seconds())))
			w.Header().Set("Retry-After", strconv.Itoa(secs))
			writeProblem(w, r, problemf(http.StatusTooManyRequests, apiv1.TypeRateLimited,
				"too many requests from this address failed to authenticate; retry in %d s", secs))
			s.refused(r, client, http.StatusTooManyRequests, refusalThrottled, auth.Principal{})
			return
		}
		p, ok := s.keyPrincipal(w, r, client)
		if !ok {
			return
		}
		if need := needOf(r); !p.Scope.Allows(need) {
			forbidden(w, r, need, p.Scope)
			s.refused(r, client, http.StatusForbidden, refusalScope, p)
			return
		}
		next.ServeHTTP(w, r.WithContext(auth.NewContext(r.Context(), p)))
	})
}

// keyPrincipal is the principal of the request's key, looked up now; when
// there is none (no key, a key not valid, the store unavailable) it has
// answered the request and returns false. A request that waits (an
// agent's long poll) asks again before it answers, so a key revoked or
// expired meanwhile gets what a fresh request would.
func (s *server) keyPrincipal(w http.ResponseWriter, r *http.Request, client string) (auth.Principal, bool) {
	key, ok := bearerToken(r)
	if !ok {
		unauthorized(w, r, `Bearer realm="mcpmon"`, "this API needs a key: send Authorization: Bearer mcpmon_…, the admin key printed at the first start or one that `mcpmon keys create --local --data-dir DIR` makes beside the server (stopped, on the embedded store; or --store redis --redis-url URL)")
		s.refused(r, client, http.StatusUnauthorized, refusalNoKey, auth.Principal{})
		return auth.Principal{}, false
	}
	p, err := s.authn.Authenticate(r.Context(), key)
	if err != nil {
		reason := refusalUnknownKey
		switch {
		case errors.Is(err, auth.ErrExpired):
			reason = refusalExpiredKey
		case errors.Is(err, auth.ErrRevoked):
			reason = refusalRevokedKey
		case errors.Is(err, auth.ErrInvalidKey):
		default:
			writeProblem(w, r, s.storeProblem(r, err, "API keys"))
			return auth.Principal{}, false
		}
		s.failures.Failed(client, s.clock.Now())
		unauthorized(w, r, `Bearer realm="mcpmon", error="invalid_token"`, "the API key is not valid")
		s.refused(r, client, http.StatusUnauthorized, reason, auth.Principal{})
		return auth.Principal{}, false
	}
	return p, true
}

// requireScope refuses a request whose key's scope does not cover need. It
// follows authenticate, and passes everything when authentication is off.
func (s *server) requireScope(need auth.Scope) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		if s.authn == nil {
			return next
		}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if p, ok := auth.FromContext(r.Context()); !ok || !p.Scope.Allows(need) {
				forbidden(w, r, need, p.Scope)
				s.refused(r, auth.ClientAddress(r.RemoteAddr), http.StatusForbidden, refusalScope, p)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

// bearerToken returns the credential of an "Authorization: Bearer <key>"
// header (the scheme is case-insensitive, RFC 7235).
func bearerToken(r *http.Request) (string, bool) {
	h := r.Header.Get("Authorization")
	scheme, token, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}

// unauthorized is a 401 with the RFC 6750 challenge. The detail never
// quotes the presented key.
func unauthorized(w http.ResponseWriter, r *http.Request, challenge, detail string) {
	w.Header().Set("WWW-Authenticate", challenge)
	writeProblem(w, r, problemf(http.StatusUnauthorized, "", "%s", detail))
}

func forbidden(w http.ResponseWriter, r *http.Request, need, has auth.Scope) {
	w.Header().Set("WWW-Authenticate", `Bearer realm="mcpmon", error="insufficient_scope", scope="`+string(need)+`"`)
	writeProblem(w, r, problemf(http.StatusForbidden, "", "this request needs a key with scope %q; this key has %q", need, has))
}
