package api

import (
	"bytes"
	"encoding/json"
	"strings"
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
