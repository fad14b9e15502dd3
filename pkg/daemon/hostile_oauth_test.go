package daemon

import (
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/config"
)

// The OAuth client of the endpoints below: the secret must reach the
// authorization server the endpoint was pinned to, and nothing else.
const (
	hostileClientID     = "mcpmon-probe"
	hostileClientSecret = "s3cret-client-secret-value"
)

// authPeer is an authorization server on 127.0.0.1 whose metadata (at both
// well-known paths) claims what claim returns for its own origin, and whose
// /token grants any client a one-second token, counting the requests and
// the ones that carried the client's credentials.
type authPeer struct {
	url        string
	tokens     atomic.Int64
	authorized atomic.Int64
}

func newAuthPeer(t *testing.T, claim func(self string) map[string]any) *authPeer {
	t.Helper()
	ap := &authPeer{}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ap.url = "http://" + ln.Addr().String()
	hs := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.URL.Path == "/.well-known/oauth-authorization-server" || r.URL.Path == "/.well-known/openid-configuration":
			_ = json.NewEncoder(w).Encode(claim(ap.url))
		case r.URL.Path == "/token" && r.Method == http.MethodPost:
			ap.tokens.Add(1)
			if r.Header.Get("Authorization") != "" {
				ap.authorized.Add(1)
			}
			// One second: every probe of a one-second schedule fetches a
			// token, so every probe runs discovery again.
			_ = json.NewEncoder(w).Encode(map[string]any{"access_token": "granted-by-" + r.Host, "token_type": "Bearer", "expires_in": 1})
		default:
			http.NotFound(w, r)
		}
	})}
	go func() { _ = hs.Serve(ln) }()
	t.Cleanup(func() { _ = hs.Close() })
	return ap
}

func honestClaim(self string) map[string]any {
	return map[string]any{"issuer": self, "token_endpoint": self + "/token"}
}

// oauthTarget is a go-sdk MCP server at /mcp that takes any bearer token,
// with protected-resource metadata naming the authorization server in as.
func oauthTarget(t *testing.T, as *atomic.Pointer[string]) *switchServer {
	t.Helper()
	mcpHandler := sdkHandler("oauth-fixture", "1.0.0")
	srv := newSwitchServer(t, nil)
	srv.set(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/.well-known/oauth-protected-resource/mcp":
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(map[string]any{"resource": srv.url, "authorization_servers": []string{*as.Load()}})
		case r.URL.Path == "/mcp" && strings.HasPrefix(r.Header.Get("Authorization"), "Bearer "):
			mcpHandler.ServeHTTP(w, r)
		default:
			w.Header().Set("WWW-Authenticate", "Bearer")
			http.Error(w, `{"error":"invalid_token"}`, http.StatusUnauthorized)
		}
	}))
	return srv
}

func registerOAuth(t *testing.T, d *Daemon, url string) string {
	t.Helper()
	return register(t, d.Addr(), map[string]any{"name": "oauth-discovered", "url": url, "schedule": "@every 1s", "timeout": "1s",
		"oauth": map[string]any{"clientId": hostileClientID, "clientSecret": hostileClientSecret}})
}

// latestProbe is the latest result's slot, class and error.
func latestProbe(t *testing.T, addr, id string) (slot time.Time, class, errText string) {
	t.Helper()
	var v struct {
		LatestResult *struct {
			Slot  time.Time `json:"slot"`
			Class string    `json:"class"`
			Error string    `json:"error"`
		} `json:"latestResult"`
	}
	if err := json.Unmarshal([]byte(get(t, addr, "/v1/endpoints/"+id)), &v); err != nil {
		t.Fatal(err)
	}
	if v.LatestResult == nil {
		return time.Time{}, "", ""
	}
	return v.LatestResult.Slot, v.LatestResult.Class, v.LatestResult.Error
}

// TestOAuthForeignIssuerGetsNoSecretEndToEnd: a target whose metadata
// leads the prober to an authorization server whose metadata names
// another issuer (and a foreign token endpoint) gets no token request
// made anywhere, probe after probe: the endpoint is auth_token_failed,
// the foreign token endpoint never sees the client's credentials, and the
// secret is in no answer of the API.
func TestOAuthForeignIssuerGetsNoSecretEndToEnd(t *testing.T) {
	foreign := newAuthPeer(t, honestClaim)
	liar := newAuthPeer(t, func(string) map[string]any {
		return map[string]any{"issuer": "https://legit.example", "token_endpoint": foreign.url + "/token"}
	})
	var as atomic.Pointer[string]
	as.Store(&liar.url)
	srv := oauthTarget(t, &as)
	d := startEmbedded(t, nil)
	id := registerOAuth(t, d, srv.url)

	var first time.Time
	eventually(t, 20*time.Second, "three probes", func() bool {
		slot, class, errText := latestProbe(t, d.Addr(), id)
		if class != "" && class != "auth_token_failed" {
			t.Fatalf("class %s %q, want auth_token_failed", class, errText)
		}
		if first.IsZero() {
			first = slot
		}
		return !first.IsZero() && slot.Sub(first) >= 2*time.Second
	})
	_, _, errText := latestProbe(t, d.Addr(), id)
	if !strings.Contains(errText, "RFC 8414") {
		t.Fatalf("error %q does not name the issuer check", errText)
	}
	for name, ap := range map[string]*authPeer{"the foreign token endpoint": foreign, "the lying server's": liar} {
		if n, a := ap.tokens.Load(), ap.authorized.Load(); n != 0 || a != 0 {
			t.Fatalf("%s got %d token requests, %d with credentials; want none", name, n, a)
		}
	}
	for _, path := range []string{"/v1/endpoints/" + id, "/v1/endpoints/" + id + "/events"} {
		if body := get(t, d.Addr(), path); strings.Contains(body, hostileClientSecret) {
			t.Fatalf("GET %s shows the client secret: %s", path, body)
		}
	}
}

// TestOAuthAuthServerChangeIsNotFollowedEndToEnd: the first discovery pins
// the authorization server; when the target's metadata then names another
// one (honest metadata and all), every probe is auth_server_changed, the
// new server never gets a token request, and the endpoint's event history
// holds exactly one auth_server_changed event however many probes see the
// change.
func TestOAuthAuthServerChangeIsNotFollowedEndToEnd(t *testing.T) {
	t.Parallel() // waits on windows: overlapped with the other long end-to-end tests
	pinned, other := newAuthPeer(t, honestClaim), newAuthPeer(t, honestClaim)
	var as atomic.Pointer[string]
	as.Store(&pinned.url)
	srv := oauthTarget(t, &as)
	d := startEmbedded(t, func(o *config.Options) { o.RateLimit = 0 }) // polled twice per tick
	id := registerOAuth(t, d, srv.url)
	eventually(t, 20*time.Second, "an ok probe with a token from the first server", func() bool {
		_, class, _ := latestProbe(t, d.Addr(), id)
		return class == "ok" && pinned.authorized.Load() > 0
	})

	as.Store(&other.url)
	var changedAt time.Time
	eventually(t, 20*time.Second, "auth_server_changed", func() bool {
		slot, class, _ := latestProbe(t, d.Addr(), id)
		if class == "auth_server_changed" {
			changedAt = slot
		}
		return !changedAt.IsZero()
	})
	var events struct {
		Events []struct {
			Kind    string         `json:"kind"`
			Message string         `json:"message"`
			Details map[string]any `json:"details"`
		} `json:"events"`
	}
	eventually(t, 20*time.Second, "three more probes that see the change, and its event", func() bool {
		slot, class, errText := latestProbe(t, d.Addr(), id)
		if class != "auth_server_changed" {
			t.Fatalf("class %s %q after the switch, want auth_server_changed", class, errText)
		}
		if err := json.Unmarshal([]byte(get(t, d.Addr(), "/v1/endpoints/"+id+"/events?kind=auth_server_changed")), &events); err != nil {
			t.Fatal(err)
		}
		return slot.Sub(changedAt) >= 3*time.Second && len(events.Events) > 0
	})
	if len(events.Events) != 1 {
		t.Fatalf("%d auth_server_changed events, want exactly one: %+v", len(events.Events), events.Events)
	}
	if !strings.Contains(events.Events[0].Message, other.url+"/token") {
		t.Fatalf("event message %q does not name the new token endpoint", events.Events[0].Message)
	}
	if n, a := other.tokens.Load(), other.authorized.Load(); n != 0 || a != 0 {
		t.Fatalf("the server the metadata switched to got %d token requests, %d with credentials; want none", n, a)
	}
}
