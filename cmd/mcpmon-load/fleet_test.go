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

// TestAcceptErrorsCounted: the fleet server's failed accepts are counted
// and shown once; the rest of its log passes through.
func TestAcceptErrorsCounted(t *testing.T) {
	var out strings.Builder
	a := &acceptErrors{w: &out}
	lines := []string{
		"listening\n",
		"2026/12/07 09:22:24 http: Accept error: accept tcp 127.0.0.1:37117: accept4: too many open files; retrying in 5ms\n",
		"2026/12/07 09:22:24 http: Accept error: accept tcp 127.0.0.1:37117: accept4: too many open files; retrying in 10ms\n",
		"a session ended\n",
	}
	for _, l := range lines {
		if n, err := a.Write([]byte(l)); err != nil || n != len(l) {
			t.Fatalf("Write(%q) = %d, %v", l, n, err)
		}
	}
	if got := a.n.Load(); got != 2 {
		t.Errorf("counted %d failed accepts, want 2", got)
	}
	if got := out.String(); strings.Count(got, "Accept error") != 1 || !strings.Contains(got, "listening") || !strings.Contains(got, "a session ended") {
		t.Errorf("passed through:\n%s\nwant the other lines and the first accept error only", got)
	}
}
