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
// /status/{slug}.json, /status/{slug}/feed.atom, /badge/{slug}.svg and
// /badge/{slug}/conformance.svg from c. Mount it on /status, /status/
// and /badge/. A slug held by both a status page and a public endpoint
// (two writes that raced) serves the page; the endpoint keeps its badge.
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
		serve(w, r, "text/html; charset=utf-8", ov.ETagHTML, ov.HTML, csp)
	})
	mux.HandleFunc("GET /status/{file}", func(w http.ResponseWriter, r *http.Request) {
		file := r.PathValue("file")
		slug, isJSON := strings.CutSuffix(file, ".json")
		rep := repHTML
		if isJSON {
			rep = repJSON
		}
		if c.servePage(w, r, slug, rep) {
			return
		}
		rd, err := c.Get(r.Context(), slug)
		if err != nil {
			c.fail(w, r, err)
			return
		}
		if isJSON {
			serve(w, r, "application/json", rd.ETagJSON, rd.JSON, csp)
			return
		}
		serve(w, r, "text/html; charset=utf-8", rd.ETagHTML, rd.HTML, csp)
	})
	mux.HandleFunc("GET /status/{slug}/feed.atom", func(w http.ResponseWriter, r *http.Request) {
		if c.servePage(w, r, r.PathValue("slug"), repFeed) {
			return
		}
		rd, err := c.Get(r.Context(), r.PathValue("slug"))
		if err != nil {
			c.fail(w, r, err)
			return
		}
		serve(w, r, FeedContentType, rd.ETagFeed, rd.Feed, csp)
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
		serve(w, r, "image/svg+xml", rd.ETagSVG, rd.SVG, csp)
	})
	mux.HandleFunc("GET /badge/{slug}/conformance.svg", func(w http.ResponseWriter, r *http.Request) {
		rd, err := c.Get(r.Context(), r.PathValue("slug"))
		if err != nil {
			c.fail(w, r, err)
			return
		}
		if rd.ConformanceSVG == nil {
			notFound(w) // not opted in: the same answer as an unknown slug
			return
		}
		serve(w, r, "image/svg+xml", rd.ETagConformanceSVG, rd.ConformanceSVG, csp)
	})
	return mux
}

// csp allows the page its inline CSS and same-origin badge, and nothing
// else: no scripts, no third-party requests.
const csp = "default-src 'none'; style-src 'unsafe-inline'; img-src 'self'; base-uri 'none'; form-action 'none'"

// servePage answers with the status page of slug, in representation rep,
// and reports whether it did: false (nothing written) when no page has the
// slug, so the caller serves the endpoint's.
func (c *Cache) servePage(w http.ResponseWriter, r *http.Request, slug string, rep representation) bool {
	rp, err := c.StatusPage(r.Context(), slug)
	if errors.Is(err, ErrNotFound) {
		return false
	}
	if err != nil {
		c.fail(w, r, err)
		return true
	}
	rp.serve(w, r, rep)
	return true
}

// representation is one of a status page's three responses.
type representation int

const (
	repHTML representation = iota
	repJSON
	repFeed
)

func (rp *RenderedPage) serve(w http.ResponseWriter, r *http.Request, rep representation) {
	switch rep {
	case repJSON:
		serve(w, r, "application/json", rp.ETagJSON, rp.JSON, csp)
	case repFeed:
		serve(w, r, FeedContentType, rp.ETagFeed, rp.Feed, csp)
	default:
		serve(w, r, "text/html; charset=utf-8", rp.ETagHTML, rp.HTML, rp.CSP)
	}
}

func serve(w http.ResponseWriter, r *http.Request, ctype, tag string, body []byte, csp string) {
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
