package prober

import (
	"context"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"strings"
)

// authError classifies a 401. With credentials configured it is a rejection.
// Without, a Bearer challenge whose OAuth protected-resource metadata
// (RFC 9728) resolves means the server is alive and protected; a bare 401 or
// broken metadata means no client could ever log in.
func (r *run) authError(ctx context.Context, resp *http.Response) error {
	if len(r.ep.Headers) > 0 {
		return failf(ClassAuthRejected, 401, "HTTP 401: the server rejected the endpoint's configured credentials (expired or wrong?)")
	}
	var bearer bool
	var metaURL string
	for _, v := range resp.Header.Values("WWW-Authenticate") {
		if scheme, params, _ := strings.Cut(strings.TrimSpace(v), " "); strings.EqualFold(scheme, "Bearer") {
			bearer = true
			if m := authParam(params, "resource_metadata"); m != "" {
				metaURL = m
			}
		}
	}
	if !bearer {
		return failf(ClassAuthMisconfigured, 401, "HTTP 401 without a WWW-Authenticate Bearer challenge: MCP clients cannot discover how to authorize")
	}
	var candidates []string
	if metaURL != "" {
		ref, err := url.Parse(metaURL)
		if err != nil {
			return failf(ClassAuthMisconfigured, 401, "HTTP 401: resource_metadata is not a URL")
		}
		candidates = append(candidates, r.u.ResolveReference(ref).String())
	} else {
		base := url.URL{Scheme: r.u.Scheme, Host: r.u.Host}
		if p := strings.TrimSuffix(r.u.EscapedPath(), "/"); p != "" {
			base.Path = "/.well-known/oauth-protected-resource" + r.u.Path
			candidates = append(candidates, base.String())
		}
		base.Path = "/.well-known/oauth-protected-resource"
		candidates = append(candidates, base.String())
	}
	var why string
	for _, c := range candidates {
		servers, err := r.fetchResourceMetadata(ctx, c)
		if err == nil {
			return failf(ClassAuthRequired, 401, "HTTP 401: protected by OAuth (authorization servers: %s)", strings.Join(servers, ", "))
		}
		why = err.Error()
	}
	return failf(ClassAuthMisconfigured, 401, "HTTP 401 with a Bearer challenge, but the protected-resource metadata is unusable: %s", why)
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

// fetchResourceMetadata GETs the protected-resource metadata through the same
// guarded client and returns its authorization servers.
func (r *run) fetchResourceMetadata(ctx context.Context, raw string) ([]string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("%s is not a URL", raw)
	}
	if err := r.p.guard.checkURL(u); err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := r.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %s", u.Path, classify(ctx, err).msg)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: HTTP %d", u.Path, resp.StatusCode)
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "application/json" {
		return nil, fmt.Errorf("GET %s: content type %q, want application/json", u.Path, mt)
	}
	b, err := readCapped(resp.Body, 64<<10)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %v", u.Path, err)
	}
	var md struct {
		Resource             string   `json:"resource"`
		AuthorizationServers []string `json:"authorization_servers"`
	}
	if err := json.Unmarshal(b, &md); err != nil {
		return nil, fmt.Errorf("GET %s: invalid JSON", u.Path)
	}
	if md.Resource == "" || len(md.AuthorizationServers) == 0 {
		return nil, fmt.Errorf("GET %s: metadata lacks resource or authorization_servers", u.Path)
	}
	out := make([]string, 0, len(md.AuthorizationServers))
	for _, s := range md.AuthorizationServers {
		out = append(out, clean(s))
	}
	return out, nil
}
