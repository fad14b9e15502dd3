package prober

// oauthdiscovery.go finds the token URL of an endpoint whose OAuth client
// names none, the way an MCP client finds its authorization server:
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
// Every URL is fetched through the token client, so the SSRF guard checks
// each one, every connection and every redirect. Discovery runs only when a
// token is fetched (once per token lifetime), never on a cached token.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"strings"
)

// errNoTokenEndpoint is a discovery that found no token URL.
var errNoTokenEndpoint = errors.New("no token endpoint discovered")

// discoverTokenURL returns the token URL of endpointURL's authorization
// server.
func (p *Prober) discoverTokenURL(ctx context.Context, endpointURL string) (string, error) {
	u, err := url.Parse(endpointURL)
	if err != nil || u.Host == "" {
		return "", fmt.Errorf("%w: the endpoint URL is not a URL", errNoTokenEndpoint)
	}
	origin := url.URL{Scheme: u.Scheme, Host: u.Host}
	issuer := ""
	var why []string
	for _, c := range resourceMetadataURLs(u) {
		var md struct {
			AuthorizationServers []string `json:"authorization_servers"`
		}
		if err := p.getJSON(ctx, c, &md); err != nil {
			why = append(why, err.Error())
			continue
		}
		if len(md.AuthorizationServers) == 0 {
			why = append(why, "GET "+pathOf(c)+": no authorization_servers")
			continue
		}
		issuer = md.AuthorizationServers[0]
		break
	}
	legacy := issuer == ""
	if legacy {
		issuer = origin.String() // 2025-03-26: the MCP server's origin
	}
	iss, err := url.Parse(issuer)
	if err != nil || iss.Host == "" || (iss.Scheme != "https" && iss.Scheme != "http") {
		return "", fmt.Errorf("%w: the authorization server %q is not an http(s) URL", errNoTokenEndpoint, clean(issuer))
	}
	for _, c := range authServerMetadataURLs(iss) {
		var md struct {
			TokenEndpoint string `json:"token_endpoint"`
		}
		if err := p.getJSON(ctx, c, &md); err != nil {
			why = append(why, err.Error())
			continue
		}
		if md.TokenEndpoint == "" {
			why = append(why, "GET "+pathOf(c)+": no token_endpoint")
			continue
		}
		return md.TokenEndpoint, nil
	}
	if legacy {
		return origin.JoinPath("token").String(), nil
	}
	return "", fmt.Errorf("%w at %s: %s", errNoTokenEndpoint, iss.Host, strings.Join(why, "; "))
}

// resourceMetadataURLs are RFC 9728's well-known URLs of u: path-specific
// first, then the origin's.
func resourceMetadataURLs(u *url.URL) []string {
	base := url.URL{Scheme: u.Scheme, Host: u.Host}
	var out []string
	if p := strings.TrimSuffix(u.Path, "/"); p != "" {
		base.Path = "/.well-known/oauth-protected-resource" + p
		out = append(out, base.String())
	}
	base.Path = "/.well-known/oauth-protected-resource"
	return append(out, base.String())
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

func pathOf(raw string) string {
	if u, err := url.Parse(raw); err == nil {
		return u.Path
	}
	return raw
}

// getJSON GETs a metadata document through the token client into v.
func (p *Prober) getJSON(ctx context.Context, raw string, v any) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("%s is not a URL", clean(raw))
	}
	if err := p.guard.CheckURL(u); err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := p.tokenClient.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the url.Error repeats the URL
		}
		return fmt.Errorf("GET %s: %v", u.Path, classify(ctx, err))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: HTTP %d", u.Path, resp.StatusCode)
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "application/json" {
		return fmt.Errorf("GET %s: content type %q, want application/json", u.Path, clean(mt))
	}
	b, err := readCapped(resp.Body, 64<<10)
	if err != nil {
		return fmt.Errorf("GET %s: %v", u.Path, err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("GET %s: invalid JSON", u.Path)
	}
	return nil
}
