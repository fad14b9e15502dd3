package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestCountHandshakesCountsInitializeOnly: the steady-state figures divide
// by this count, so a discover, a request inside a session or the peer's
// handshake must not count, and the body must still reach the server.
func TestCountHandshakesCountsInitializeOnly(t *testing.T) {
	var got []string
	h := countHandshakes(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got = append(got, string(b))
	}))
	post := func(path, session, body string) {
		r := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
		if session != "" {
			r.Header.Set("Mcp-Session-Id", session)
		}
		h.ServeHTTP(httptest.NewRecorder(), r)
	}
	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`
	post("/e/1", "", `{"jsonrpc":"2.0","id":1,"method":"server/discover"}`)
	post("/e/1", "", initialize)
	post("/e/1", "s1", `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	post("/e/2", "", " "+initialize)
	post("/e/peer", "", initialize)
	post("/other", "", initialize)

	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, handshakesPath, nil))
	if n := strings.TrimSpace(rec.Body.String()); n != "2" {
		t.Errorf("count = %s, want 2 (the two endpoint initializes)", n)
	}
	if len(got) != 6 || got[1] != initialize {
		t.Errorf("bodies the server saw = %q, want all six, unchanged", got)
	}
}
