package api

import (
	"fmt"
	"net/url"
	"sort"
	"strings"

	apiv1 "github.com/mcpmon/mcpmon/pkg/api/v1"
	"github.com/mcpmon/mcpmon/pkg/model"
)

// carrySecrets decides which stored secrets a PATCH keeps, given in (the
// stored endpoint with the patch merged in), cur (the stored endpoint) and
// patch (the request's merge patch). It edits in and returns the warnings
// the response carries.
//
// Secrets belong to an origin. While the URL's scheme, host and port stay
// the same, a "<redacted>" sent back (a GET body edited and re-sent) keeps
// the stored value, for header values and for credential-like query
// parameters alike. When the origin changes, every stored header value is
// dropped unless this very request supplies it again, and placeholders in
// the new URL are not filled in (toEndpoint refuses them): otherwise a
// PATCH of only `url` would make the prober hand the old target's
// credentials to the new one. Per-endpoint sinks are kept: they go to the
// operator's alert receivers, never to the probed target.
func carrySecrets(in *apiv1.EndpointInput, cur model.Endpoint, patch map[string]any) []string {
	if sameOrigin(in.URL, cur.URL) {
		for k, v := range in.Headers {
			if v == Redacted {
				if old, ok := lookupHeader(cur.Headers, k); ok {
					in.Headers[k] = old
				}
			}
		}
		in.URL = restoreURLSecrets(strings.TrimSpace(in.URL), cur.URL)
		return nil
	}
	supplied := map[string]bool{}
	if hs, ok := patch["headers"].(map[string]any); ok {
		for k, v := range hs {
			if s, ok := v.(string); ok && s != Redacted {
				supplied[k] = true
			}
		}
	}
	var dropped []string
	for k := range in.Headers {
		if !supplied[k] {
			delete(in.Headers, k)
			dropped = append(dropped, k)
		}
	}
	if len(dropped) == 0 {
		return nil
	}
	sort.Strings(dropped)
	return []string{fmt.Sprintf("the URL's origin changed (%s to %s): dropped the stored header(s) %s, whose values were for the old origin; send them again in the same PATCH to keep them",
		origin(cur.URL), origin(in.URL), strings.Join(dropped, ", "))}
}

// restoreURLSecrets fills each "<redacted>" credential-like query value of
// next with the stored value of the same parameter (the nth of its name)
// in cur, if there is one.
func restoreURLSecrets(next, cur string) string {
	stored := map[string][]string{}
	model.MapSecretParams(cur, func(name, v string, _ int) (string, bool) {
		stored[name] = append(stored[name], v)
		return "", false
	})
	return model.MapSecretParams(next, func(name, v string, n int) (string, bool) {
		if !isPlaceholder(v) || n >= len(stored[name]) {
			return "", false
		}
		return stored[name][n], true
	})
}

// sameOrigin compares scheme, host and port (default ports filled in); an
// unparseable URL has no origin and matches nothing.
func sameOrigin(a, b string) bool {
	oa, ob := origin(strings.TrimSpace(a)), origin(strings.TrimSpace(b))
	return oa != "" && oa == ob
}

// origin is scheme://host:port of raw, lower-cased, or "".
func origin(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return ""
	}
	scheme := strings.ToLower(u.Scheme)
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[scheme]
	}
	host := strings.ToLower(u.Hostname())
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	return scheme + "://" + host + ":" + port
}
