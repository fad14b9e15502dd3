package prober

import (
	"crypto/x509"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/clock"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/msg"
)

// fakeAS is an authorization server written for the hostile cases: its
// metadata (at both well-known paths) claims what claim returns, and its
// token endpoint grants any client a token, counting the requests and the
// ones that carried client credentials.
type fakeAS struct {
	*httptest.Server
	tokens     atomic.Int64
	authorized atomic.Int64
}

// claimSelf is the metadata of an honest server: its own origin as issuer,
// its own /token.
func claimSelf(self string) map[string]any {
	return map[string]any{"issuer": self, "token_endpoint": self + "/token"}
}

func newFakeAS(t *testing.T, tls bool, claim func(self string) map[string]any) *fakeAS {
	t.Helper()
	as := &fakeAS{}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		self := "http://" + r.Host
		if r.TLS != nil {
			self = "https://" + r.Host
		}
		switch {
		case r.URL.Path == "/.well-known/oauth-authorization-server" || r.URL.Path == "/.well-known/openid-configuration":
			writeJSON(w, 200, claim(self))
		case r.URL.Path == "/token" && r.Method == http.MethodPost:
			as.tokens.Add(1)
			if r.Header.Get("Authorization") != "" {
				as.authorized.Add(1)
			}
			writeJSON(w, 200, map[string]any{"access_token": "token-from-" + r.Host, "token_type": "Bearer", "expires_in": 3600})
		default:
			http.NotFound(w, r)
		}
	})
	if tls {
		as.Server = httptest.NewTLSServer(h)
	} else {
		as.Server = httptest.NewServer(h)
	}
	t.Cleanup(as.Close)
	return as
}

// untouched fails t if as was sent a token request.
func (as *fakeAS) untouched(t *testing.T, name string) {
	t.Helper()
	if n, a := as.tokens.Load(), as.authorized.Load(); n != 0 || a != 0 {
		t.Fatalf("%s received %d token requests, %d with the client's credentials; want none", name, n, a)
	}
}

// prmTarget is an MCP endpoint at /mcp whose protected-resource metadata
// (path-specific well-known) names the authorization server in as, which a
// test switches; resource overrides the metadata's resource when set, and
// mcp answers /mcp (a bare Bearer 401 without).
type prmTarget struct {
	*httptest.Server
	as       atomic.Pointer[string]
	resource string
}

func newPRMTarget(t *testing.T, tls bool, as string, mcp http.Handler) *prmTarget {
	t.Helper()
	pt := &prmTarget{}
	pt.as.Store(&as)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		self := "http://" + r.Host
		if r.TLS != nil {
			self = "https://" + r.Host
		}
		switch {
		case r.URL.Path == "/.well-known/oauth-protected-resource/mcp":
			resource := pt.resource
			if resource == "" {
				resource = self + "/mcp"
			}
			writeJSON(w, 200, map[string]any{"resource": resource, "authorization_servers": []string{*pt.as.Load()}})
		case r.URL.Path == "/mcp" && mcp != nil:
			mcp.ServeHTTP(w, r)
		default:
			w.Header().Set("WWW-Authenticate", "Bearer")
			writeJSON(w, 401, map[string]any{"error": "invalid_token"})
		}
	})
	if tls {
		pt.Server = httptest.NewTLSServer(h)
	} else {
		pt.Server = httptest.NewServer(h)
	}
	t.Cleanup(pt.Close)
	return pt
}

func discoveringEndpoint(url string) model.Endpoint {
	ep := endpoint(url)
	ep.OAuth = &model.OAuthClient{ClientID: opClientID, ClientSecret: opClientSecret, Scopes: []string{"openid"}}
	return ep
}

// TestOAuthMetadataThatFailsItsChecksSendsNoSecret: discovery whose
// metadata names a foreign token endpoint through a document that fails
// RFC 8414 §3.3 or RFC 9728 §3.3 (or the size cap) makes no token request
// anywhere: the foreign token endpoint receives nothing, the probe is
// auth_token_failed naming the check, and the secret is in no message.
func TestOAuthMetadataThatFailsItsChecksSendsNoSecret(t *testing.T) {
	trap := newFakeAS(t, false, claimSelf) // the foreign token endpoint
	for _, tc := range []struct {
		name  string
		claim func(self string) map[string]any
		// resource overrides the protected-resource metadata's.
		resource string
		want     string
	}{
		{"issuer is not the server's", func(string) map[string]any {
			return map[string]any{"issuer": "https://legit.example", "token_endpoint": trap.URL + "/token"}
		}, "", "RFC 8414 §3.3"},
		{"issuer is the foreign server's", func(string) map[string]any {
			return map[string]any{"issuer": trap.URL, "token_endpoint": trap.URL + "/token"}
		}, "", "RFC 8414 §3.3"},
		{"no issuer", func(string) map[string]any {
			return map[string]any{"token_endpoint": trap.URL + "/token"}
		}, "", "RFC 8414 §3.3"},
		{"issuer with a userinfo trick", func(self string) map[string]any {
			return map[string]any{"issuer": "http://evil@" + strings.TrimPrefix(self, "http://"), "token_endpoint": trap.URL + "/token"}
		}, "", "RFC 8414 §3.3"},
		{"resource of another endpoint", func(self string) map[string]any {
			return map[string]any{"issuer": self, "token_endpoint": trap.URL + "/token"}
		}, "https://other.example/mcp", "RFC 9728 §3.3"},
		{"metadata over the size cap", func(self string) map[string]any {
			return map[string]any{"issuer": self, "token_endpoint": trap.URL + "/token", "pad": strings.Repeat("x", maxMetadataBytes)}
		}, "", "size cap"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			as := newFakeAS(t, false, tc.claim)
			target := newPRMTarget(t, false, as.URL, nil)
			target.resource = tc.resource
			p := testProber(t, func(o *Options) { o.Catalogs = &objectsFake{m: map[string][]byte{}} })
			res := p.Probe(t.Context(), discoveringEndpoint(target.URL+"/mcp"), cmd())
			if res.Class != ClassAuthTokenFailed || res.Status != msg.StatusDown {
				t.Fatalf("class %s/%s %q, want auth_token_failed/down", res.Class, res.Status, res.Error)
			}
			mustContain(t, res.Error, tc.want)
			trap.untouched(t, "the foreign token endpoint")
			as.untouched(t, "the refused server")
			if strings.Contains(res.Error, opClientSecret) {
				t.Fatalf("the secret is in the error: %s", res.Error)
			}
		})
	}

	t.Run("2025-03-26 origin metadata naming a foreign issuer", func(t *testing.T) {
		// No protected-resource metadata: the origin is the authorization
		// server, and its metadata lies about the issuer. Neither the
		// foreign token endpoint nor the default /token is asked.
		origin := newFakeAS(t, false, func(string) map[string]any {
			return map[string]any{"issuer": trap.URL, "token_endpoint": trap.URL + "/token"}
		})
		p := testProber(t, nil)
		res := p.Probe(t.Context(), discoveringEndpoint(origin.URL+"/mcp"), cmd())
		if res.Class != ClassAuthTokenFailed {
			t.Fatalf("class %s %q, want auth_token_failed", res.Class, res.Error)
		}
		trap.untouched(t, "the foreign token endpoint")
		origin.untouched(t, "the default /token")
	})
}

// TestOAuthDiscoveryNeedsHTTPS: without --allow-private-targets (here with
// loopback allowed as a network exception, so only the scheme decides),
// discovery follows https only — an http endpoint, an http authorization
// server or an http token endpoint is refused before the secret is sent —
// and the all-https chain gets its token.
func TestOAuthDiscoveryNeedsHTTPS(t *testing.T) {
	guarded := func(pool *x509.CertPool) func(*Options) {
		return func(o *Options) {
			o.AllowPrivateTargets = false
			o.AllowedNetworks = []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}
			o.RootCAs = pool
		}
	}
	httpAS := newFakeAS(t, false, claimSelf)
	httpsAS := newFakeAS(t, true, claimSelf)
	httpsToHTTP := newFakeAS(t, true, func(self string) map[string]any {
		return map[string]any{"issuer": self, "token_endpoint": httpAS.URL + "/token"}
	})
	pool := x509.NewCertPool()
	pool.AddCert(httpsAS.Certificate()) // httptest's one certificate
	for _, tc := range []struct {
		name     string
		target   string
		want     string
		tokensAt *fakeAS
	}{
		{"http endpoint", newPRMTarget(t, false, httpsAS.URL, nil).URL, "the endpoint is not https", nil},
		{"http authorization server", newPRMTarget(t, true, httpAS.URL, nil).URL, "is not https", nil},
		{"http token endpoint", newPRMTarget(t, true, httpsToHTTP.URL, nil).URL, "token_endpoint is not https", nil},
		{"https throughout", newPRMTarget(t, true, httpsAS.URL, nil).URL, "", httpsAS},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := httpsAS.tokens.Load()
			res := testProber(t, guarded(pool)).Probe(t.Context(), discoveringEndpoint(tc.target+"/mcp"), cmd())
			httpAS.untouched(t, "the http authorization server")
			if tc.tokensAt == nil {
				if res.Class != ClassAuthTokenFailed {
					t.Fatalf("class %s %q, want auth_token_failed", res.Class, res.Error)
				}
				mustContain(t, res.Error, tc.want)
				if n := httpsAS.tokens.Load(); n != before {
					t.Fatalf("the https server got %d token requests", n-before)
				}
				return
			}
			if n := httpsAS.authorized.Load(); n != 1 {
				t.Fatalf("https throughout: %d token requests with credentials (class %s %q), want 1", n, res.Class, res.Error)
			}
		})
	}
}

// TestOAuthAuthServerChangeIsNotFollowed: the first discovery (a real
// zitadel OP) pins the authorization server; when the target's metadata
// then names another server, with metadata that passes every check, the
// probe is auth_server_changed and the new server never sees a token
// request, probe after probe, all of them carrying the same event. Back
// to the pinned server, the probe is ok again; the owner accepts a change
// by setting oauth.tokenUrl, after which discovery pins afresh.
func TestOAuthAuthServerChangeIsNotFollowed(t *testing.T) {
	const lifetime = 10 * time.Minute
	clk := clock.NewFake(time.Now())
	issuer, st := startOP(t, clk, lifetime)
	mcpSrv := newProtectedMCP(t, issuer, clk)
	target := newPRMTarget(t, false, issuer, mcpSrv.Config.Handler)
	other := newFakeAS(t, false, claimSelf)
	objs := &objectsFake{m: map[string][]byte{}}
	p := testProber(t, func(o *Options) { o.Clock = clk; o.Catalogs = objs })
	ep := discoveringEndpoint(target.URL + "/mcp")
	slot := testSlot
	probe := func() msg.ProbeResult {
		// Past any cached token's refresh (at most maxTokenLifetime, which
		// the OP's expires_in reaches as the fake clock runs ahead of the
		// real one): every probe fetches a token.
		slot = slot.Add(2 * maxTokenLifetime)
		clk.Advance(2 * maxTokenLifetime)
		return p.Probe(t.Context(), ep, msg.NewProbeCommand(ep.ID, slot))
	}

	if res := probe(); res.Class != ClassOK || st.issued.Load() != 1 {
		t.Fatalf("first probe: class %s %q, %d tokens issued", res.Class, res.Error, st.issued.Load())
	}
	var pin authPin
	if err := json.Unmarshal(objs.m[AuthServerKind+"/ep1"], &pin); err != nil || pin.Server != (authServer{Issuer: issuer, TokenEndpoint: issuer + "/oauth/token"}) {
		t.Fatalf("pin %s (%v), want the OP's issuer and token endpoint", objs.m[AuthServerKind+"/ep1"], err)
	}

	target.as.Store(&other.URL)
	var fingerprint string
	for i := range 3 {
		res := probe()
		if res.Class != ClassAuthServerChanged || res.Status != msg.StatusDown {
			t.Fatalf("probe %d after the switch: class %s/%s %q, want auth_server_changed/down", i, res.Class, res.Status, res.Error)
		}
		mustContain(t, res.Error, other.URL+"/token")
		var evs []msg.Event
		for _, ev := range res.Events {
			if ev.Kind == EventAuthServerChanged {
				evs = append(evs, ev)
			}
		}
		if len(evs) != 1 || evs[0].Fingerprint == "" || (fingerprint != "" && evs[0].Fingerprint != fingerprint) {
			t.Fatalf("probe %d: events %+v, want one auth_server_changed with the same fingerprint as before", i, res.Events)
		}
		fingerprint = evs[0].Fingerprint
		if b, _ := json.Marshal(res); strings.Contains(string(b), opClientSecret) {
			t.Fatalf("the secret is in the result: %s", b)
		}
	}
	other.untouched(t, "the server the metadata switched to")
	if st.issued.Load() != 1 {
		t.Fatalf("%d tokens issued by the pinned server, want still 1", st.issued.Load())
	}

	target.as.Store(&issuer)
	if res := probe(); res.Class != ClassOK || len(res.Events) != 0 {
		t.Fatalf("back to the pinned server: class %s %q, events %+v; want ok", res.Class, res.Error, res.Events)
	}

	// The owner accepts the other server: an explicit token URL is
	// followed, and back on discovery the other server is pinned.
	target.as.Store(&other.URL)
	ep.OAuth.TokenURL = other.URL + "/token"
	probe()
	if n := other.authorized.Load(); n != 1 {
		t.Fatalf("the configured token URL got %d token requests, want 1", n)
	}
	ep.OAuth.TokenURL = ""
	if res := probe(); res.Class == ClassAuthServerChanged || other.authorized.Load() != 2 {
		t.Fatalf("discovery after the owner's change: class %s %q, %d requests; want the other server pinned and asked", res.Class, res.Error, other.authorized.Load())
	}
}

// TestOAuthPinSurvivesARestart: a pin is in the store, so a new prober
// (a restart, another replica, another region) holds the endpoint to it,
// and follows an honest discovery without a word.
func TestOAuthPinSurvivesARestart(t *testing.T) {
	clk := clock.NewFake(time.Now())
	issuer, st := startOP(t, clk, time.Hour)
	mcpSrv := newProtectedMCP(t, issuer, clk)
	target := newPRMTarget(t, false, issuer, mcpSrv.Config.Handler)
	other := newFakeAS(t, false, claimSelf)
	objs := &objectsFake{m: map[string][]byte{}}
	ep := discoveringEndpoint(target.URL + "/mcp")
	for i, region := range []string{"", "eu"} {
		p := testProber(t, func(o *Options) { o.Clock = clk; o.Catalogs = objs; o.Region, o.RegionalMemory = region, region != "" })
		if res := p.Probe(t.Context(), ep, cmd()); res.Class != ClassOK || len(res.Events) != 0 || st.issued.Load() != int64(i+1) {
			t.Fatalf("prober %d: class %s %q, events %+v", i, res.Class, res.Error, res.Events)
		}
	}
	target.as.Store(&other.URL)
	p := testProber(t, func(o *Options) { o.Clock = clk; o.Catalogs = objs; o.Region, o.RegionalMemory = "us", true })
	if res := p.Probe(t.Context(), ep, cmd()); res.Class != ClassAuthServerChanged {
		t.Fatalf("a third prober after the switch: class %s %q, want auth_server_changed", res.Class, res.Error)
	}
	other.untouched(t, "the server the metadata switched to")
}

// TestOAuthTokenRequestIsNotRedirected: a token endpoint that redirects
// does not get the client secret forwarded where it points.
func TestOAuthTokenRequestIsNotRedirected(t *testing.T) {
	trap := newFakeAS(t, false, claimSelf)
	redirector := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, trap.URL+"/token", http.StatusTemporaryRedirect)
	}))
	ep := discoveringEndpoint(newPRMTarget(t, false, trap.URL, nil).URL + "/mcp")
	ep.OAuth.TokenURL = redirector.URL + "/token"
	res := testProber(t, nil).Probe(t.Context(), ep, cmd())
	if res.Class != ClassAuthTokenFailed {
		t.Fatalf("class %s %q, want auth_token_failed", res.Class, res.Error)
	}
	mustContain(t, res.Error, "redirected")
	trap.untouched(t, "the redirect's target")
}

func TestDecidePin(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	a := authServer{Issuer: "https://a.example", TokenEndpoint: "https://a.example/token"}
	b := authServer{Issuer: "https://b.example", TokenEndpoint: "https://b.example/token"}
	aElsewhere := authServer{Issuer: a.Issuer, TokenEndpoint: "https://evil.example/token"}
	pinA := &authPin{Client: "c1", Server: a, PinnedAt: now.Add(-time.Hour)}
	for _, tc := range []struct {
		name   string
		stored *authPin
		client string
		found  authServer
		want   pinDecision
	}{
		{"first use pins", nil, "c1", a, pinDecision{TokenURL: a.TokenEndpoint, Pin: &authPin{Client: "c1", Server: a, PinnedAt: now}}},
		{"the pinned server", pinA, "c1", a, pinDecision{TokenURL: a.TokenEndpoint}},
		{"another server", pinA, "c1", b, pinDecision{Changed: true}},
		{"the pinned issuer, another token endpoint", pinA, "c1", aElsewhere, pinDecision{Changed: true}},
		{"another issuer, the pinned token endpoint", pinA, "c1", authServer{Issuer: b.Issuer, TokenEndpoint: a.TokenEndpoint}, pinDecision{Changed: true}},
		{"the client changed: pins again", pinA, "c2", b, pinDecision{TokenURL: b.TokenEndpoint, Pin: &authPin{Client: "c2", Server: b, PinnedAt: now}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := decidePin(tc.stored, tc.client, tc.found, now)
			gb, _ := json.Marshal(got)
			wb, _ := json.Marshal(tc.want)
			if got.TokenURL != tc.want.TokenURL || got.Changed != tc.want.Changed || (got.Pin == nil) != (tc.want.Pin == nil) || (got.Pin != nil && *got.Pin != *tc.want.Pin) {
				t.Fatalf("decidePin = %s, want %s", gb, wb)
			}
		})
	}
}

// TestPinClient: what the owner changes to accept a new server changes
// the pin's client; the secret does not enter it.
func TestPinClient(t *testing.T) {
	base := discoveringEndpoint("https://mcp.example/mcp?key=s3cret")
	c := pinClient(base)
	for name, mod := range map[string]func(*model.Endpoint){
		"token URL": func(e *model.Endpoint) { e.OAuth.TokenURL = "https://as.example/token" },
		"client ID": func(e *model.Endpoint) { e.OAuth.ClientID = "other" },
		"scopes":    func(e *model.Endpoint) { e.OAuth.Scopes = []string{"mcp"} },
		"audience":  func(e *model.Endpoint) { e.OAuth.Audience = "api" },
		"URL path":  func(e *model.Endpoint) { e.URL = "https://mcp.example/v2/mcp" },
	} {
		e := base
		o := *base.OAuth
		e.OAuth = &o
		mod(&e)
		if pinClient(e) == c {
			t.Errorf("changing the %s keeps the pin", name)
		}
	}
	e := base
	o := *base.OAuth
	o.ClientSecret = "rotated"
	e.OAuth = &o
	e.URL = "https://mcp.example/mcp?key=other"
	if pinClient(e) != c {
		t.Error("rotating the secret or a query value changed the pin's client")
	}
}

func TestAuthMetadataChecks(t *testing.T) {
	const iss = "https://as.example"
	for _, tc := range []struct {
		name    string
		doc     string
		issuer  string
		https   bool
		want    string
		refused bool
	}{
		{"honest", `{"issuer":"https://as.example","token_endpoint":"https://as.example/token"}`, iss, true, "https://as.example/token", false},
		{"issuer with a trailing slash for an origin", `{"issuer":"https://as.example/","token_endpoint":"https://as.example/token"}`, iss, true, "https://as.example/token", false},
		{"token endpoint on another origin (as Google's)", `{"issuer":"https://as.example","token_endpoint":"https://tokens.example/token"}`, iss, true, "https://tokens.example/token", false},
		{"path issuer exact", `{"issuer":"https://as.example/tenant","token_endpoint":"https://as.example/tenant/token"}`, iss + "/tenant", true, "https://as.example/tenant/token", false},
		{"path issuer with a trailing slash", `{"issuer":"https://as.example/tenant/","token_endpoint":"https://as.example/t"}`, iss + "/tenant", true, "", true},
		{"another issuer", `{"issuer":"https://evil.example","token_endpoint":"https://evil.example/token"}`, iss, true, "", true},
		{"issuer differing in case", `{"issuer":"https://AS.example","token_endpoint":"https://as.example/token"}`, iss, true, "", true},
		{"issuer with userinfo", `{"issuer":"https://as.example@evil.example","token_endpoint":"https://evil.example/token"}`, iss, true, "", true},
		{"issuer with a query", `{"issuer":"https://as.example?","token_endpoint":"https://as.example/token"}`, iss, true, "", true},
		{"no issuer", `{"token_endpoint":"https://as.example/token"}`, iss, true, "", true},
		{"http token endpoint", `{"issuer":"https://as.example","token_endpoint":"http://as.example/token"}`, iss, true, "", true},
		{"http token endpoint, private targets allowed", `{"issuer":"https://as.example","token_endpoint":"http://as.example/token"}`, iss, false, "http://as.example/token", false},
		{"relative token endpoint", `{"issuer":"https://as.example","token_endpoint":"/token"}`, iss, true, "", true},
		{"token endpoint with userinfo", `{"issuer":"https://as.example","token_endpoint":"https://u:p@as.example/token"}`, iss, true, "", true},
		{"javascript token endpoint", `{"issuer":"https://as.example","token_endpoint":"javascript:alert(1)"}`, iss, true, "", true},
		{"oversized", `{"issuer":"https://as.example","token_endpoint":"https://as.example/token","x":"` + strings.Repeat("x", maxMetadataBytes) + `"}`, iss, true, "", true},
		{"not an object", `["https://as.example"]`, iss, true, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseAuthServerMetadata([]byte(tc.doc), tc.issuer, tc.https)
			if refused := errors.Is(err, errMetadataRefused); refused != tc.refused || got != tc.want {
				t.Fatalf("parseAuthServerMetadata = %q, %v; want %q, refused %v", got, err, tc.want, tc.refused)
			}
		})
	}
	const ep = "https://mcp.example/mcp"
	for _, tc := range []struct {
		name      string
		doc       string
		resources []string
		want      string
		refused   bool
	}{
		{"path-specific", `{"resource":"https://mcp.example/mcp","authorization_servers":["https://as.example"]}`, []string{ep}, "https://as.example", false},
		{"the origin's, for the origin", `{"resource":"https://mcp.example","authorization_servers":["https://as.example"]}`, []string{"https://mcp.example", ep}, "https://as.example", false},
		{"the origin's, naming the endpoint", `{"resource":"https://mcp.example/mcp","authorization_servers":["https://as.example"]}`, []string{"https://mcp.example", ep}, "https://as.example", false},
		{"another resource", `{"resource":"https://other.example/mcp","authorization_servers":["https://evil.example"]}`, []string{ep}, "", true},
		{"another path", `{"resource":"https://mcp.example/other","authorization_servers":["https://evil.example"]}`, []string{ep}, "", true},
		{"no resource", `{"authorization_servers":["https://evil.example"]}`, []string{ep}, "", true},
		{"no authorization servers", `{"resource":"https://mcp.example/mcp"}`, []string{ep}, "", false},
		{"oversized", `{"resource":"https://mcp.example/mcp","authorization_servers":["` + strings.Repeat("x", maxMetadataBytes) + `"]}`, []string{ep}, "", true},
	} {
		t.Run("resource: "+tc.name, func(t *testing.T) {
			got, err := parseResourceMetadata([]byte(tc.doc), tc.resources...)
			if refused := errors.Is(err, errMetadataRefused); refused != tc.refused || got != tc.want {
				t.Fatalf("parseResourceMetadata = %q, %v; want %q, refused %v", got, err, tc.want, tc.refused)
			}
		})
	}
}
