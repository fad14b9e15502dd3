package prober

import (
	"bytes"
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

// FuzzToolsPage: decodeToolsPage reads a tools/list result as
// json.Unmarshal does while the tools fit in room (the same tools, cursor
// and failure), and past room keeps exactly room of them. Seeds include a
// page of thousands of tools, the attack that made every tool cost.
func FuzzToolsPage(f *testing.F) {
	f.Add([]byte(`{"tools":[{"name":"a"},{"name":"b"}],"nextCursor":"c"}`), uint8(5))
	f.Add([]byte(`{"TOOLS":[1],"NextCursor":"x","tools":[2,3],"toolſ":[4]}`), uint8(5))
	f.Add([]byte(`{"tools":null,"nextCursor":5}`), uint8(1))
	f.Add([]byte(`{"tools":[`+strings.Repeat(`{"name":"t"},`, 5000)+`{"name":"t"}]}`), uint8(3))
	f.Fuzz(func(t *testing.T, res []byte, room uint8) {
		if !json.Valid(res) {
			return // parseRPC refuses it before
		}
		pg, err := decodeToolsPage(res, int(room))
		var lr struct {
			Tools      []json.RawMessage `json:"tools"`
			NextCursor string            `json:"nextCursor"`
		}
		uerr := json.Unmarshal(res, &lr)
		if pg.over {
			if err != nil || len(pg.tools) != int(room) {
				t.Fatalf("over with %d tools (room %d), err %v", len(pg.tools), room, err)
			}
			return
		}
		if (err != nil) != (uerr != nil) {
			t.Fatalf("decodeToolsPage err %v, Unmarshal err %v", err, uerr)
		}
		if err != nil {
			return
		}
		if len(pg.tools) != len(lr.Tools) || pg.nextCursor != lr.NextCursor {
			t.Fatalf("%d tools, cursor %q; Unmarshal %d, %q", len(pg.tools), pg.nextCursor, len(lr.Tools), lr.NextCursor)
		}
		for i := range pg.tools {
			if !bytes.Equal(pg.tools[i], lr.Tools[i]) {
				t.Fatalf("tool %d: %s, Unmarshal %s", i, pg.tools[i], lr.Tools[i])
			}
		}
	})
}
