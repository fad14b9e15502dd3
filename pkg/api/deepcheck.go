package api

// deepcheck.go owns the API side of an endpoint's credentialed deep checks:
// the tool check (toolCheck), the OAuth client-credentials client (oauth)
// and the credential expiry warning window (credentialWarning). It
// validates them into model.Endpoint fields, redacts their secrets in
// views — the tool check's argument values and the OAuth client secret are
// secrets like header values: stored sealed, never returned — and decides
// which stored secrets a PATCH keeps.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	apiv1 "github.com/mcpmon/mcpmon/pkg/api/v1"
	"github.com/mcpmon/mcpmon/pkg/jsonpath"
	"github.com/mcpmon/mcpmon/pkg/model"
)

// Credential warning bounds; the size caps are in caps.go.
const (
	minCredentialWarn = time.Minute
	maxCredentialWarn = 365 * 24 * time.Hour
)

// deepChecks validates in's deep-check fields into e, reporting through bad.
func (s *server) deepChecks(in apiv1.EndpointInput, e *model.Endpoint, bad func(ptr, format string, args ...any)) {
	if tc := in.ToolCheck; tc != nil {
		e.ToolCheck = toolCheck(tc, bad)
	}
	if o := in.OAuth; o != nil {
		e.OAuth = s.oauthClient(o, bad)
		if _, ok := lookupHeader(e.Headers, "Authorization"); ok {
			bad("#/oauth", "cannot be combined with an Authorization header: the OAuth token is the probe's Authorization")
		}
	}
	if in.CredentialWarning != "" {
		d, err := time.ParseDuration(in.CredentialWarning)
		switch {
		case len(in.CredentialWarning) > maxDurationLen:
			bad("#/credentialWarning", "must be at most %d characters", maxDurationLen)
		case err != nil:
			bad("#/credentialWarning", "must be a Go duration such as \"72h\"")
		case d < minCredentialWarn || d > maxCredentialWarn:
			bad("#/credentialWarning", "must be between %s and %s", minCredentialWarn, maxCredentialWarn)
		default:
			e.CredentialWarning = d
		}
	}
}

func toolCheck(in *apiv1.ToolCheckInput, bad func(ptr, format string, args ...any)) *model.ToolCheck {
	tc := &model.ToolCheck{Name: in.Name}
	switch {
	case in.Name == "":
		bad("#/toolCheck/name", "is required")
	case len(in.Name) > maxToolNameLen:
		bad("#/toolCheck/name", "must be at most %d bytes", maxToolNameLen)
	case !utf8.ValidString(in.Name) || !validHeaderValue(in.Name) || strings.ContainsRune(in.Name, '\t'):
		// It travels in the Mcp-Name header under 2026-07-28.
		bad("#/toolCheck/name", "must be valid UTF-8 without control characters")
	}
	if args := bytes.TrimSpace(in.Arguments); len(args) > 0 && !bytes.Equal(args, []byte("null")) {
		var obj map[string]any
		switch detail := toolArgsCapProblem(args); {
		case detail != "":
			bad("#/toolCheck/arguments", "%s", detail)
		case json.Unmarshal(args, &obj) != nil || obj == nil:
			bad("#/toolCheck/arguments", "must be a JSON object")
		case hasPlaceholder(obj):
			bad("#/toolCheck/arguments", "contains the redaction placeholder; send the real values (in a PATCH on the same origin, a placeholder keeps the stored value of that member)")
		default:
			tc.Arguments = json.RawMessage(bytes.Clone(args))
		}
	}
	if x := in.Expect; x != nil {
		ex := &model.ToolExpect{Contains: x.Contains, JSONPath: x.JSONPath}
		if len(x.Contains) > maxExpectContains || !utf8.ValidString(x.Contains) {
			bad("#/toolCheck/expect/contains", "must be valid UTF-8 of at most %d bytes", maxExpectContains)
		}
		if len(x.JSONPath) > maxJSONPathLen {
			bad("#/toolCheck/expect/jsonPath", "must be at most %d bytes", maxJSONPathLen)
		} else if x.JSONPath != "" {
			if _, err := jsonpath.Parse(x.JSONPath); err != nil {
				bad("#/toolCheck/expect/jsonPath", "%v (the dialect: $ then .name, [\"name\"] or [index] steps)", err)
			}
		}
		if eq := bytes.TrimSpace(x.Equals); len(eq) > 0 {
			switch {
			case x.JSONPath == "":
				bad("#/toolCheck/expect/equals", "needs jsonPath: it is the value jsonPath must select")
			case len(eq) > maxExpectEquals:
				bad("#/toolCheck/expect/equals", "must be at most %d bytes", maxExpectEquals)
			case !json.Valid(eq):
				bad("#/toolCheck/expect/equals", "must be a JSON value")
			default:
				ex.Equals = json.RawMessage(bytes.Clone(eq))
			}
		}
		if ex.Contains != "" || ex.JSONPath != "" {
			tc.Expect = ex
		}
	}
	return tc
}

func (s *server) oauthClient(in *apiv1.OAuthInput, bad func(ptr, format string, args ...any)) *model.OAuthClient {
	o := &model.OAuthClient{TokenURL: strings.TrimSpace(in.TokenURL), ClientID: in.ClientID, ClientSecret: in.ClientSecret, Audience: in.Audience}
	if o.TokenURL == "" {
		// Discovered by the prober at each token fetch, every URL through
		// the SSRF guard.
	} else if detail := model.URLProblem(o.TokenURL); detail != "" {
		bad("#/oauth/tokenUrl", "%s", detail)
	} else if strings.Contains(o.TokenURL, "?") {
		bad("#/oauth/tokenUrl", "must not carry a query: client credentials go in clientId and clientSecret")
	} else if s.validURL != nil {
		// The prober dials it like a probe target: the same SSRF guard.
		if err := s.validURL(o.TokenURL); err != nil {
			bad("#/oauth/tokenUrl", "target refused: %v", err)
		}
	}
	switch {
	case o.ClientID == "":
		bad("#/oauth/clientId", "is required")
	case len(o.ClientID) > maxClientIDLen || textProblem(o.ClientID) != "":
		bad("#/oauth/clientId", "must be text of at most %d bytes without control characters", maxClientIDLen)
	}
	switch {
	case o.ClientSecret == "":
		bad("#/oauth/clientSecret", "is required")
	case o.ClientSecret == Redacted:
		bad("#/oauth/clientSecret", "is the redaction placeholder; send the real value")
	case len(o.ClientSecret) > maxClientSecretLen || !validHeaderValue(o.ClientSecret):
		bad("#/oauth/clientSecret", "must be at most %d bytes without control characters", maxClientSecretLen)
	}
	if len(in.Scopes) > maxScopes {
		bad("#/oauth/scopes", "at most %d scopes", maxScopes)
	}
	for i, sc := range in.Scopes {
		if sc == "" || len(sc) > maxScopeLen || strings.ContainsAny(sc, " \"\\") || !validHeaderValue(sc) {
			bad(fmt.Sprintf("#/oauth/scopes/%d", i), "a scope is 1 to %d printable characters without spaces, quotes or backslashes", maxScopeLen)
		}
	}
	if len(in.Scopes) > 0 {
		o.Scopes = append([]string(nil), in.Scopes...)
	}
	if len(o.Audience) > maxAudienceLen || textProblem(o.Audience) != "" && o.Audience != "" {
		bad("#/oauth/audience", "must be text of at most %d bytes", maxAudienceLen)
	}
	return o
}

// hasPlaceholder reports whether any string value in v is "<redacted>".
func hasPlaceholder(v any) bool {
	switch t := v.(type) {
	case string:
		return t == Redacted
	case map[string]any:
		for _, c := range t {
			if hasPlaceholder(c) {
				return true
			}
		}
	case []any:
		for _, c := range t {
			if hasPlaceholder(c) {
				return true
			}
		}
	}
	return false
}

// toolCheckView is the tool check as the API returns it.
func toolCheckView(tc *model.ToolCheck) *apiv1.ToolCheckInput {
	if tc == nil {
		return nil
	}
	v := &apiv1.ToolCheckInput{Name: tc.Name}
	if len(tc.Arguments) > 0 {
		var doc any
		if json.Unmarshal(tc.Arguments, &doc) != nil {
			v.Arguments = json.RawMessage(`"` + Redacted + `"`)
		} else {
			b, _ := json.Marshal(model.RedactLeaves(doc))
			v.Arguments = b
		}
	}
	if x := tc.Expect; x != nil {
		v.Expect = &apiv1.ToolExpectInput{Contains: x.Contains, JSONPath: x.JSONPath, Equals: x.Equals}
	}
	return v
}

// oauthView is the OAuth client as the API returns it: no secret.
func oauthView(o *model.OAuthClient) *apiv1.OAuthInput {
	if o == nil {
		return nil
	}
	v := &apiv1.OAuthInput{TokenURL: o.TokenURL, ClientID: o.ClientID, Scopes: o.Scopes, Audience: o.Audience}
	if o.ClientSecret != "" {
		v.ClientSecret = model.RedactValue(o.ClientSecret)
	}
	return v
}

// deepCheckInput is the stored deep-check configuration as input (real
// secrets: server-side only), the base a PATCH merges into.
func deepCheckInput(e model.Endpoint, in *apiv1.EndpointInput) {
	if tc := e.ToolCheck; tc != nil {
		in.ToolCheck = &apiv1.ToolCheckInput{Name: tc.Name, Arguments: tc.Arguments}
		if x := tc.Expect; x != nil {
			in.ToolCheck.Expect = &apiv1.ToolExpectInput{Contains: x.Contains, JSONPath: x.JSONPath, Equals: x.Equals}
		}
	}
	if o := e.OAuth; o != nil {
		in.OAuth = &apiv1.OAuthInput{TokenURL: o.TokenURL, ClientID: o.ClientID, ClientSecret: o.ClientSecret, Scopes: o.Scopes, Audience: o.Audience}
	}
	if e.CredentialWarning > 0 {
		in.CredentialWarning = e.CredentialWarning.String()
	}
}

// carryDeepSecrets decides which stored deep-check secrets a PATCH keeps,
// as carrySecrets does for headers; in is the stored endpoint with the
// patch merged in. Tool arguments go to the endpoint's URL: on the same
// origin a "<redacted>" member keeps its stored value; on another origin
// stored arguments the patch does not send again are dropped (with a
// warning). The client secret goes to the token URL and its tokens to the
// endpoint's URL: "<redacted>" keeps it while both origins and the client
// ID stay; otherwise the secret must be sent again (a 400 otherwise), or a
// PATCH of only tokenUrl (or url) would hand the secret (or fresh tokens)
// to whoever runs the new server.
func carryDeepSecrets(in *apiv1.EndpointInput, cur model.Endpoint, patch map[string]any) (warnings []string, errs []apiv1.FieldError) {
	if tc := in.ToolCheck; tc != nil && cur.ToolCheck != nil && len(cur.ToolCheck.Arguments) > 0 {
		sameURL := sameOrigin(in.URL, cur.URL)
		tp, _ := patch["toolCheck"].(map[string]any)
		_, argsSent := tp["arguments"]
		switch {
		case sameURL:
			tc.Arguments = restorePlaceholders(tc.Arguments, cur.ToolCheck.Arguments)
		case !argsSent && len(tc.Arguments) > 0:
			tc.Arguments = nil
			warnings = append(warnings, fmt.Sprintf("the URL's origin changed (%s to %s): dropped the stored tool check arguments, whose values were for the old origin; send them again in the same PATCH to keep them",
				origin(cur.URL), origin(in.URL)))
		}
	}
	if o := in.OAuth; o != nil && cur.OAuth != nil && cur.OAuth.ClientSecret != "" {
		op, _ := patch["oauth"].(map[string]any)
		sent, _ := op["clientSecret"].(string)
		// The token it yields goes to the endpoint's URL: moving that to
		// another origin needs the secret again too.
		// Both token URLs discovered: the endpoint URL's origin decides.
		sameToken := o.TokenURL == "" && cur.OAuth.TokenURL == "" || sameOrigin(o.TokenURL, cur.OAuth.TokenURL)
		same := sameToken && o.ClientID == cur.OAuth.ClientID && sameOrigin(in.URL, cur.URL)
		switch {
		case same && o.ClientSecret == Redacted:
			o.ClientSecret = cur.OAuth.ClientSecret
		case !same && (sent == "" || sent == Redacted):
			errs = append(errs, apiv1.FieldError{Pointer: "#/oauth/clientSecret", Detail: "the token URL's origin, the client ID or the endpoint URL's origin changed: send the client secret again in the same PATCH (a stored secret, and the tokens it yields, are not handed to another server)"})
		}
	}
	return warnings, errs
}

// restorePlaceholders replaces each "<redacted>" in sent with the value at
// the same place in stored, where there is one.
func restorePlaceholders(sent, stored json.RawMessage) json.RawMessage {
	var s, old any
	if json.Unmarshal(sent, &s) != nil || json.Unmarshal(stored, &old) != nil || !hasPlaceholder(s) {
		return sent
	}
	var walk func(s, old any) any
	walk = func(s, old any) any {
		switch t := s.(type) {
		case string:
			if t == Redacted && old != nil {
				if _, isObj := old.(map[string]any); !isObj {
					return old
				}
			}
			return t
		case map[string]any:
			om, _ := old.(map[string]any)
			for k, c := range t {
				t[k] = walk(c, om[k])
			}
			return t
		case []any:
			oa, _ := old.([]any)
			for i, c := range t {
				var o any
				if i < len(oa) {
					o = oa[i]
				}
				t[i] = walk(c, o)
			}
			return t
		}
		return s
	}
	b, err := json.Marshal(walk(s, old))
	if err != nil {
		return sent
	}
	return b
}
