package prober

// oauthdiscovery.go finds the authorization server and token URL of an
// endpoint whose OAuth client names none, the way an MCP client finds its
// authorization server:
//
//  1. the endpoint's protected-resource metadata (RFC 9728) at its
//     well-known URLs (path-specific first) names the authorization server;
//     without any (2025-03-26 servers) the endpoint's origin is the
//     authorization server;
//  2. that server's metadata — RFC 8414 (well-known inserted before the
//     issuer's path), then OpenID Connect discovery (inserted, then
//     appended) — names the token_endpoint;
//  3. a 2025-03-26 server with no metadata at all uses the default /token
//     at its origin.
//
// The client secret goes where this points, and the target wrote the
// first document, so every document is checked before it is used, and a
// document that fails a check ends discovery (no later candidate, no
// fallback to /token):
//
//   - its body is capped (maxMetadataBytes) before it is decoded;
//   - the protected-resource metadata's resource is the endpoint's
//     (RFC 9728 §3.3): the URL the well-known path was inserted into, or
//     the endpoint URL itself;
//   - the authorization server metadata's issuer is the issuer it was
//     fetched for (RFC 8414 §3.3, OpenID Connect Discovery §4.3);
//   - without --allow-private-targets every URL is https: the endpoint
//     whose metadata names the server, the issuer, each document's final
//     URL after redirects, and the token endpoint.
//
// What discovery finds is then held to the endpoint's pin (oauthpin.go):
// the secret goes only to the token endpoint pinned at the first
// discovery. Every URL is fetched through the token client, so the SSRF
// guard checks each one, every connection and every redirect. Discovery
// runs only when a token is fetched (once per token lifetime), never on a
// cached token.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"strings"
)

// maxMetadataBytes caps a metadata document before it is decoded: real
// ones are a few KB.
const maxMetadataBytes = 64 << 10

var (
	// errNoTokenEndpoint is a discovery that found no token URL.
	errNoTokenEndpoint = errors.New("no token endpoint discovered")
	// errMetadataRefused is a metadata document that failed a check: its
	// data is not used (RFC 8414 §3.3, RFC 9728 §3.3).
	errMetadataRefused = errors.New("metadata refused")
)

// authServer is the authorization server an endpoint's client secret goes
// to: its issuer and token endpoint. Issuer is empty for a token URL the
// endpoint configures.
type authServer struct {
	Issuer        string `json:"issuer,omitempty"`
	TokenEndpoint string `json:"tokenEndpoint"`
}

// discoverAuthServer returns endpointURL's authorization server.
func (p *Prober) discoverAuthServer(ctx context.Context, endpointURL string) (authServer, error) {
	u, err := url.Parse(endpointURL)
	if err != nil || u.Host == "" {
		return authServer{}, fmt.Errorf("%w: the endpoint URL is not a URL", errNoTokenEndpoint)
	}
	httpsOnly := !p.opts.AllowPrivateTargets
	if err := checkScheme("the endpoint", u, httpsOnly); err != nil {
		return authServer{}, fmt.Errorf("%w: %v", errNoTokenEndpoint, err)
	}
	origin := url.URL{Scheme: u.Scheme, Host: u.Host}
	issuer := ""
	var why []string
	for _, c := range resourceMetadataURLs(u) {
		b, err := p.getMetadata(ctx, c.url, httpsOnly)
		if err == nil {
			issuer, err = parseResourceMetadata(b, c.resource, resourceURL(u))
		}
		if errors.Is(err, errMetadataRefused) {
			return authServer{}, fmt.Errorf("GET %s: %w", pathOf(c.url), err)
		}
		if err != nil {
			why = append(why, "GET "+pathOf(c.url)+": "+err.Error())
			continue
		}
		break
	}
	legacy := issuer == ""
	if legacy {
		issuer = origin.String() // 2025-03-26: the MCP server's origin
	}
	iss, err := url.Parse(issuer)
	if err != nil || iss.Host == "" || (iss.Scheme != "https" && iss.Scheme != "http") {
		return authServer{}, fmt.Errorf("%w: the authorization server %s is not an http(s) URL", errNoTokenEndpoint, named(issuer))
	}
	if err := checkScheme("the authorization server "+named(issuer), iss, httpsOnly); err != nil {
		return authServer{}, fmt.Errorf("%w: %v", errNoTokenEndpoint, err)
	}
	for _, c := range authServerMetadataURLs(iss) {
		b, err := p.getMetadata(ctx, c, httpsOnly)
		var token string
		if err == nil {
			token, err = parseAuthServerMetadata(b, issuer, httpsOnly)
		}
		if errors.Is(err, errMetadataRefused) {
			return authServer{}, fmt.Errorf("GET %s at %s: %w", pathOf(c), iss.Host, err)
		}
		if err != nil {
			why = append(why, "GET "+pathOf(c)+": "+err.Error())
			continue
		}
		return authServer{Issuer: issuer, TokenEndpoint: token}, nil
	}
	if legacy {
		return authServer{Issuer: issuer, TokenEndpoint: origin.JoinPath("token").String()}, nil
	}
	return authServer{}, fmt.Errorf("%w at %s: %s", errNoTokenEndpoint, iss.Host, strings.Join(why, "; "))
}

// metadataCandidate is a well-known URL of protected-resource metadata and
// the resource identifier it was built from (RFC 9728 §3.1).
type metadataCandidate struct{ url, resource string }

// resourceMetadataURLs are RFC 9728's well-known URLs of u: path-specific
// first, then the origin's.
func resourceMetadataURLs(u *url.URL) []metadataCandidate {
	base := url.URL{Scheme: u.Scheme, Host: u.Host}
	origin := base.String()
	var out []metadataCandidate
	if p := strings.TrimSuffix(u.Path, "/"); p != "" {
		base.Path = "/.well-known/oauth-protected-resource" + p
		out = append(out, metadataCandidate{base.String(), resourceURL(u)})
	}
	base.Path = "/.well-known/oauth-protected-resource"
	return append(out, metadataCandidate{base.String(), origin})
}

// resourceURL is the endpoint's resource identifier: its URL without
// query or fragment (RFC 9728 §1.2).
func resourceURL(u *url.URL) string {
	r := url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path, RawPath: u.RawPath}
	return r.String()
}

// authServerMetadataURLs are the metadata URLs of issuer iss, in the order
// the MCP authorization spec (2025-11-25) tries them.
func authServerMetadataURLs(iss *url.URL) []string {
	base := url.URL{Scheme: iss.Scheme, Host: iss.Host}
	p := strings.TrimSuffix(iss.Path, "/")
	at := func(path string) string { b := base; b.Path = path; return b.String() }
	if p == "" {
		return []string{at("/.well-known/oauth-authorization-server"), at("/.well-known/openid-configuration")}
	}
	return []string{
		at("/.well-known/oauth-authorization-server" + p),
		at("/.well-known/openid-configuration" + p),
		at(p + "/.well-known/openid-configuration"),
	}
}

// parseResourceMetadata decodes protected-resource metadata (RFC 9728)
// and returns its first authorization server. The document's resource
// must be one of resources; otherwise, or when the document is over
// maxMetadataBytes, the error is errMetadataRefused.
func parseResourceMetadata(b []byte, resources ...string) (string, error) {
	if len(b) > maxMetadataBytes {
		return "", fmt.Errorf("%w: over %d bytes", errMetadataRefused, maxMetadataBytes)
	}
	var md struct {
		Resource             string   `json:"resource"`
		AuthorizationServers []string `json:"authorization_servers"`
	}
	if err := decodeMetadata(b, &md); err != nil {
		return "", err
	}
	matched := false
	for _, r := range resources {
		matched = matched || sameIdentifier(md.Resource, r)
	}
	if !matched {
		return "", fmt.Errorf("%w: its resource %s is not the endpoint's (RFC 9728 §3.3)", errMetadataRefused, named(md.Resource))
	}
	if len(md.AuthorizationServers) == 0 || md.AuthorizationServers[0] == "" {
		return "", errors.New("no authorization_servers")
	}
	return md.AuthorizationServers[0], nil
}

// parseAuthServerMetadata decodes authorization server metadata (RFC 8414,
// or an OpenID Connect discovery document) fetched for issuer and returns
// its token endpoint. An issuer other than the one it was fetched for, a
// token endpoint that is not an absolute http(s) URL (https with
// httpsOnly), or a document over maxMetadataBytes is errMetadataRefused.
func parseAuthServerMetadata(b []byte, issuer string, httpsOnly bool) (string, error) {
	if len(b) > maxMetadataBytes {
		return "", fmt.Errorf("%w: over %d bytes", errMetadataRefused, maxMetadataBytes)
	}
	var md struct {
		Issuer        string `json:"issuer"`
		TokenEndpoint string `json:"token_endpoint"`
	}
	if err := decodeMetadata(b, &md); err != nil {
		return "", err
	}
	if !sameIdentifier(md.Issuer, issuer) {
		return "", fmt.Errorf("%w: its issuer %s is not %s, the issuer it was fetched for (RFC 8414 §3.3)", errMetadataRefused, named(md.Issuer), named(issuer))
	}
	if md.TokenEndpoint == "" {
		return "", errors.New("no token_endpoint")
	}
	t, err := url.Parse(md.TokenEndpoint)
	if err != nil || t.Host == "" || (t.Scheme != "https" && t.Scheme != "http") || t.User != nil || t.Fragment != "" {
		return "", fmt.Errorf("%w: its token_endpoint is not an absolute http(s) URL", errMetadataRefused)
	}
	if err := checkScheme("its token_endpoint", t, httpsOnly); err != nil {
		return "", fmt.Errorf("%w: %v", errMetadataRefused, err)
	}
	return md.TokenEndpoint, nil
}

// decodeMetadata decodes one JSON object into v.
func decodeMetadata(b []byte, v any) error {
	b = bytes.TrimLeft(b, " \t\r\n") // JSON's whitespace only
	if len(b) == 0 || b[0] != '{' || json.Unmarshal(b, v) != nil {
		return errors.New("invalid JSON")
	}
	return nil
}

// sameIdentifier reports whether got names the same issuer or resource as
// want: the identical string (RFC 8414 §3.3), or both URLs of one origin
// whose paths are "" and "/", which RFC 3986 §6.2.3 makes equivalent (a
// 2025-03-26 server's issuer is its origin, written either way).
func sameIdentifier(got, want string) bool {
	if got == "" || want == "" {
		return false
	}
	if got == want {
		return true
	}
	g, err1 := url.Parse(got)
	w, err2 := url.Parse(want)
	if err1 != nil || err2 != nil {
		return false
	}
	return bareOrigin(g) && bareOrigin(w) && strings.TrimSuffix(got, "/") == strings.TrimSuffix(want, "/")
}

// bareOrigin: u is scheme://host with an empty or "/" path and nothing else.
func bareOrigin(u *url.URL) bool {
	return u.Host != "" && (u.Path == "" || u.Path == "/") && u.RawPath == "" && u.RawQuery == "" && !u.ForceQuery &&
		u.Fragment == "" && u.User == nil
}

// checkScheme refuses a plain-http URL named what when httpsOnly.
func checkScheme(what string, u *url.URL, httpsOnly bool) error {
	if httpsOnly && u.Scheme != "https" {
		return fmt.Errorf("%s is not https (the client secret goes only over https; --allow-private-targets lifts this for tests)", what)
	}
	return nil
}

// named is a target's string for a message: cleaned, "(none)" when empty.
func named(s string) string {
	if s == "" {
		return "(none)"
	}
	return clean(s)
}

func pathOf(raw string) string {
	if u, err := url.Parse(raw); err == nil {
		return u.Path
	}
	return raw
}

// getMetadata GETs a metadata document through the token client and
// returns its body, at most maxMetadataBytes of it; with httpsOnly the
// document must come from an https URL after any redirect.
func (p *Prober) getMetadata(ctx context.Context, raw string, httpsOnly bool) ([]byte, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("%s is not a URL", clean(raw))
	}
	if err := p.guard.CheckURL(u); err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := p.tokenClient.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the url.Error repeats the URL
		}
		return nil, classify(ctx, err)
	}
	defer resp.Body.Close()
	if err := checkScheme("the document's final URL", resp.Request.URL, httpsOnly); err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "application/json" {
		return nil, fmt.Errorf("content type %q, want application/json", clean(mt))
	}
	return readCapped(resp.Body, maxMetadataBytes)
}
