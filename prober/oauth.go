package prober

// oauth.go owns the probe's OAuth client-credentials tokens: an endpoint
// with model.OAuthClient gets its bearer token from the token URL
// (golang.org/x/oauth2/clientcredentials) and the probe sends it as the
// Authorization header. Tokens are cached per endpoint in the Prober,
// shared by every probe of the endpoint, bounded (MaxCachedTokens, least
// recently used out first), and refreshed before they expire by the
// prober's clock. A token that the target refuses (401) is dropped so the
// next probe fetches a new one. A token that cannot be obtained is
// ClassAuthTokenFailed: the message names the token URL's host and the
// OAuth error code, never the secret or the token.
//
// The token URL is chosen by an API caller, so it is dialled like a probe
// target: CheckURL before the request, the SSRF guard's Control on every
// connection and every redirect hop.

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/netguard"
)

// Token cache bounds.
const (
	// DefaultMaxCachedTokens bounds the token cache.
	DefaultMaxCachedTokens = 10000
	// tokenRefreshMargin: a token is refreshed this long before it expires
	// (at most a tenth of its lifetime), so no probe sends one that expires
	// in flight.
	tokenRefreshMargin = time.Minute
	// maxTokenLifetime caps a token without expires_in (or with a huge
	// one): it is fetched again after this long.
	maxTokenLifetime = time.Hour
)

// tokenCache holds one entry per endpoint.
type tokenCache struct {
	mu  sync.Mutex
	m   map[string]*tokenEntry
	max int
}

// tokenEntry is one endpoint's token. mu serialises fetches, so probes of
// one endpoint never race to the token URL.
type tokenEntry struct {
	mu      sync.Mutex
	conf    [32]byte // what the token was obtained with; a change refetches
	token   string
	refresh time.Time // by the prober's clock
	used    time.Time
}

func newTokenCache(max int) *tokenCache {
	if max <= 0 {
		max = DefaultMaxCachedTokens
	}
	return &tokenCache{m: map[string]*tokenEntry{}, max: max}
}

// entry returns id's entry, creating it (and evicting the least recently
// used one when full).
func (c *tokenCache) entry(id string, now time.Time) *tokenEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.m[id]; ok {
		e.used = now
		return e
	}
	if len(c.m) >= c.max {
		var oldest string
		var at time.Time
		for k, e := range c.m {
			if oldest == "" || e.used.Before(at) {
				oldest, at = k, e.used
			}
		}
		delete(c.m, oldest)
	}
	e := &tokenEntry{used: now}
	c.m[id] = e
	return e
}

// forget drops id's token (refused by the target, or the endpoint deleted).
func (c *tokenCache) forget(id string) {
	c.mu.Lock()
	delete(c.m, id)
	c.mu.Unlock()
}

func (c *tokenCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m)
}

// oauthConf is what a cached token was obtained with and for: the client
// and the endpoint URL it is sent to, so a token never follows an endpoint
// to another server (and a discovered token URL is looked up again).
func oauthConf(endpointURL string, o *model.OAuthClient) [32]byte {
	return sha256.Sum256([]byte(strings.Join([]string{endpointURL, o.TokenURL, o.ClientID, o.ClientSecret, strings.Join(o.Scopes, " "), o.Audience}, "\x00")))
}

// tokenResult is what obtaining an endpoint's token came to.
type tokenResult struct {
	token string
	// fetched is the time a fetch took (0: cached).
	fetched time.Duration
	err     *probeError
	// pin is a new pin (oauthpin.go) for Memory; nil: unchanged.
	pin []byte
	// changed is set when discovery named another server than the pin.
	changed *authChange
}

// token returns ep's bearer token, from the cache or the token URL. The
// client secret goes only to the token endpoint decidePin allows.
func (p *Prober) token(ctx context.Context, ep model.Endpoint) tokenResult {
	o := ep.OAuth
	now := p.clock.Now()
	e := p.tokens.entry(ep.ID, now)
	e.mu.Lock()
	defer e.mu.Unlock()
	conf := oauthConf(ep.URL, o)
	if e.token != "" && e.conf == conf && now.Before(e.refresh) {
		return tokenResult{token: e.token}
	}
	e.token = ""
	start := time.Now()
	took := func() time.Duration { return max(time.Since(start), time.Nanosecond) }
	found := authServer{TokenEndpoint: o.TokenURL}
	if o.TokenURL == "" {
		// No token URL configured: the endpoint's authorization server
		// names it (oauthdiscovery.go), looked up again with each fetch.
		var err error
		if found, err = p.discoverAuthServer(ctx, ep.URL); err != nil {
			return tokenResult{fetched: took(), err: failf(ClassAuthTokenFailed, 0, "OAuth token URL discovery for %s failed: %v", model.RedactURL(ep.URL), err)}
		}
	}
	stored, err := p.loadPin(ctx, ep.ID)
	if err != nil {
		return tokenResult{fetched: took(), err: failf(ClassAuthTokenFailed, 0, "OAuth token request not sent: the pinned authorization server could not be read: %v", err)}
	}
	d := decidePin(stored, pinClient(ep), found, p.clock.Now())
	var res tokenResult
	if d.Pin != nil {
		res.pin, _ = json.Marshal(d.Pin)
	}
	if d.Changed {
		res.changed = &authChange{pinned: stored.Server, named: found}
		res.fetched, res.err = took(), res.changed.failure()
		return res
	}
	oc := *o
	oc.TokenURL = d.TokenURL
	t, err := p.fetchToken(ctx, &oc)
	res.fetched = took()
	if err != nil {
		res.err = tokenFailure(ctx, oc.TokenURL, err)
		return res
	}
	lifetime := maxTokenLifetime
	switch {
	case t.ExpiresIn > 0:
		lifetime = min(time.Duration(t.ExpiresIn)*time.Second, maxTokenLifetime)
	case !t.Expiry.IsZero():
		lifetime = min(time.Until(t.Expiry), maxTokenLifetime)
	}
	e.token, e.conf = t.AccessToken, conf
	e.refresh = p.clock.Now().Add(lifetime - min(tokenRefreshMargin, lifetime/10))
	res.token = e.token
	return res
}

// fetchToken asks the token URL for a token through the guarded client.
func (p *Prober) fetchToken(ctx context.Context, o *model.OAuthClient) (*oauth2.Token, error) {
	u, err := url.Parse(o.TokenURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, errors.New("the token URL is not an http(s) URL")
	}
	if err := p.guard.CheckURL(u); err != nil {
		return nil, err
	}
	cfg := clientcredentials.Config{
		ClientID: o.ClientID, ClientSecret: o.ClientSecret, TokenURL: o.TokenURL, Scopes: o.Scopes,
		// RFC 6749 2.3.1: every server must take HTTP Basic; auto-detect
		// would send the secret twice to a server that refuses it.
		AuthStyle: oauth2.AuthStyleInHeader,
	}
	if o.Audience != "" {
		cfg.EndpointParams = url.Values{"audience": {o.Audience}}
	}
	t, err := cfg.Token(context.WithValue(ctx, oauth2.HTTPClient, p.tokenClient))
	if err != nil {
		return nil, err
	}
	if t.AccessToken == "" {
		return nil, errors.New("the token response has no access_token")
	}
	if len(t.AccessToken) > maxAccessToken {
		return nil, fmt.Errorf("the access_token is %d KiB, over %d KiB", len(t.AccessToken)>>10, maxAccessToken>>10)
	}
	if typ := t.Type(); !strings.EqualFold(typ, "Bearer") {
		return nil, fmt.Errorf("the token type is %q, not Bearer", clean(typ))
	}
	return t, nil
}

// errTokenRedirect is a token endpoint that answered with a redirect.
// maxAccessToken bounds an access token the prober accepts. The token
// endpoint may be the tenant's own server, and a token is kept per endpoint
// for up to maxTokenLifetime (DefaultMaxCachedTokens of them), sent in
// every probe's requests and scrubbed from everything the target says: a
// megabyte each would cost the prober gigabytes. Real tokens (JWTs with
// claims) are a few KiB; servers commonly refuse request headers past
// 8 to 16 KiB anyway.
const maxAccessToken = 16 << 10

var errTokenRedirect = errors.New("the token endpoint redirected; the client secret is not sent on")

// newTokenClient is the HTTP client for token URLs: guarded dials,
// guarded and bounded redirects, no idle connections kept (a token is
// fetched rarely; a kept connection would be a goroutine per token host).
func newTokenClient(p *Prober) *http.Client {
	d := &net.Dialer{Timeout: DefaultTimeout, KeepAlive: -1, Resolver: p.opts.Resolver, Control: p.guard.Control}
	return &http.Client{
		Transport: &http.Transport{
			DialContext:            d.DialContext,
			TLSClientConfig:        &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: p.opts.RootCAs},
			DisableKeepAlives:      true,
			TLSHandshakeTimeout:    DefaultTimeout,
			MaxResponseHeaderBytes: headerBudget,
		},
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if via[0].Method == http.MethodPost {
				// A token request carries the client secret: it goes to
				// the token endpoint only, never where that redirects
				// (another port or plain http on the same host would get
				// the Authorization header too).
				return errTokenRedirect
			}
			if len(via) > DefaultMaxRedirects {
				return fmt.Errorf("stopped after %d redirects", len(via))
			}
			return p.guard.CheckURL(req.URL)
		},
	}
}

// tokenFailure words a failed token request: the token URL's host and the
// OAuth error code, or the transport failure; never the URL's query, the
// client secret or a token.
func tokenFailure(ctx context.Context, tokenURL string, err error) *probeError {
	host := "the token URL"
	if u, perr := url.Parse(tokenURL); perr == nil && u.Host != "" {
		host = u.Host
	}
	var re *oauth2.RetrieveError
	switch {
	case errors.As(err, &re):
		status := 0
		if re.Response != nil {
			status = re.Response.StatusCode
		}
		code := re.ErrorCode
		if code == "" {
			code = "no OAuth error code"
		}
		if re.ErrorDescription != "" {
			return failf(ClassAuthTokenFailed, 0, "OAuth token request to %s failed: HTTP %d, %s: %s", host, status, fromTarget(code), fromTarget(re.ErrorDescription))
		}
		return failf(ClassAuthTokenFailed, 0, "OAuth token request to %s failed: HTTP %d, %s", host, status, fromTarget(code))
	case errors.Is(err, netguard.ErrBlocked):
		// The dial error names the resolved address; the tenant reads only
		// the guard's sentence (the detail is for the operator's log).
		pe := failf(ClassAuthTokenFailed, 0, "OAuth token request to %s refused: %v", host, netguard.ErrBlocked)
		pe.cause = err
		return pe
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		// The url.Error names the URL; classify keeps only the cause.
		return failf(ClassAuthTokenFailed, 0, "OAuth token request to %s failed: %v", host, classify(ctx, ue.Err))
	}
	return failf(ClassAuthTokenFailed, 0, "OAuth token request to %s failed: %v", host, err)
}
