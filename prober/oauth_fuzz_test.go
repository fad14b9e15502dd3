package prober

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// FuzzWWWAuthenticate feeds arbitrary WWW-Authenticate values to the
// challenge parser: it never panics, a resource_metadata it returns is text
// of the header, a challenge it finds starts with the Bearer scheme, and a
// well-formed challenge built from the input's URL-ish text parses back.
func FuzzWWWAuthenticate(f *testing.F) {
	f.Add(`Bearer realm="mcp", resource_metadata="https://mcp.example/.well-known/oauth-protected-resource/mcp"`)
	f.Add(`Bearer resource_metadata=https://mcp.example/prm, scope="mcp"`)
	f.Add(`Basic realm="x", Bearer`)
	f.Add(`Bearer xresource_metadata="https://evil.example", resource_metadata="https://mcp.example/prm"`)
	f.Add(`Bearer resource_metadata="unterminated`)
	f.Add(`Bearer resource_metadata=`)
	f.Add(`bearer RESOURCE_METADATA="https://evil.example/prm"`)
	f.Add("Bearer\tresource_metadata=\"https://mcp.example/prm\"")
	f.Fuzz(func(t *testing.T, v string) {
		h := http.Header{}
		h.Set("WWW-Authenticate", v)
		bearer, meta := bearerChallenge(h)
		if meta != "" && !strings.Contains(v, meta) {
			t.Fatalf("resource_metadata %q is not text of %q", meta, v)
		}
		if bearer && !strings.HasPrefix(strings.ToLower(strings.TrimSpace(v)), "bearer") {
			t.Fatalf("a Bearer challenge found in %q", v)
		}
		// Round trip: a quoted value without quotes or line breaks comes back.
		want := strings.Map(func(r rune) rune {
			if r == '"' || r == '\r' || r == '\n' || r == 0 {
				return -1
			}
			return r
		}, v)
		h.Set("WWW-Authenticate", `Bearer realm="mcp", resource_metadata="`+want+`"`)
		if ok, got := bearerChallenge(h); !ok || (want != "" && got != want) {
			t.Fatalf("round trip of %q: bearer %v, resource_metadata %q", want, ok, got)
		}
	})
}

// FuzzResourceMetadata: the RFC 9728 decoder never panics, refuses a body
// over the cap, and accepts only a document whose resource names the
// endpoint's origin: a target's metadata can never speak for another
// resource.
func FuzzResourceMetadata(f *testing.F) {
	f.Add([]byte(`{"resource":"https://mcp.example/mcp","authorization_servers":["https://as.example"]}`), "https://mcp.example/mcp")
	f.Add([]byte(`{"resource":"https://other.example/mcp","authorization_servers":["https://evil.example"]}`), "https://mcp.example/mcp")
	f.Add([]byte(`{"resource":"https://mcp.example/","authorization_servers":["https://as.example"]}`), "https://mcp.example")
	f.Add([]byte(`{"resource":"https://mcp.example@evil.example","authorization_servers":["https://evil.example"]}`), "https://mcp.example")
	f.Add([]byte(`{"resource":"https://mcp.example/mcp","authorization_servers":[]}`), "https://mcp.example/mcp")
	f.Add([]byte(`{"resource":"https://mcp.example/mcp","resource":"https://evil.example","authorization_servers":["https://evil.example"]}`), "https://mcp.example/mcp")
	f.Add([]byte(`[`+strings.Repeat(`[`, 10000)), "https://mcp.example/mcp")
	f.Add([]byte(`{"resource":"https://mcp.example/mcp","x":"`+strings.Repeat("x", maxMetadataBytes)+`"}`), "https://mcp.example/mcp")
	f.Fuzz(func(t *testing.T, body []byte, resource string) {
		as, err := parseResourceMetadata(body, resource)
		if err != nil {
			return
		}
		if len(body) > maxMetadataBytes {
			t.Fatalf("accepted a %d-byte document", len(body))
		}
		if as == "" {
			t.Fatal("accepted a document without an authorization server")
		}
		var md struct {
			Resource string `json:"resource"`
		}
		if err := json.Unmarshal(body, &md); err != nil {
			t.Fatalf("accepted what does not decode: %v", err)
		}
		if md.Resource != resource && (!sameOrigin(md.Resource, resource) || strings.Trim(pathOf(md.Resource), "/") != "" || strings.Trim(pathOf(resource), "/") != "") {
			t.Fatalf("accepted resource %q for %q", md.Resource, resource)
		}
	})
}

// FuzzAuthServerMetadata: the RFC 8414 / OpenID Connect decoder never
// panics, refuses a body over the cap, never accepts an issuer of another
// origin or another path than the one fetched for, and returns only an
// absolute https token endpoint when https is required.
func FuzzAuthServerMetadata(f *testing.F) {
	f.Add([]byte(`{"issuer":"https://as.example","token_endpoint":"https://as.example/token"}`), "https://as.example")
	f.Add([]byte(`{"issuer":"https://legit.example","token_endpoint":"https://evil.example/token"}`), "https://evil.example")
	f.Add([]byte(`{"issuer":"https://as.example/","token_endpoint":"https://as.example/token"}`), "https://as.example")
	f.Add([]byte(`{"issuer":"https://as.example/tenant/","token_endpoint":"https://as.example/token"}`), "https://as.example/tenant")
	f.Add([]byte(`{"issuer":"https://as.example@evil.example","token_endpoint":"https://evil.example/token"}`), "https://as.example")
	f.Add([]byte(`{"issuer":"https://as.example","token_endpoint":"http://as.example/token"}`), "https://as.example")
	f.Add([]byte(`{"issuer":"https://as.example","token_endpoint":"//evil.example/token"}`), "https://as.example")
	f.Add([]byte(`{"token_endpoint":"https://evil.example/token"}`), "")
	f.Add([]byte(`{"issuer":"https://as.example","issuer":"https://evil.example","token_endpoint":"https://evil.example/token"}`), "https://evil.example")
	f.Add([]byte(`{"issuer":"https://as.example","token_endpoint":"https://as.example/token","x":"`+strings.Repeat("x", maxMetadataBytes)+`"}`), "https://as.example")
	f.Fuzz(func(t *testing.T, body []byte, issuer string) {
		token, err := parseAuthServerMetadata(body, issuer, true)
		if err != nil {
			return
		}
		if len(body) > maxMetadataBytes {
			t.Fatalf("accepted a %d-byte document", len(body))
		}
		var md struct {
			Issuer string `json:"issuer"`
		}
		if err := json.Unmarshal(body, &md); err != nil {
			t.Fatalf("accepted what does not decode: %v", err)
		}
		if md.Issuer != issuer && (!sameOrigin(md.Issuer, issuer) || strings.Trim(pathOf(md.Issuer), "/") != "" || strings.Trim(pathOf(issuer), "/") != "") {
			t.Fatalf("accepted issuer %q fetched for %q", md.Issuer, issuer)
		}
		u, err := url.Parse(token)
		if err != nil || u.Scheme != "https" || u.Host == "" || u.User != nil {
			t.Fatalf("accepted token endpoint %q", token)
		}
		if _, err := parseAuthServerMetadata(body, issuer+"x", true); !errors.Is(err, errMetadataRefused) && issuer != "" {
			t.Fatalf("accepted the same document for issuer %q too (%v)", issuer+"x", err)
		}
	})
}

// sameOrigin reports whether a and b are URLs of one scheme and host, as
// a check independent of sameIdentifier.
func sameOrigin(a, b string) bool {
	ua, err1 := url.Parse(a)
	ub, err2 := url.Parse(b)
	return err1 == nil && err2 == nil && ua.Host != "" && ua.Scheme == ub.Scheme && ua.Host == ub.Host && ua.User == nil
}
