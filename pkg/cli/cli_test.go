package cli

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestAnotherServerAtServerIsNamed: --server pointing at an HTTP server
// that is not mcpmon (an HTML 404 or 501) fails with one line asking
// whether it is one, naming the URL and how to change it; its 404 is an
// error (1), not "not found" (3): nothing named on the command line is
// missing.
func TestAnotherServerAtServerIsNamed(t *testing.T) {
	for _, status := range []int{http.StatusNotFound, http.StatusNotImplemented} {
		other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(status)
			_, _ = w.Write([]byte("<html><body>Error response</body></html>"))
		}))
		h := &harness{t: t, env: map[string]string{"MCPMON_SERVER": other.URL}}
		h.fails(ExitError, "is "+other.URL+" an mcpmon server? set --server or MCPMON_SERVER", "endpoints", "list")
		other.Close()
	}
}
