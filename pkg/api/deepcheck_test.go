package api_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpmon/mcpmon/pkg/api"
	apiv1 "github.com/mcpmon/mcpmon/pkg/api/v1"
	"github.com/mcpmon/mcpmon/pkg/seal"
	"github.com/mcpmon/mcpmon/pkg/store/bolt"
	"github.com/mcpmon/mcpmon/pkg/store/sealed"
)

const (
	argSecret    = "acct-ARG-SECRET-4711"
	clientSecret = "cs-CLIENT-SECRET-0815"
)

const deepBody = `{"name":"deep","url":"https://mcp.example/mcp",
	"toolCheck":{"name":"health","arguments":{"account":"` + argSecret + `","opts":{"verbose":true,"ids":[1,2]}},
	             "expect":{"contains":"ok","jsonPath":"$.status","equals":"green"}},
	"oauth":{"tokenUrl":"https://auth.example/oauth/token","clientId":"probe","clientSecret":"` + clientSecret + `","scopes":["mcp:read"],"audience":"https://mcp.example"},
	"credentialWarning":"48h"}`

// TestDeepCheckFieldsRoundTripRedacted: the tool check, OAuth client and
// warning window are stored as sent and returned with every argument value
// and the client secret redacted, on every route.
func TestDeepCheckFieldsRoundTripRedacted(t *testing.T) {
	h := newHarness(t)
	v := h.create(deepBody)
	if v.ToolCheck == nil || v.ToolCheck.Name != "health" || v.ToolCheck.Expect == nil || v.ToolCheck.Expect.JSONPath != "$.status" ||
		string(v.ToolCheck.Expect.Equals) != `"green"` {
		t.Fatalf("toolCheck view %+v", v.ToolCheck)
	}
	var args map[string]any
	if err := json.Unmarshal(v.ToolCheck.Arguments, &args); err != nil || args["account"] != apiv1.Redacted {
		t.Fatalf("arguments view %s: want each value redacted", v.ToolCheck.Arguments)
	}
	if opts, _ := args["opts"].(map[string]any); opts["verbose"] != apiv1.Redacted {
		t.Fatalf("nested argument %v not redacted", args["opts"])
	}
	if v.OAuth == nil || v.OAuth.ClientSecret != apiv1.Redacted || v.OAuth.ClientID != "probe" || v.OAuth.TokenURL != "https://auth.example/oauth/token" ||
		v.CredentialWarning != "48h0m0s" {
		t.Fatalf("oauth view %+v, warning %q", v.OAuth, v.CredentialWarning)
	}
	stored, err := h.store.GetEndpoint(t.Context(), v.ID)
	if err != nil {
		t.Fatal(err)
	}
	if stored.OAuth.ClientSecret != clientSecret || !strings.Contains(string(stored.ToolCheck.Arguments), argSecret) ||
		stored.CredentialWarning.Hours() != 48 || stored.OAuth.Audience != "https://mcp.example" {
		t.Fatalf("stored %+v %+v", stored.ToolCheck, stored.OAuth)
	}

	path := "/v1/endpoints/" + v.ID
	// The GET form sent back unchanged keeps every stored secret.
	_, got := h.do("GET", path, "", "")
	var form map[string]any
	_ = json.Unmarshal(got, &form)
	back, _ := json.Marshal(map[string]any{"toolCheck": form["toolCheck"], "oauth": form["oauth"]})
	h.mustJSON("PATCH", path, string(back), http.StatusOK, nil)
	h.mustJSON("PATCH", path, `{"name":"deep-2"}`, http.StatusOK, nil)
	after, _ := h.store.GetEndpoint(t.Context(), v.ID)
	if after.OAuth.ClientSecret != clientSecret || !sameJSON(after.ToolCheck.Arguments, stored.ToolCheck.Arguments) {
		t.Fatalf("after PATCHes: %s %+v, want the stored secrets kept", after.ToolCheck.Arguments, after.OAuth)
	}
	h.do("GET", "/v1/endpoints", "", "")

	h.mu.Lock()
	transcript := h.transcript.String()
	h.mu.Unlock()
	for _, s := range []string{argSecret, clientSecret} {
		if strings.Contains(transcript, s) {
			t.Errorf("secret %q is in a response", s)
		}
		if strings.Contains(h.logs.String(), s) {
			t.Errorf("secret %q is in the log", s)
		}
	}
}

// TestDeepCheckValidation: every bad deep-check field is a 400
// problem+json naming it, and never quoting a secret.
func TestDeepCheckValidation(t *testing.T) {
	h := newHarness(t, func(o *api.Options) {
		o.TargetValidator = func(raw string) error {
			if strings.Contains(raw, "169.254.169.254") {
				return errors.New("target address not allowed")
			}
			return nil
		}
	})
	base := func(extra string) string {
		return `{"name":"x","url":"https://mcp.example/mcp",` + extra + `}`
	}
	oauth := func(fields string) string {
		return base(`"oauth":{` + fields + `}`)
	}
	for _, tc := range []struct {
		name, body, pointer string
	}{
		{"tool name missing", base(`"toolCheck":{}`), "#/toolCheck/name"},
		{"tool name with a newline", base(`"toolCheck":{"name":"a\nb"}`), "#/toolCheck/name"},
		{"tool name too long", base(`"toolCheck":{"name":"` + strings.Repeat("t", 129) + `"}`), "#/toolCheck/name"},
		{"arguments not an object", base(`"toolCheck":{"name":"t","arguments":[1]}`), "#/toolCheck/arguments"},
		{"arguments with the placeholder", base(`"toolCheck":{"name":"t","arguments":{"k":"<redacted>"}}`), "#/toolCheck/arguments"},
		{"bad json path", base(`"toolCheck":{"name":"t","expect":{"jsonPath":"$..x"}}`), "#/toolCheck/expect/jsonPath"},
		{"equals without a path", base(`"toolCheck":{"name":"t","expect":{"equals":1}}`), "#/toolCheck/expect/equals"},
		{"contains too long", base(`"toolCheck":{"name":"t","expect":{"contains":"` + strings.Repeat("c", 1025) + `"}}`), "#/toolCheck/expect/contains"},
		{"token URL not http", oauth(`"tokenUrl":"ftp://a/token","clientId":"c","clientSecret":"` + clientSecret + `"`), "#/oauth/tokenUrl"},
		{"token URL with a query", oauth(`"tokenUrl":"https://a/token?x=1","clientId":"c","clientSecret":"` + clientSecret + `"`), "#/oauth/tokenUrl"},
		{"token URL blocked by the SSRF guard", oauth(`"tokenUrl":"http://169.254.169.254/token","clientId":"c","clientSecret":"` + clientSecret + `"`), "#/oauth/tokenUrl"},
		{"client ID missing", oauth(`"tokenUrl":"https://a/token","clientSecret":"` + clientSecret + `"`), "#/oauth/clientId"},
		{"client secret missing", oauth(`"tokenUrl":"https://a/token","clientId":"c"`), "#/oauth/clientSecret"},
		{"client secret placeholder", oauth(`"tokenUrl":"https://a/token","clientId":"c","clientSecret":"<redacted>"`), "#/oauth/clientSecret"},
		{"scope with a space", oauth(`"tokenUrl":"https://a/token","clientId":"c","clientSecret":"` + clientSecret + `","scopes":["a b"]`), "#/oauth/scopes/0"},
		{"oauth and an Authorization header", base(`"headers":{"Authorization":"Bearer x"},"oauth":{"tokenUrl":"https://a/token","clientId":"c","clientSecret":"` + clientSecret + `"}`), "#/oauth"},
		{"warning not a duration", base(`"credentialWarning":"3 days"`), "#/credentialWarning"},
		{"warning too short", base(`"credentialWarning":"1s"`), "#/credentialWarning"},
		{"unknown member", base(`"toolCheck":{"name":"t","argz":{}}`), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, b := h.do("POST", "/v1/endpoints", "", tc.body)
			if resp.StatusCode != http.StatusBadRequest || resp.Header.Get("Content-Type") != "application/problem+json" {
				t.Fatalf("%d %s %s, want a 400 problem+json", resp.StatusCode, resp.Header.Get("Content-Type"), b)
			}
			if tc.pointer != "" && !strings.Contains(string(b), `"pointer":"`+tc.pointer+`"`) {
				t.Fatalf("problem %s does not name %s", b, tc.pointer)
			}
			if strings.Contains(string(b), clientSecret) {
				t.Fatalf("the problem quotes the client secret: %s", b)
			}
		})
	}
}

// TestPatchDeepCheckSecretsFollowTheirOrigin: a PATCH that moves the token
// URL to another origin must send the client secret again; one that moves
// the endpoint's URL drops the stored tool arguments with a warning.
func TestPatchDeepCheckSecretsFollowTheirOrigin(t *testing.T) {
	h := newHarness(t)
	v := h.create(deepBody)
	path := "/v1/endpoints/" + v.ID

	resp, b := h.do("PATCH", path, "", `{"oauth":{"tokenUrl":"https://evil.example/token"}}`)
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), "#/oauth/clientSecret") {
		t.Fatalf("PATCH tokenUrl alone: %d %s, want 400 naming #/oauth/clientSecret", resp.StatusCode, b)
	}
	h.mustJSON("PATCH", path, `{"oauth":{"tokenUrl":"https://auth2.example/token","clientSecret":"new-secret-1234"}}`, http.StatusOK, nil)
	if e, _ := h.store.GetEndpoint(t.Context(), v.ID); e.OAuth.ClientSecret != "new-secret-1234" || e.OAuth.TokenURL != "https://auth2.example/token" {
		t.Fatalf("stored oauth %+v", e.OAuth)
	}

	// Moving the URL sends the tokens elsewhere: the secret must come along.
	resp, b = h.do("PATCH", path, "", `{"url":"https://other.example/mcp"}`)
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), "#/oauth/clientSecret") {
		t.Fatalf("PATCH url alone with OAuth: %d %s, want 400 naming #/oauth/clientSecret", resp.StatusCode, b)
	}
	var moved apiv1.EndpointView
	h.mustJSON("PATCH", path, `{"url":"https://other.example/mcp","oauth":{"clientSecret":"new-secret-1234"}}`, http.StatusOK, &moved)
	if len(moved.Warnings) == 0 || !strings.Contains(strings.Join(moved.Warnings, " "), "tool check arguments") {
		t.Fatalf("warnings %v, want the dropped tool arguments named", moved.Warnings)
	}
	if e, _ := h.store.GetEndpoint(t.Context(), v.ID); len(e.ToolCheck.Arguments) != 0 || e.ToolCheck.Name != "health" {
		t.Fatalf("tool check after the move: %+v", e.ToolCheck)
	}
	// A placeholder cannot pull a value over to the new origin either.
	resp, b = h.do("PATCH", path, "", `{"url":"https://third.example/mcp","toolCheck":{"arguments":{"account":"<redacted>"}}}`)
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), "#/toolCheck/arguments") {
		t.Fatalf("placeholder to another origin: %d %s", resp.StatusCode, b)
	}
}

// TestDeepCheckSecretsAreSealedInTheBoltFile: through the sealing store
// the daemon uses, store.db never holds the tool argument or the client
// secret in plaintext.
func TestDeepCheckSecretsAreSealedInTheBoltFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sealed.db")
	b, err := bolt.Open(path, bolt.Options{SweepInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	k, err := seal.NewKeyring(seal.NewKey())
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, func(o *api.Options) { o.Store = sealed.Wrap(b, k) })
	v := h.create(deepBody)
	h.mustJSON("PATCH", "/v1/endpoints/"+v.ID, `{"name":"deep-sealed"}`, http.StatusOK, nil)
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(raw, []byte("deep-sealed")) {
		t.Fatal("the file does not hold the endpoint: the grep proves nothing")
	}
	for _, s := range []string{argSecret, clientSecret} {
		if bytes.Contains(raw, []byte(s)) {
			t.Errorf("store file holds %q in plaintext", s)
		}
	}
}

func sameJSON(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return bytes.Equal(xa, ya)
}
