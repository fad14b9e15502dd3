package status

import (
	"errors"
	"net/http"
)

// Hosts serves each status page with a custom host at the root of that
// host: a GET or HEAD whose Host (port stripped, any case) is a page's
// host, proven unless Options.UnverifiedHosts (PagesIndex), gets the page
// at /, its JSON at /index.json and its feed at /feed.atom. Every other
// request, and every request of a host no page may serve (unknown, or
// still unverified), goes to next unchanged; so do those three paths when the page index
// cannot be read, since nothing then says the host is a page's. Wrap the
// listener's whole handler with it.
func Hosts(c *Cache) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			rep, ok := hostPaths[r.URL.Path]
			if !ok || r.Method != http.MethodGet && r.Method != http.MethodHead {
				next.ServeHTTP(w, r)
				return
			}
			rp, err := c.HostPage(r.Context(), r.Host)
			if err != nil {
				if !errors.Is(err, ErrNotFound) {
					c.log.Warn("status page hosts unreadable", "err", err)
				}
				next.ServeHTTP(w, r)
				return
			}
			rp.serve(w, r, rep)
		})
	}
}

// hostPaths are the paths a page's custom host serves the page at.
var hostPaths = map[string]representation{"/": repHTML, "/index.json": repJSON, "/feed.atom": repFeed}
