package api_test

import (
	"strings"
	"testing"

	apiv1 "github.com/mcpmon/mcpmon/pkg/api/v1"
)

// TestSecretsNeverLeave registers an endpoint with secret header values and
// sink secrets, exercises every endpoint route including failing ones that
// carry the secrets in their bodies, and checks that no secret appears in
// any response (status line, headers, body) or log line.
func TestSecretsNeverLeave(t *testing.T) {
	secrets := []string{"sk-live-TOPSECRET-123", "apikey-SECRET-456", "SECRET-HOOK-789", "hmac-SECRET-000", "pd-SECRET-111", "SECRET-CRLF-222", "SECRET-NEW-333"}
	h := newHarness(t)

	ep := h.create(`{"name":"paid","url":"https://paid.example/mcp",
		"headers":{"Authorization":"Bearer sk-live-TOPSECRET-123","X-Api-Key":"apikey-SECRET-456"},
		"sinks":{"webhook":{"url":"https://hooks.example/SECRET-HOOK-789","secret":"hmac-SECRET-000"},
		         "pagerduty":{"routingKey":"pd-SECRET-111","severity":"critical"}}}`)
	path := "/v1/endpoints/" + ep.ID
	if ep.Headers["Authorization"] != apiv1.Redacted || !strings.Contains(string(ep.Sinks), `"severity":"critical"`) {
		t.Fatalf("create response %+v: want redacted headers and non-secret sink fields kept", ep)
	}

	for _, req := range []struct{ method, path, body string }{
		{"GET", path, ""},
		{"GET", "/v1/endpoints", ""},
		{"PATCH", path, `{"name":"paid-2"}`},
		{"PATCH", path, `{"headers":{"X-New":"SECRET-NEW-333"}}`},
		{"PATCH", path, `{"headers":{"X-Api-Key":"SECRET-CRLF-222\r\n"}}`},
		{"PATCH", path, `{"headers":{"Authorization":"Bearer sk-live-TOPSECRET-123"},"timeout":"1h"}`},
		{"PATCH", path, `{"sinks":{"pagerduty":{"routingKey":"pd-SECRET-111","severity":"bogus"}},"schedule":"never"}`},
		{"POST", "/v1/endpoints", `{"name":"x","url":"ftp://x","headers":{"Authorization":"Bearer sk-live-TOPSECRET-123"}}`},
		{"POST", "/v1/endpoints", `{"name":"x","url":"https://x","headers":{"Authorization":"Bearer sk-live-TOPSECRET-123"`},
		{"POST", "/v1/endpoints", `{"name":"x","url":"https://x","headers":{"Authorization":"Bearer sk-live-TOPSECRET-123"},"extra":"apikey-SECRET-456"}`},
		{"POST", "/v1/endpoints", `{"name":"x","url":"https://x","headers":{"Bad Name":"SECRET-HOOK-789"}}`},
		{"GET", path + "/verdicts", ""},
		{"GET", path, ""},
	} {
		h.do(req.method, req.path, "", req.body)
	}
	stored, _ := h.store.GetEndpoint(t.Context(), ep.ID)
	if stored.Headers["Authorization"] != "Bearer sk-live-TOPSECRET-123" || stored.Headers["X-New"] != "SECRET-NEW-333" {
		t.Fatalf("secrets not stored as sent: %v", stored.Headers)
	}
	h.do("DELETE", path, "", "")

	h.mu.Lock()
	transcript := h.transcript.String()
	h.mu.Unlock()
	logs := h.logs.String()
	if !strings.Contains(logs, `"path":"/v1/endpoints/`+ep.ID+`"`) {
		t.Fatalf("no request logs captured: %s", logs)
	}
	for _, s := range secrets {
		if strings.Contains(transcript, s) {
			t.Errorf("secret %q appears in a response:\n%s", s, transcript)
		}
		if strings.Contains(logs, s) {
			t.Errorf("secret %q appears in the log:\n%s", s, logs)
		}
	}
	// The header name that failed validation is reported, its value never.
	if !strings.Contains(transcript, "#/headers/X-Api-Key") {
		t.Error("field problem for the bad header is missing")
	}
}
