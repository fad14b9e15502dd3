package prober

import (
	"encoding/json"
	"strings"
	"testing"
)

// FuzzCatalog: for any tools/list result and any token-like secret the
// endpoint holds, the catalog built from it holds the secret in none of
// its strings (the target may have echoed it anywhere, in any case),
// stays within every cap, and is the same catalog when the tools come in
// the opposite order.
func FuzzCatalog(f *testing.F) {
	f.Add([]byte(`{"tools":[{"name":"search","description":"Search.","inputSchema":{"type":"object","properties":{"q":{"type":"string"}}}}]}`), "tok-9f8e7d6c")
	f.Add([]byte(`{"tools":[{"name":"t-TOK-9F8E7D6C","description":"dG9rLTlmOGU3ZDZj","inputSchema":{"tok-9f8e7d6c":{"enum":["tok%2D9f8e7d6c"]}}}]}`), "tok-9f8e7d6c")
	f.Add([]byte(`{"tools":[{"name":"a","inputSchema":`+strings.Repeat(`{"a":`, 40)+`1`+strings.Repeat(`}`, 40)+`}]}`), "secret42")
	f.Add([]byte(`{"tools":[{"name":"a","inputSchema":{"default":12345678}}]}`), "12345678")
	f.Add([]byte(`{"tools":[{"name":"a","description":"`+strings.Repeat("x", 9000)+`secret42"}]}`), "secret42")
	small := catalogLimits{tools: 20, bytes: 8192, description: 256, schemaBytes: 1024, schemaDepth: 8}
	f.Fuzz(func(t *testing.T, page []byte, secret string) {
		var lr struct {
			Tools []json.RawMessage `json:"tools"`
		}
		if json.Unmarshal(page, &lr) != nil {
			lr.Tools = []json.RawMessage{page}
		}
		// A token-like secret: letters, digits and '-', with a digit, so
		// that it cannot be spelled by the [REDACTED] marker around it.
		if len(secret) < minDerivedLen || strings.Trim(secret, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-") != "" || !strings.ContainsAny(secret, "0123456789") {
			secret = "tok-9f8e7d6c"
		}
		c := buildCatalog(lr.Tools, newScrubber(map[string]string{"X-Api-Key": secret}), small, false)
		lower := strings.ToLower(secret)
		for _, s := range catalogStrings(c) {
			if strings.Contains(strings.ToLower(s), lower) {
				t.Fatalf("the secret %q survives in %q", secret, s)
			}
		}
		if len(c.Tools) > small.tools || len(canonJSON(c.Tools)) > small.bytes {
			t.Fatalf("%d tools in %d bytes, caps %d and %d", len(c.Tools), len(canonJSON(c.Tools)), small.tools, small.bytes)
		}
		for _, tool := range c.Tools {
			if len(tool.Description) > small.description+len("…") || len(canonJSON(tool.InputSchema)) > small.schemaBytes {
				t.Fatalf("tool %q over a field cap: description %d, schema %d", tool.Name, len(tool.Description), len(canonJSON(tool.InputSchema)))
			}
		}
		rev := make([]json.RawMessage, len(lr.Tools))
		for i, r := range lr.Tools {
			rev[len(rev)-1-i] = r
		}
		if again := buildCatalog(rev, newScrubber(map[string]string{"X-Api-Key": secret}), small, false); again.Fingerprint != c.Fingerprint {
			t.Fatal("the same tools in the opposite order built another catalog")
		}
	})
}
