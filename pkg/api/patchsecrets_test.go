package api_test

import (
	"net/http"
	"strings"
	"testing"

	apiv1 "github.com/mcpmon/mcpmon/pkg/api/v1"
)

// TestQuerySecretsAreRedactedAndKept: credential-like query parameters of
// an endpoint URL are redacted in every view; sending the redacted URL
// back keeps the stored values; a placeholder with nothing to keep is
// refused.
func TestQuerySecretsAreRedactedAndKept(t *testing.T) {
	h := newHarness(t)
	const real = "https://mcp.example/mcp?tenant=acme&api_key=QS-SECRET-1&sig=QS-SECRET-2"
	ep := h.create(`{"name":"q","url":"` + real + `"}`)
	want := "https://mcp.example/mcp?tenant=acme&api_key=<redacted>&sig=<redacted>"
	if ep.URL != want {
		t.Fatalf("created view URL %q, want %q", ep.URL, want)
	}
	path := "/v1/endpoints/" + ep.ID
	for _, p := range []string{"GET " + path, "GET /v1/endpoints"} {
		method, route, _ := strings.Cut(p, " ")
		if _, body := h.do(method, route, "", ""); strings.Contains(string(body), "QS-SECRET") {
			t.Fatalf("%s shows a query secret: %s", p, body)
		}
	}

	for _, sent := range []string{want, strings.ReplaceAll(want, "<redacted>", "%3Credacted%3E")} {
		var v apiv1.EndpointView
		h.mustJSON("PATCH", path, `{"url":"`+strings.Replace(sent, "tenant=acme", "tenant=other", 1)+`"}`, http.StatusOK, &v)
		got, _ := h.store.GetEndpoint(t.Context(), ep.ID)
		if got.URL != strings.Replace(real, "tenant=acme", "tenant=other", 1) {
			t.Fatalf("after PATCH with %q the stored URL is %q, want the secrets kept", sent, got.URL)
		}
		h.mustJSON("PATCH", path, `{"url":"`+real+`"}`, http.StatusOK, &v)
	}

	resp, body := h.do("PATCH", path, "", `{"url":"https://mcp.example/mcp?token=<redacted>"}`)
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), `query parameter \"token\" is the redaction placeholder`) {
		t.Fatalf("placeholder for a parameter never stored: %d %s", resp.StatusCode, body)
	}
	resp, body = h.do("POST", "/v1/endpoints", "", `{"name":"p","url":"https://mcp.example/mcp?key=<redacted>"}`)
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("create with a placeholder: %d %s", resp.StatusCode, body)
	}
}

// TestNewOriginDropsStoredHeaders is the decision table for a PATCH's
// URL: the same origin keeps headers (and "<redacted>" keeps a value); a
// new scheme, host or port drops every header the request does not send
// again, and says so.
func TestNewOriginDropsStoredHeaders(t *testing.T) {
	const create = `{"name":"o","url":"https://mcp.example/mcp","headers":{"Authorization":"Bearer HDR-SECRET","X-Api-Key":"KEY-SECRET"}}`
	for _, tc := range []struct {
		name, patch string
		want        map[string]string // stored headers after
		warn        string            // substring of the warning; "" = none
	}{
		{"path only", `{"url":"https://mcp.example/other"}`,
			map[string]string{"Authorization": "Bearer HDR-SECRET", "X-Api-Key": "KEY-SECRET"}, ""},
		{"explicit default port, host case", `{"url":"https://MCP.example:443/mcp","headers":{"Authorization":"<redacted>"}}`,
			map[string]string{"Authorization": "Bearer HDR-SECRET", "X-Api-Key": "KEY-SECRET"}, ""},
		{"new host", `{"url":"https://evil.example/mcp"}`, map[string]string{}, "Authorization, X-Api-Key"},
		{"new port", `{"url":"https://mcp.example:8443/mcp"}`, map[string]string{}, "Authorization, X-Api-Key"},
		{"new scheme", `{"url":"http://mcp.example/mcp"}`, map[string]string{}, "Authorization"},
		{"new host, redacted sent back", `{"url":"https://evil.example/mcp","headers":{"Authorization":"<redacted>"}}`, map[string]string{}, "Authorization, X-Api-Key"},
		{"new host, one supplied again", `{"url":"https://new.example/mcp","headers":{"authorization":"Bearer NEW"}}`,
			map[string]string{"Authorization": "Bearer NEW"}, "dropped the stored header(s) X-Api-Key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			ep := h.create(create)
			var v apiv1.EndpointView
			h.mustJSON("PATCH", "/v1/endpoints/"+ep.ID, tc.patch, http.StatusOK, &v)
			got, _ := h.store.GetEndpoint(t.Context(), ep.ID)
			if len(got.Headers) != len(tc.want) {
				t.Fatalf("stored headers %v, want %v", got.Headers, tc.want)
			}
			for k, val := range tc.want {
				if got.Headers[k] != val {
					t.Fatalf("stored headers %v, want %v", got.Headers, tc.want)
				}
			}
			warnings := strings.Join(v.Warnings, "\n")
			if (tc.warn == "") != (warnings == "") || !strings.Contains(warnings, tc.warn) {
				t.Fatalf("warnings %q, want %q", warnings, tc.warn)
			}
			if strings.Contains(warnings, "SECRET") {
				t.Fatalf("a warning quotes a secret: %q", warnings)
			}
		})
	}
}
