package model

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
)

// This file is the one redaction rule: the marker that stands for a hidden
// secret, which names mark a secret, and how a secret value or URL renders.
// Callers hide a secret by wrapping it in Secret or SecretURL, or by passing
// a URL through RedactURL; none writes the marker or a name list itself
// (TestRedactionHasOneHome checks).

// Redacted stands for a hidden secret wherever one is rendered: API
// responses, logs, errors, notifications. Clients send it back in a PATCH
// to keep a stored value, so it is part of the API contract
// (pkg/api/openapi.yaml).
const Redacted = "<redacted>"

// ScrubbedText stands for a secret found in text a target sent back (an
// error message, a tool description) and cut out before the text is stored
// or fingerprinted. It differs from Redacted on purpose and must not
// change: stored catalog fingerprints contain it, so another marker would
// make every endpoint report a catalog change after an upgrade.
const ScrubbedText = "[REDACTED]"

// Secret is a value that must never be printed: a header value, a token, a
// password, an HMAC key. Every rendering (fmt verbs, JSON, text, slog) is
// Redacted, or "" for an empty Secret so that "not set" stays visible.
// Reveal is the only way to the value, for the code that sends it.
type Secret string

// Reveal returns the secret itself, for the code that must send it.
func (s Secret) Reveal() string { return string(s) }

// String is Redacted, or "" for an empty secret.
func (s Secret) String() string {
	if s == "" {
		return ""
	}
	return Redacted
}

// GoString keeps %#v redacted.
func (s Secret) GoString() string { return "model.Secret(" + quote(s.String()) + ")" }

// Format renders every verb from the redacted text, so %x or %q cannot
// reach the value either.
func (s Secret) Format(f fmt.State, verb rune) { format(f, verb, s.String(), s.GoString()) }

// MarshalText is the redacted text.
func (s Secret) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// MarshalJSON is the redacted text as a JSON string.
func (s Secret) MarshalJSON() ([]byte, error) { return []byte(quote(s.String())), nil }

// LogValue makes slog print the redacted text.
func (s Secret) LogValue() slog.Value { return slog.StringValue(s.String()) }

// RedactValue renders a secret-bearing value of an endpoint (a header
// value, the OAuth client secret, a tool argument): Redacted, or the value
// as written when it is nothing but agent-side references (AgentOnly,
// secretref.go), which name secrets the agent holds without holding one.
func RedactValue(v string) string {
	if AgentOnly(v) {
		return v
	}
	return Redacted
}

// RedactLeaves renders a decoded JSON document of secret-bearing values
// (a tool check's arguments) in place: every string leaf as RedactValue,
// every other scalar as Redacted, nulls kept, so the shape stays visible.
func RedactLeaves(v any) any {
	switch t := v.(type) {
	case string:
		return RedactValue(t)
	case map[string]any:
		for k, c := range t {
			t[k] = RedactLeaves(c)
		}
		return t
	case []any:
		for i := range t {
			t[i] = RedactLeaves(t[i])
		}
		return t
	case nil:
		return nil
	}
	return Redacted
}

// SecretURL is a URL that is itself a credential: a Slack or webhook URL
// carries its key in the path or the query. It renders as scheme and host
// only, so an operator can tell which receiver is meant, with a path and a
// query each shown as Redacted; a URL without a host renders as Redacted.
// Reveal is the only way to the URL, for the code that sends to it.
type SecretURL string

// Reveal returns the URL itself, for the code that must send to it.
func (u SecretURL) Reveal() string { return string(u) }

// String is the URL with everything but scheme and host hidden.
func (u SecretURL) String() string {
	if u == "" {
		return ""
	}
	p, err := url.Parse(string(u))
	if err != nil || p.Host == "" {
		return Redacted
	}
	out := p.Scheme + "://" + p.Host
	if p.Path != "" && p.Path != "/" {
		out += "/" + Redacted
	}
	if p.RawQuery != "" {
		out += "?" + Redacted
	}
	return out
}

// Origin is the URL's scheme and host alone, with no marker for a path or
// a query: where a receiver is named for its owner and nothing more
// (a webhook subscriber in GET /v1/status-pages/{id}/subscribers). A URL
// without a host is Redacted.
func (u SecretURL) Origin() string {
	if u == "" {
		return ""
	}
	p, err := url.Parse(string(u))
	if err != nil || p.Host == "" {
		return Redacted
	}
	return p.Scheme + "://" + p.Host
}

// GoString keeps %#v redacted.
func (u SecretURL) GoString() string { return "model.SecretURL(" + quote(u.String()) + ")" }

// Format renders every verb from the redacted text.
func (u SecretURL) Format(f fmt.State, verb rune) { format(f, verb, u.String(), u.GoString()) }

// MarshalText is the redacted text.
func (u SecretURL) MarshalText() ([]byte, error) { return []byte(u.String()), nil }

// MarshalJSON is the redacted text as a JSON string.
func (u SecretURL) MarshalJSON() ([]byte, error) { return []byte(quote(u.String())), nil }

// LogValue makes slog print the redacted text.
func (u SecretURL) LogValue() slog.Value { return slog.StringValue(u.String()) }

var (
	_ fmt.Formatter  = Secret("")
	_ fmt.GoStringer = Secret("")
	_ slog.LogValuer = Secret("")
	_ fmt.Formatter  = SecretURL("")
	_ fmt.GoStringer = SecretURL("")
	_ slog.LogValuer = SecretURL("")
)

func format(f fmt.State, verb rune, text, goText string) {
	if verb == 'v' && f.Flag('#') {
		fmt.Fprint(f, goText)
		return
	}
	fmt.Fprintf(f, fmt.FormatString(f, verb), text)
}

// quote is a JSON string of s; the marker needs no escaping beyond
// strconv's, and "<" and ">" stay readable (no HTML escaping).
func quote(s string) string { return fmt.Sprintf("%q", s) }

// secretParamExact and secretParamParts name credential-like URL query
// parameters: exact names for short ones that are parts of ordinary words
// ("sig" in "design"), parts for the rest. Case, '-' and '_' are ignored.
var (
	secretParamExact = map[string]bool{"sig": true, "code": true, "pwd": true, "pass": true, "jwt": true, "sas": true}
	secretParamParts = []string{"key", "token", "secret", "passw", "auth", "credential", "signature", "session", "apikey", "bearer"}
)

// IsSecretParam reports whether a URL query parameter's name looks like a
// credential (key, token, api_key, access_token, sig, X-Amz-Signature, …).
// It errs on the side of hiding.
func IsSecretParam(name string) bool {
	n := strings.NewReplacer("-", "", "_", "").Replace(strings.ToLower(name))
	if secretParamExact[n] {
		return true
	}
	for _, p := range secretParamParts {
		if strings.Contains(n, p) {
			return true
		}
	}
	return false
}

// secretFieldParts mark a sinks-document member whose string value is a
// secret: tokens, passwords, routing and API keys, HMAC secrets, and URLs
// (Slack and generic webhook URLs carry their credentials in the path or
// query).
var secretFieldParts = []string{"secret", "token", "password", "passwd", "key", "url", "webhook", "auth", "credential", "dsn"}

// IsSecretField reports whether a member name of a JSON document of
// receiver settings (a sinks document) names a secret: it contains one of
// secretFieldParts, ignoring case. It errs on the side of hiding.
func IsSecretField(name string) bool {
	name = strings.ToLower(name)
	for _, part := range secretFieldParts {
		if strings.Contains(name, part) {
			return true
		}
	}
	return false
}

// credentialHeaderWords mark a credential header wherever they appear in
// its name.
var credentialHeaderWords = []string{"token", "secret", "auth", "password", "credential"}

// IsCredentialHeader reports whether an HTTP header named name carries a
// credential: Authorization, Proxy-Authorization or Cookie, one whose name
// contains one of credentialHeaderWords (X-Auth-Token, X-Client-Secret), or
// one with a part (split at - and _) that is or ends in "key" (X-Api-Key,
// Api-Key, Apikey, Ocp-Apim-Subscription-Key). Case is ignored.
func IsCredentialHeader(name string) bool {
	n := strings.ToLower(name)
	switch n {
	case "authorization", "proxy-authorization", "cookie":
		return true
	}
	for _, word := range credentialHeaderWords {
		if strings.Contains(n, word) {
			return true
		}
	}
	for _, part := range strings.FieldsFunc(n, func(r rune) bool { return r == '-' || r == '_' }) {
		if strings.HasSuffix(part, "key") {
			return true
		}
	}
	return false
}

// RedactURL renders raw with its credentials hidden: the user info, if any
// ("user:pw@"; a token alone is a user name), is dropped and the value of
// every non-empty credential-like query parameter (IsSecretParam) becomes
// Redacted. Everything else is kept byte for byte, so a client that sends
// the URL back unchanged can be matched to the stored one (see
// MapSecretParams). raw need not parse.
func RedactURL(raw string) string {
	return MapSecretParams(dropUserinfo(raw), func(string, string, int) (string, bool) { return Redacted, true })
}

// dropUserinfo removes the user info of raw's authority.
func dropUserinfo(raw string) string {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return raw
	}
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	at := strings.LastIndex(rest[:end], "@")
	if at < 0 {
		return raw
	}
	return scheme + "://" + rest[at+1:]
}

// MapSecretParams rewrites the values of raw's non-empty credential-like
// query parameters with f(name, rawValue, n): name is decoded, rawValue is
// as written, n counts earlier parameters of the same name. f returns false
// to keep a value. Every other byte of raw is kept.
func MapSecretParams(raw string, f func(name, rawValue string, n int) (string, bool)) string {
	base, query, ok := strings.Cut(raw, "?")
	if !ok {
		return raw
	}
	query, frag, hasFrag := strings.Cut(query, "#")
	pairs := strings.Split(query, "&")
	seen := map[string]int{}
	for i, pair := range pairs {
		rawName, val, hasVal := strings.Cut(pair, "=")
		name := rawName
		if n, err := url.QueryUnescape(rawName); err == nil {
			name = n
		}
		if !hasVal || val == "" || !IsSecretParam(name) {
			continue
		}
		if v, ok := f(name, val, seen[name]); ok {
			pairs[i] = rawName + "=" + v
		}
		seen[name]++
	}
	out := base + "?" + strings.Join(pairs, "&")
	if hasFrag {
		out += "#" + frag
	}
	return out
}

// Scrub replaces every occurrence in text of each non-empty secret, in the
// order given, with Redacted: for error texts that may quote a value the
// caller knows (a password, a receiver URL). Callers that fear matching
// ordinary words leave short candidates out.
func Scrub(text string, secrets ...string) string {
	for _, s := range secrets {
		if s != "" {
			text = strings.ReplaceAll(text, s, Redacted)
		}
	}
	return text
}

// QuerySecrets returns the (decoded) values of rawURL's credential-like
// query parameters, empty ones left out.
func QuerySecrets(rawURL string) []string {
	var out []string
	MapSecretParams(rawURL, func(_, val string, _ int) (string, bool) {
		if v, err := url.QueryUnescape(val); err == nil {
			val = v
		}
		out = append(out, val)
		return "", false
	})
	return out
}

// RedactSinks is the default sinks redactor (the API's views, apply's plan): it replaces the value of every
// object member whose name marks a secret (IsSecretField), at any
// depth, with "<redacted>". Non-JSON input is redacted whole. Sink
// packages that know their own shapes can pass a precise redactor instead;
// this one errs on the side of hiding.
func RedactSinks(sinks json.RawMessage) json.RawMessage {
	var doc any
	dec := json.NewDecoder(bytes.NewReader(sinks))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		return json.RawMessage(`"` + Redacted + `"`)
	}
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(redactValue(doc)); err != nil {
		return json.RawMessage(`"` + Redacted + `"`)
	}
	return bytes.TrimSpace(out.Bytes())
}

func redactValue(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, child := range t {
			if IsSecretField(k) && child != nil {
				if _, nested := child.(map[string]any); !nested {
					t[k] = Redacted
					continue
				}
			}
			t[k] = redactValue(child)
		}
		return t
	case []any:
		for i := range t {
			t[i] = redactValue(t[i])
		}
		return t
	}
	return v
}
