package prober

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	mcpauth "github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"github.com/zitadel/oidc/v3/example/server/storage"
	"github.com/zitadel/oidc/v3/pkg/client/rp"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"

	"github.com/mcpmon/mcpmon/pkg/clock"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/msg"
)

// The OP's client-credentials client (the example storage's service user).
const (
	opClientID     = "sid1"
	opClientSecret = "verysecret"
)

// ccStorage is zitadel's example OP storage with JWT access tokens of a
// chosen lifetime, counting the tokens it issues.
type ccStorage struct {
	*storage.Storage
	clk      clock.Clock // the OP's clock: the test's fake one
	lifetime time.Duration
	issued   atomic.Int64
}

// jwtClient makes the service user's access tokens JWTs, which the MCP
// server verifies with the OP's keys.
type jwtClient struct{ op.Client }

func (jwtClient) AccessTokenType() op.AccessTokenType { return op.AccessTokenTypeJWT }

func (s *ccStorage) ClientCredentials(ctx context.Context, id, secret string) (op.Client, error) {
	c, err := s.Storage.ClientCredentials(ctx, id, secret)
	if err != nil {
		return nil, err
	}
	return jwtClient{c}, nil
}

func (s *ccStorage) CreateAccessToken(ctx context.Context, req op.TokenRequest) (string, time.Time, error) {
	id, _, err := s.Storage.CreateAccessToken(ctx, req)
	s.issued.Add(1)
	return id, s.clk.Now().Add(s.lifetime), err
}

// noKeepAlive keeps no idle connections (goleak checks every test).
func noKeepAlive() *http.Client {
	return &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
}

// startOP starts a zitadel OpenID provider on 127.0.0.1 whose tokens live
// for lifetime.
func startOP(t *testing.T, clk clock.Clock, lifetime time.Duration) (issuer string, st *ccStorage) {
	t.Helper()
	ts := httptest.NewUnstartedServer(nil)
	issuer = "http://" + ts.Listener.Addr().String()
	st = &ccStorage{Storage: storage.NewStorage(storage.NewUserStore(issuer)), clk: clk, lifetime: lifetime}
	provider, err := op.NewProvider(&op.Config{CryptoKey: sha256.Sum256([]byte("mcpmon test")), CodeMethodS256: true},
		st, op.StaticIssuer(issuer), op.WithAllowInsecure(), op.WithLogger(testLogger(nil)))
	if err != nil {
		t.Fatal(err)
	}
	ts.Config.Handler = provider
	ts.Start()
	t.Cleanup(ts.Close)
	return issuer, st
}

// protectedMCP is a go-sdk MCP server behind the SDK's bearer-token
// middleware, verifying JWTs with the OP's published keys and their exp
// against clk (the prober's clock, so a test moves both).
type protectedMCP struct {
	*httptest.Server
	mu       sync.Mutex
	accepted []string
	rejected int
}

func newProtectedMCP(t *testing.T, issuer string, clk clock.Clock) *protectedMCP {
	t.Helper()
	verifier := op.NewAccessTokenVerifier(issuer, rp.NewRemoteKeySet(noKeepAlive(), issuer+"/keys"))
	pm := &protectedMCP{}
	verify := func(ctx context.Context, token string, _ *http.Request) (*mcpauth.TokenInfo, error) {
		claims, err := op.VerifyAccessToken[*oidc.AccessTokenClaims](ctx, token, verifier)
		if err == nil && !claims.Expiration.AsTime().After(clk.Now()) {
			err = errors.New("token expired")
		}
		pm.mu.Lock()
		defer pm.mu.Unlock()
		if err != nil {
			pm.rejected++
			return nil, fmt.Errorf("%w: %v", mcpauth.ErrInvalidToken, err)
		}
		pm.accepted = append(pm.accepted, token)
		return &mcpauth.TokenInfo{Expiration: claims.Expiration.AsTime(), UserID: claims.Subject}, nil
	}
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return sdkServer() }, &mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true})
	pm.Server = serve(t, mcpauth.RequireBearerToken(verify, nil)(h))
	return pm
}

func (pm *protectedMCP) tokens() (accepted []string, rejected int) {
	pm.mu.Lock()
	defer pm.mu.Unlock()
	return append([]string(nil), pm.accepted...), pm.rejected
}

func oauthEndpoint(url, issuer, secret string) model.Endpoint {
	ep := endpoint(url)
	ep.OAuth = &model.OAuthClient{TokenURL: issuer + "/oauth/token", ClientID: opClientID, ClientSecret: secret, Scopes: []string{"openid"}}
	return ep
}

// TestOAuthClientCredentials: the probe obtains a token from a real OP,
// the MCP server accepts it, later probes reuse it, and one is fetched
// again before the first expires, which the server would refuse by then.
func TestOAuthClientCredentials(t *testing.T) {
	const lifetime = 10 * time.Minute
	clk := clock.NewFake(time.Now())
	issuer, st := startOP(t, clk, lifetime)
	srv := newProtectedMCP(t, issuer, clk)
	var logs strings.Builder
	p := testProber(t, func(o *Options) { o.Clock = clk; o.Logger = testLogger(&logs) })
	ep := oauthEndpoint(srv.URL, issuer, opClientSecret)

	res := p.Probe(t.Context(), ep, cmd())
	if res.Class != ClassOK {
		t.Fatalf("first probe: class %s %q", res.Class, res.Error)
	}
	if _, ok := res.Phases[msg.PhaseAuthToken]; !ok || st.issued.Load() != 1 {
		t.Fatalf("first probe: auth_token phase %v, %d tokens issued; want one fetched", res.Phases, st.issued.Load())
	}
	first, _ := srv.tokens()

	clk.Advance(lifetime / 2)
	res = p.Probe(t.Context(), ep, cmd())
	if _, fetched := res.Phases[msg.PhaseAuthToken]; res.Class != ClassOK || fetched || st.issued.Load() != 1 {
		t.Fatalf("second probe: class %s %q, fetched %v, %d issued; want the cached token", res.Class, res.Error, fetched, st.issued.Load())
	}

	clk.Advance(lifetime/2 + time.Second) // the first token is past its exp
	res = p.Probe(t.Context(), ep, cmd())
	accepted, rejected := srv.tokens()
	if res.Class != ClassOK || st.issued.Load() != 2 || rejected != 0 {
		t.Fatalf("probe after expiry: class %s %q, %d issued, %d rejected; want a fresh token", res.Class, res.Error, st.issued.Load(), rejected)
	}
	if accepted[len(accepted)-1] == first[0] {
		t.Fatal("the server was sent the expired token again")
	}
	// The control: the first token is refused by now, so the refresh
	// above was needed.
	stale := endpoint(srv.URL)
	stale.Headers = map[string]string{"Authorization": "Bearer " + first[0]}
	if res := p.Probe(t.Context(), stale, cmd()); res.Class != ClassAuthRejected {
		t.Fatalf("the expired token: class %s %q, want auth_rejected", res.Class, res.Error)
	}

	for _, secret := range append(accepted, opClientSecret) {
		if b, _ := json.Marshal(res); strings.Contains(string(b), secret) {
			t.Errorf("a secret is in the result: %s", b)
		}
		if strings.Contains(logs.String(), secret) {
			t.Errorf("a secret is in the log")
		}
	}
}

// TestOAuthTokenRefusedByTheTargetIsFetchedAgain: a token the target
// refuses is dropped from the cache at once.
func TestOAuthTokenRefusedByTheTargetIsFetchedAgain(t *testing.T) {
	clk := clock.NewFake(time.Now())
	issuer, st := startOP(t, clk, time.Hour)
	serverClk := clock.NewFake(clk.Now())
	srv := newProtectedMCP(t, issuer, serverClk)
	p := testProber(t, func(o *Options) { o.Clock = clk })
	ep := oauthEndpoint(srv.URL, issuer, opClientSecret)
	if res := p.Probe(t.Context(), ep, cmd()); res.Class != ClassOK {
		t.Fatalf("class %s %q", res.Class, res.Error)
	}
	// The server's clock runs ahead (the token was revoked, say), while
	// the prober's cache still holds the token as fresh.
	serverClk.Advance(2 * time.Hour)
	if res := p.Probe(t.Context(), ep, cmd()); res.Class != ClassAuthRejected || st.issued.Load() != 1 {
		t.Fatalf("class %s %q, want auth_rejected", res.Class, res.Error)
	}
	if res := p.Probe(t.Context(), ep, cmd()); st.issued.Load() != 2 {
		t.Fatalf("after a refusal: %d issued (class %s), want a new token fetched", st.issued.Load(), res.Class)
	}
}

// TestOAuthTokenFailures: what keeps the probe from getting a token is
// auth_token_failed, naming the token URL's host and the OAuth error, never
// the secret.
func TestOAuthTokenFailures(t *testing.T) {
	issuer, _ := startOP(t, clock.Real{}, time.Hour)
	srv := newProtectedMCP(t, issuer, clock.Real{})
	dead := httptest.NewServer(http.NotFoundHandler())
	deadURL := dead.URL
	dead.Close()
	host := strings.TrimPrefix(issuer, "http://")
	for _, tc := range []struct {
		name    string
		ep      model.Endpoint
		guarded bool
		want    []string
	}{
		{"wrong secret", oauthEndpoint(srv.URL, issuer, "wrong-SECRET-123"), false, []string{"OAuth token request to " + host, "invalid_client"}},
		{"token URL refuses connections", oauthEndpoint(srv.URL, deadURL, opClientSecret), false, []string{"connection refused"}},
		{"token URL on a blocked address", oauthEndpoint("https://mcp.example.com/mcp", issuer, opClientSecret), true, []string{"refused", "private or reserved address"}},
		{"not a token endpoint", func() model.Endpoint {
			ep := oauthEndpoint(srv.URL, issuer, opClientSecret)
			ep.OAuth.TokenURL = issuer + "/keys"
			return ep
		}(), false, []string{"OAuth token request to " + host}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := testProber(t, func(o *Options) { o.AllowPrivateTargets = !tc.guarded })
			res := p.Probe(t.Context(), tc.ep, cmd())
			if res.Class != ClassAuthTokenFailed || res.Status != msg.StatusDown {
				t.Fatalf("class %s / %s %q, want auth_token_failed / down", res.Class, res.Status, res.Error)
			}
			for _, w := range tc.want {
				mustContain(t, res.Error, w)
			}
			if strings.Contains(res.Error, tc.ep.OAuth.ClientSecret) {
				t.Fatalf("the client secret is in the error: %s", res.Error)
			}
		})
	}
}

// TestOversizedAccessTokenIsRefused: a token endpoint answering an
// access_token of 900 KiB (a lifetime of an hour) fails the probe as
// auth_token_failed naming the cap, the token is neither sent to the target
// nor kept. The token cache holds a token per endpoint (10,000 by default)
// for up to an hour, so a tenant's thousand endpoints whose token URL is
// its own server held about a gigabyte of every prober that probed them,
// and each probe sent the megabyte to the target and scrubbed text with it.
func TestOversizedAccessTokenIsRefused(t *testing.T) {
	big := strings.Repeat("A", 900<<10)
	tokenURL := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"access_token":%q,"token_type":"Bearer","expires_in":3600}`, big)
	})).URL
	srv, l := countingServer(t)
	p := testProber(t, nil)
	ep := oauthEndpoint(srv.URL, tokenURL, opClientSecret)
	ep.OAuth.TokenURL = tokenURL
	res := p.Probe(t.Context(), ep, cmd())
	if res.Class != ClassAuthTokenFailed || !strings.Contains(res.Error, fmt.Sprintf("over %d KiB", maxAccessToken>>10)) {
		t.Fatalf("class %s %q, want auth_token_failed naming the %d KiB cap", res.Class, res.Error, maxAccessToken>>10)
	}
	if len(res.Error) > 4096 {
		t.Fatalf("error is %d bytes", len(res.Error))
	}
	assertNoConnections(t, l)
	if e := p.tokens.entry(ep.ID, time.Now()); e.token != "" {
		t.Fatalf("cache keeps a token of %d bytes", len(e.token))
	}
}

// TestTokenCacheIsBounded: the least recently used endpoint's token goes
// first.
func TestTokenCacheIsBounded(t *testing.T) {
	c := newTokenCache(2)
	t0 := time.Now()
	c.entry("a", t0)
	c.entry("b", t0.Add(time.Second))
	c.entry("a", t0.Add(2*time.Second)) // a used again
	c.entry("c", t0.Add(3*time.Second))
	if c.len() != 2 {
		t.Fatalf("%d entries, want 2", c.len())
	}
	c.mu.Lock()
	_, hasA := c.m["a"]
	_, hasB := c.m["b"]
	c.mu.Unlock()
	if !hasA || hasB {
		t.Fatalf("kept a=%v b=%v, want a kept and b evicted", hasA, hasB)
	}
}

// TestOAuthTokenURLDiscovered: an OAuth client without a token URL gets its
// token the way an MCP client finds its authorization server — the
// endpoint's protected-resource metadata (served by the go-sdk's handler)
// names the OP, whose OpenID discovery names the token endpoint. Without
// any metadata, the 2025-03-26 default /token at the endpoint's origin is
// tried, and its failure says discovery failed.
func TestOAuthTokenURLDiscovered(t *testing.T) {
	clk := clock.NewFake(time.Now())
	issuer, st := startOP(t, clk, time.Hour)
	protected := newProtectedMCP(t, issuer, clk)
	mux := http.NewServeMux()
	srv := serve(t, mux)
	mux.Handle("/.well-known/oauth-protected-resource/mcp", mcpauth.ProtectedResourceMetadataHandler(&oauthex.ProtectedResourceMetadata{
		Resource: srv.URL + "/mcp", AuthorizationServers: []string{issuer},
	}))
	mux.Handle("/mcp", protected.Config.Handler)

	p := testProber(t, func(o *Options) { o.Clock = clk })
	ep := oauthEndpoint(srv.URL+"/mcp", issuer, opClientSecret)
	ep.OAuth.TokenURL = ""
	res := p.Probe(t.Context(), ep, cmd())
	if res.Class != ClassOK || st.issued.Load() != 1 {
		t.Fatalf("discovered token URL: class %s %q, %d tokens issued; want ok with one", res.Class, res.Error, st.issued.Load())
	}

	bare := oauthEndpoint(protected.URL, issuer, opClientSecret) // no metadata anywhere
	bare.OAuth.TokenURL = ""
	res = p.Probe(t.Context(), bare, cmd())
	if res.Class != ClassAuthTokenFailed || st.issued.Load() != 1 {
		t.Fatalf("no metadata: class %s %q, want auth_token_failed", res.Class, res.Error)
	}
	mustContain(t, res.Error, "OAuth token request to "+strings.TrimPrefix(protected.URL, "http://"))
	if strings.Contains(res.Error, opClientSecret) {
		t.Fatalf("the client secret is in the error: %s", res.Error)
	}
}

// TestOAuthTokenNeverFollowsTheEndpointElsewhere: an endpoint moved to
// another URL gets a token fetched for it; the cached one, obtained for the
// old server, is not sent to the new one.
func TestOAuthTokenNeverFollowsTheEndpointElsewhere(t *testing.T) {
	clk := clock.NewFake(time.Now())
	issuer, st := startOP(t, clk, time.Hour)
	first, second := newProtectedMCP(t, issuer, clk), newProtectedMCP(t, issuer, clk)
	p := testProber(t, func(o *Options) { o.Clock = clk })
	ep := oauthEndpoint(first.URL, issuer, opClientSecret)
	if res := p.Probe(t.Context(), ep, cmd()); res.Class != ClassOK {
		t.Fatalf("class %s %q", res.Class, res.Error)
	}
	ep.URL = second.URL
	if res := p.Probe(t.Context(), ep, cmd()); res.Class != ClassOK || st.issued.Load() != 2 {
		t.Fatalf("moved endpoint: class %s %q, %d tokens issued; want a second one", res.Class, res.Error, st.issued.Load())
	}
	a, _ := first.tokens()
	b, _ := second.tokens()
	if len(a) == 0 || len(b) == 0 {
		t.Fatalf("tokens accepted: first server %d, second %d", len(a), len(b))
	}
	for _, tok := range b {
		if slices.Contains(a, tok) {
			t.Fatal("the second server was sent the token obtained for the first")
		}
	}
}
