package api

import (
	"bytes"
	"encoding/json"
	"net/url"
	"strings"

	"github.com/mcpmon/mcpmon/pkg/model"
)

// RedactSinks is the default SinkRedactor: it replaces the value of every
// object member whose name marks a secret (model.IsSecretField), at any
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
			if model.IsSecretField(k) && child != nil {
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

// RedactURL is model.RedactURL: the value of every credential-like query
// parameter becomes "<redacted>" and the rest of the URL is kept byte for
// byte, so a client that sends the URL back unchanged in a PATCH keeps the
// stored values (restoreURLSecrets).
func RedactURL(raw string) string { return model.RedactURL(raw) }

// escapedRedacted is the marker as an HTML-escaping JSON encoder writes it
// (json.Marshal's default), so a sinks document echoed back either way is
// recognised.
var escapedRedacted = []byte(strings.NewReplacer("<", `\u003c`, ">", `\u003e`).Replace(Redacted))

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
	model.MapSecretParams(raw, func(name, v string, _ int) (string, bool) {
		if found == "" && isPlaceholder(v) {
			found = name
		}
		return "", false
	})
	return found
}
