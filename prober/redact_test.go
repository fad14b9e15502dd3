package prober

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestRedactionScrubsOnlyTheTargetsWords: a configured secret that is also
// an ordinary word is scrubbed from what the server said, never from
// mcpmon's own messages.
func TestRedactionScrubsOnlyTheTargetsWords(t *testing.T) {
	tests := []struct {
		name     string
		headers  map[string]string
		h        rpcFunc
		want     []string // substrings of the error
		wantNot  []string
		wantName string
	}{
		{
			name:    "token equal to a word of the auth_rejected message",
			headers: map[string]string{"Authorization": "wrong"},
			h: func(w http.ResponseWriter, r *http.Request, _ string, _ json.RawMessage) {
				w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
				w.WriteHeader(401)
			},
			want: []string{"(expired or wrong?)"},
		},
		{
			name:    "server echoes the key in its JSON-RPC error",
			headers: map[string]string{"X-Api-Key": "wrong"},
			h: goodRaw(map[string]func(http.ResponseWriter, json.RawMessage){
				"initialize": func(w http.ResponseWriter, id json.RawMessage) {
					writeJSON(w, 200, map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": -32603, "message": "key wrong is wrong"}})
				},
			}),
			want:    []string{"initialize answered with JSON-RPC error -32603: key [REDACTED] is [REDACTED]"},
			wantNot: []string{"key wrong"},
		},
		{
			name:    "server name echoes the token",
			headers: map[string]string{"Authorization": "Bearer initialize-token"},
			h: goodRaw(map[string]func(http.ResponseWriter, json.RawMessage){
				"initialize": func(w http.ResponseWriter, id json.RawMessage) {
					ir := initResult(Version20251125)
					ir["serverInfo"] = map[string]any{"name": "for initialize-token", "version": "1"}
					writeJSON(w, 200, result(id, ir))
				},
				"tools/list": func(w http.ResponseWriter, id json.RawMessage) {
					writeJSON(w, 500, map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": -32603, "message": "initialize-token expired"}})
				},
			}),
			want:     []string{"tools/list failed: tools/list: HTTP 500"},
			wantName: "for [REDACTED]",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ep := endpoint(rpcServer(t, tc.h).URL)
			ep.ProtocolVersion = Version20251125
			ep.Headers = tc.headers
			res := testProber(t, nil).Probe(context.Background(), ep, cmd())
			for _, s := range tc.want {
				mustContain(t, res.Error, s)
			}
			for _, s := range tc.wantNot {
				if strings.Contains(res.Error, s) {
					t.Errorf("error %q contains %q", res.Error, s)
				}
			}
			if tc.wantName != "" && res.ServerName != tc.wantName {
				t.Errorf("server name %q, want %q", res.ServerName, tc.wantName)
			}
			for _, v := range tc.headers {
				if len(v) >= 6 && strings.Contains(string(res.Body()), v) {
					t.Errorf("secret in result: %s", res.Body())
				}
			}
		})
	}
}
