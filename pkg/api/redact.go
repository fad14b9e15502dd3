package api

import (
	"bytes"
	"encoding/json"
	"net/url"
	"strings"

	"github.com/mcpmon/mcpmon/pkg/store/sealed"
)

// secretKeyParts mark a sinks-document key whose string value is a secret:
// tokens, passwords, routing and API keys, HMAC secrets, and URLs (Slack
// and generic webhook URLs carry their credentials in the path or query).
var secretKeyParts = []string{"secret", "token", "password", "passwd", "key", "url", "webhook", "auth", "credential", "dsn"}

// RedactSinks is the default SinkRedactor: it replaces the value of every
// object member whose name contains one of secretKeyParts (case-insensitive),
// at any depth, with "<redacted>". Non-JSON input is redacted whole. Sink
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
			if isSecretKey(k) && child != nil {
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

func isSecretKey(k string) bool {
	k = strings.ToLower(k)
	for _, part := range secretKeyParts {
		if strings.Contains(k, part) {
			return true
		}
	}
	return false
}

// RedactURL returns raw with the value of every credential-like query
// parameter (sealed.IsSecretParam: key, token, api_key, sig, …) replaced by
// "<redacted>". The rest of the URL is kept byte for byte, so a client that
// sends the URL back unchanged in a PATCH keeps the stored values.
func RedactURL(raw string) string {
	return mapSecretParams(raw, func(string, string, int) (string, bool) { return Redacted, true })
}

// mapSecretParams rewrites the values of raw's non-empty credential-like
// query parameters with f(name, rawValue, n), n counting earlier parameters
// of the same name; f returns false to keep a value.
func mapSecretParams(raw string, f func(name, rawValue string, n int) (string, bool)) string {
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
		if !hasVal || val == "" || !sealed.IsSecretParam(name) {
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

// isPlaceholder reports whether a raw query value is "<redacted>", as sent
// or percent-encoded by a client.
func isPlaceholder(rawValue string) bool {
	v, err := url.QueryUnescape(rawValue)
	return rawValue == Redacted || err == nil && v == Redacted
}

// redactedParam names the first credential-like query parameter of raw
// whose value is the redaction placeholder, or "".
func redactedParam(raw string) string {
	found := ""
	mapSecretParams(raw, func(name, v string, _ int) (string, bool) {
		if found == "" && isPlaceholder(v) {
			found = name
		}
		return "", false
	})
	return found
}
