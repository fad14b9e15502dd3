package status

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
)

// CacheControl is sent with every public response: browsers and CDNs keep
// a page a minute and may serve it five more while they revalidate.
const CacheControl = "public, max-age=60, stale-while-revalidate=300"

// Handler serves GET /status (with Options.PublicIndex), /status/{slug},
// /status/{slug}.json, /status/{slug}/feed.atom and /badge/{slug}.svg
// from c. Mount it on /status, /status/ and /badge/.
func Handler(c *Cache) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /status", func(w http.ResponseWriter, r *http.Request) {
		if !c.publicIndex {
			notFound(w)
			return
		}
		ov, err := c.Overview(r.Context())
		if err != nil {
			c.fail(w, r, err)
			return
		}
		serve(w, r, "text/html; charset=utf-8", ov.ETagHTML, ov.HTML)
	})
	mux.HandleFunc("GET /status/{file}", func(w http.ResponseWriter, r *http.Request) {
		file := r.PathValue("file")
		slug, isJSON := strings.CutSuffix(file, ".json")
		rd, err := c.Get(r.Context(), slug)
		if err != nil {
			c.fail(w, r, err)
			return
		}
		if isJSON {
			serve(w, r, "application/json", rd.ETagJSON, rd.JSON)
			return
		}
		serve(w, r, "text/html; charset=utf-8", rd.ETagHTML, rd.HTML)
	})
	mux.HandleFunc("GET /status/{slug}/feed.atom", func(w http.ResponseWriter, r *http.Request) {
		rd, err := c.Get(r.Context(), r.PathValue("slug"))
		if err != nil {
			c.fail(w, r, err)
			return
		}
		serve(w, r, FeedContentType, rd.ETagFeed, rd.Feed)
	})
	mux.HandleFunc("GET /badge/{file}", func(w http.ResponseWriter, r *http.Request) {
		slug, ok := strings.CutSuffix(r.PathValue("file"), ".svg")
		if !ok {
			notFound(w)
			return
		}
		rd, err := c.Get(r.Context(), slug)
		if err != nil {
			c.fail(w, r, err)
			return
		}
		serve(w, r, "image/svg+xml", rd.ETagSVG, rd.SVG)
	})
	return mux
}

// csp allows the page its inline CSS and same-origin badge, and nothing
// else: no scripts, no third-party requests.
const csp = "default-src 'none'; style-src 'unsafe-inline'; img-src 'self'; base-uri 'none'; form-action 'none'"

func serve(w http.ResponseWriter, r *http.Request, ctype, tag string, body []byte) {
	h := w.Header()
	h.Set("Cache-Control", CacheControl)
	h.Set("ETag", tag)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Content-Security-Policy", csp)
	if noneMatch(r.Header.Get("If-None-Match"), tag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	h.Set("Content-Type", ctype)
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(body)
	}
}

// noneMatch reports whether If-None-Match lists tag (weak comparison, as
// RFC 9110 asks for If-None-Match) or is "*".
func noneMatch(header, tag string) bool {
	if header == "" {
		return false
	}
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimPrefix(strings.TrimSpace(t), "W/")
		if t == "*" || t == tag {
			return true
		}
	}
	return false
}

func notFound(w http.ResponseWriter) {
	w.Header().Set("Cache-Control", CacheControl)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	http.Error(w, "no public status page here", http.StatusNotFound)
}

func (c *Cache) fail(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(err, ErrNotFound) {
		notFound(w)
		return
	}
	c.log.Error("status page", "path", r.URL.Path, "err", err)
	w.Header().Set("Cache-Control", "no-store")
	http.Error(w, "status temporarily unavailable", http.StatusServiceUnavailable)
}
