package prober

import (
	"context"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/mcpmon/mcpmon/pkg/model"
)

// authError classifies a 401. With credentials configured it is a rejection.
// Without, a Bearer challenge that leads a client to an authorization server
// means the server is alive and protected; a 401 without a Bearer challenge,
// or one that leads nowhere, means no client could ever log in. A client is
// led there by either revision of the MCP authorization spec:
//
//   - 2025-06-18 and later: protected-resource metadata (RFC 9728), named by
//     the challenge's resource_metadata or at the well-known path;
//   - 2025-03-26, whose challenge names no metadata: authorization server
//     metadata (RFC 8414) at the server's origin, or, absent that, the
//     default endpoints there (see defaultTokenEndpoint).
//
// A challenge that names resource_metadata promised the newer discovery, so
// only the metadata it names counts.
func (r *run) authError(ctx context.Context, resp *http.Response) error {
	if hasCredentials(r.ep.Headers) {
		return failf(ClassAuthRejected, 401, "HTTP 401: the server rejected the endpoint's configured credentials (expired or wrong?)")
	}
	bearer, metaURL := bearerChallenge(resp.Header)
	if !bearer {
		return failf(ClassAuthMisconfigured, 401, "HTTP 401 without a WWW-Authenticate Bearer challenge: MCP clients cannot discover how to authorize")
	}
	if metaURL != "" {
		ref, err := url.Parse(metaURL)
		if err != nil {
			return failf(ClassAuthMisconfigured, 401, "HTTP 401: resource_metadata is not a URL")
		}
		servers, err := r.fetchResourceMetadata(ctx, r.u.ResolveReference(ref).String())
		if err != nil {
			return failf(ClassAuthMisconfigured, 401, "HTTP 401 with a Bearer challenge, but the protected-resource metadata is unusable: %v", err)
		}
		return authRequired(servers)
	}
	var why error
	for _, c := range r.resourceMetadataCandidates() {
		servers, err := r.fetchResourceMetadata(ctx, c)
		if err == nil {
			return authRequired(servers)
		}
		why = err
	}
	issuer, err := r.fetchAuthServerMetadata(ctx)
	if err == nil {
		return failf(ClassAuthRequired, 401, "HTTP 401: protected by OAuth (2025-03-26 discovery: authorization server %s)", fromTarget(issuer))
	}
	if err := r.probeDefaultTokenEndpoint(ctx); err == nil {
		return failf(ClassAuthRequired, 401, "HTTP 401: protected by OAuth (2025-03-26 discovery: no metadata, default endpoints at %s)", r.u.Host)
	}
	return failf(ClassAuthMisconfigured, 401, "HTTP 401 with a Bearer challenge, but the protected-resource metadata is unusable: %v; and there is no authorization server metadata either: %v", why, err)
}

func authRequired(servers []string) *probeError {
	return failf(ClassAuthRequired, 401, "HTTP 401: protected by OAuth (authorization servers: %s)", fromTarget(strings.Join(servers, ", ")))
}

// bearerChallenge reports whether h carries a Bearer challenge and the
// resource_metadata it names, if any.
func bearerChallenge(h http.Header) (bearer bool, metaURL string) {
	for _, v := range h.Values("WWW-Authenticate") {
		if scheme, params, _ := strings.Cut(strings.TrimSpace(v), " "); strings.EqualFold(scheme, "Bearer") {
			bearer = true
			if m := authParam(params, "resource_metadata"); m != "" {
				metaURL = m
			}
		}
	}
	return bearer, metaURL
}

// resourceMetadataCandidates are the RFC 9728 well-known URLs for the
// endpoint: the path-specific one first, then the origin's.
func (r *run) resourceMetadataCandidates() []string {
	var out []string
	base := url.URL{Scheme: r.u.Scheme, Host: r.u.Host}
	if p := strings.TrimSuffix(r.u.EscapedPath(), "/"); p != "" {
		base.Path = "/.well-known/oauth-protected-resource" + r.u.Path
		out = append(out, base.String())
	}
	base.Path = "/.well-known/oauth-protected-resource"
	return append(out, base.String())
}

// hasCredentials reports whether the endpoint's configured headers carry a
// credential (model.IsCredentialHeader), so that a 401 means they were
// refused. Other headers (a trace ID, a tenant) leave a 401 to mean "log in
// first".
func hasCredentials(headers map[string]string) bool {
	for name := range headers {
		if model.IsCredentialHeader(name) {
			return true
		}
	}
	return false
}

// authParam extracts one auth-param (quoted or token) from a challenge.
func authParam(params, name string) string {
	for rest := params; rest != ""; {
		i := strings.Index(strings.ToLower(rest), name+"=")
		if i < 0 {
			return ""
		}
		if i > 0 && rest[i-1] != ' ' && rest[i-1] != ',' && rest[i-1] != '\t' {
			rest = rest[i+len(name):]
			continue
		}
		v := rest[i+len(name)+1:]
		if strings.HasPrefix(v, `"`) {
			if end := strings.IndexByte(v[1:], '"'); end >= 0 {
				return v[1 : end+1]
			}
			return ""
		}
		if end := strings.IndexAny(v, ", \t"); end >= 0 {
			return v[:end]
		}
		return v
	}
	return ""
}

// fetchResourceMetadata GETs the protected-resource metadata (RFC 9728)
// and returns its authorization servers.
func (r *run) fetchResourceMetadata(ctx context.Context, raw string) ([]string, error) {
	var md struct {
		Resource             string   `json:"resource"`
		AuthorizationServers []string `json:"authorization_servers"`
	}
	path, err := r.getMetadata(ctx, raw, &md)
	if err != nil {
		return nil, err
	}
	if md.Resource == "" || len(md.AuthorizationServers) == 0 {
		return nil, fmt.Errorf("GET %s: metadata lacks resource or authorization_servers", path)
	}
	out := make([]string, 0, len(md.AuthorizationServers))
	for _, s := range md.AuthorizationServers {
		out = append(out, s) // scrubbed, then cleaned, where rendered
	}
	return out, nil
}

// fetchAuthServerMetadata GETs the authorization server metadata (RFC 8414)
// where the 2025-03-26 spec puts it: at the origin of the MCP server URL, its
// path discarded. It returns the issuer.
func (r *run) fetchAuthServerMetadata(ctx context.Context) (string, error) {
	var md struct {
		Issuer                string `json:"issuer"`
		AuthorizationEndpoint string `json:"authorization_endpoint"`
		TokenEndpoint         string `json:"token_endpoint"`
	}
	u := url.URL{Scheme: r.u.Scheme, Host: r.u.Host, Path: "/.well-known/oauth-authorization-server"}
	path, err := r.getMetadata(ctx, u.String(), &md)
	if err != nil {
		return "", err
	}
	if md.Issuer == "" || (md.AuthorizationEndpoint == "" && md.TokenEndpoint == "") {
		return "", fmt.Errorf("GET %s: metadata lacks issuer or endpoints", path)
	}
	return md.Issuer, nil // scrubbed, then cleaned, where rendered
}

// getMetadata GETs a JSON metadata document through the probe's guarded
// client (the SSRF guard applies to every hop) into v, and returns the path
// fetched for messages.
func (r *run) getMetadata(ctx context.Context, raw string, v any) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("%s is not a URL", raw)
	}
	if err := r.p.guard.CheckURL(u); err != nil {
		return "", err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return "", err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := r.client.Do(req)
	if err != nil {
		return "", fmt.Errorf("GET %s: %w", u.Path, classify(ctx, err))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s: HTTP %d", u.Path, resp.StatusCode)
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "application/json" {
		return "", fmt.Errorf("GET %s: content type %q, want application/json", u.Path, mt)
	}
	b, err := readCapped(resp.Body, 64<<10)
	if err != nil {
		return "", fmt.Errorf("GET %s: %v", u.Path, err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return "", fmt.Errorf("GET %s: invalid JSON", u.Path)
	}
	return u.Path, nil
}

// tokenErrors are the error codes of an OAuth token endpoint (RFC 6749
// section 5.2): an answer carrying one proves a token endpoint is there.
var tokenErrors = []string{"invalid_request", "invalid_client", "invalid_grant", "unauthorized_client", "unsupported_grant_type", "invalid_scope"}

// probeDefaultTokenEndpoint checks the 2025-03-26 fallback for a server
// without metadata: the default /token endpoint at the origin. It sends a
// token request without a code or client, which no authorization server can
// honour, so it changes nothing there; what proves the endpoint is an OAuth
// answer: one of the RFC 6749 errors, or a token (test servers grant one to
// anybody). A 401 that answers everything, or a 404, is no token endpoint.
func (r *run) probeDefaultTokenEndpoint(ctx context.Context) error {
	u := &url.URL{Scheme: r.u.Scheme, Host: r.u.Host, Path: "/token"}
	if err := r.p.guard.CheckURL(u); err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), strings.NewReader("grant_type=authorization_code"))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	resp, err := r.client.Do(req)
	if err != nil {
		return fmt.Errorf("POST /token: %w", classify(ctx, err))
	}
	defer resp.Body.Close()
	b, _ := readCapped(resp.Body, 64<<10)
	var tr struct {
		Error       string `json:"error"`
		AccessToken string `json:"access_token"`
	}
	_ = json.Unmarshal(b, &tr)
	switch {
	case resp.StatusCode == http.StatusOK && tr.AccessToken != "":
		return nil
	case (resp.StatusCode == http.StatusBadRequest || resp.StatusCode == http.StatusUnauthorized) && slices.Contains(tokenErrors, tr.Error):
		return nil
	}
	return fmt.Errorf("POST /token: HTTP %d without an OAuth token response", resp.StatusCode)
}
