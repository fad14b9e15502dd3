package api

import (
	"net/url"
	"strings"

	"github.com/mcpmon/mcpmon/pkg/model"
)

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
