package subscribe

import (
	"context"
	"encoding/json"
	"errors"
	"html/template"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/status"
)

// MaxBody bounds a subscribe request's body before it is parsed.
const MaxBody = 4 << 10

// Routes are the patterns Handler serves, for the daemon's mux (beside
// pkg/status on /status/).
var Routes = []string{"/status/{slug}/subscribe", "/status/{slug}/confirm", "/status/{slug}/unsubscribe"}

// accepted is the one answer to a subscribe that was taken, whether the
// address was new, pending or confirmed.
const accepted = "If the address can receive mail, a confirmation link is on its way. Nothing is sent until it is followed."

// Pages finds the status page served at /status/{slug} (status.Cache):
// from an index read at most once a TTL, since anyone may call these
// routes, ErrNotFound (status's) when no page has the slug.
type Pages interface {
	PageOf(ctx context.Context, slug string) (model.StatusPage, error)
}

// Handler serves the public subscription routes (Routes), finding their
// page in pages.
func (s *Service) Handler(pages Pages) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /status/{slug}/subscribe", func(w http.ResponseWriter, r *http.Request) {
		if p, ok := s.page(w, r, pages); ok {
			s.handleSubscribe(w, r, p)
		}
	})
	// A GET changes nothing: mail scanners (and link previews) follow every
	// link in a mail, so a link that confirmed on GET let anyone subscribe
	// an address behind such a scanner without its owner. The page's
	// button posts.
	mux.HandleFunc("GET /status/{slug}/confirm", func(w http.ResponseWriter, r *http.Request) {
		p, ok := s.page(w, r, pages)
		if !ok {
			return
		}
		s.show(w, http.StatusOK, p.Title, "Confirm that this address should get a mail when an incident on this page opens, is updated or is resolved?", form{
			action: "?" + url.Values{"t": {r.URL.Query().Get("t")}}.Encode(), button: "Confirm"})
	})
	mux.HandleFunc("POST /status/{slug}/confirm", func(w http.ResponseWriter, r *http.Request) {
		p, ok := s.page(w, r, pages)
		if !ok {
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, MaxBody)
		_, _ = io.Copy(io.Discard, r.Body)
		if err := s.Confirm(r.Context(), p, r.URL.Query().Get("t")); err != nil {
			s.fail(w, r, err)
			return
		}
		s.show(w, http.StatusOK, p.Title, "Subscription confirmed. You will get a mail when an incident on this page opens, is updated or is resolved; every mail has a link to unsubscribe.", form{})
	})
	mux.HandleFunc("GET /status/{slug}/unsubscribe", func(w http.ResponseWriter, r *http.Request) {
		p, ok := s.page(w, r, pages)
		if !ok {
			return
		}
		// GET changes nothing (mail scanners follow links); the form posts.
		s.show(w, http.StatusOK, p.Title, "Stop the mails of this status page?", form{
			action: "?" + url.Values{"t": {r.URL.Query().Get("t")}}.Encode(), button: "Unsubscribe", oneClick: true})
	})
	mux.HandleFunc("POST /status/{slug}/unsubscribe", func(w http.ResponseWriter, r *http.Request) {
		p, ok := s.page(w, r, pages)
		if !ok {
			return
		}
		// RFC 8058 one-click: the body is List-Unsubscribe=One-Click, and
		// the token is in the URL either way.
		r.Body = http.MaxBytesReader(w, r.Body, MaxBody)
		_, _ = io.Copy(io.Discard, r.Body)
		if err := s.Unsubscribe(r.Context(), p, r.URL.Query().Get("t")); err != nil {
			s.fail(w, r, err)
			return
		}
		s.show(w, http.StatusOK, p.Title, "Unsubscribed: this address gets no more mail from this page.", form{})
	})
	return securityHeaders(mux)
}

func (s *Service) handleSubscribe(w http.ResponseWriter, r *http.Request, p model.StatusPage) {
	client, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		client = r.RemoteAddr
	}
	if !s.lim.allow(client, p.ID) {
		w.Header().Set("Retry-After", "60")
		s.answer(w, r, http.StatusTooManyRequests, "Too many subscriptions at once; try again in a minute.")
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, MaxBody)
	addr, err := emailOf(r)
	if err != nil {
		s.answer(w, r, http.StatusBadRequest, "Give one e-mail address, as the form field or JSON member \"email\".")
		return
	}
	if err := s.Subscribe(r.Context(), p, addr); err != nil {
		s.fail(w, r, err)
		return
	}
	s.answer(w, r, http.StatusAccepted, accepted)
}

// emailOf reads the address from a JSON or form body.
func emailOf(r *http.Request) (string, error) {
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if ct == "application/json" {
		var b struct {
			Email string `json:"email"`
		}
		if err := json.NewDecoder(r.Body).Decode(&b); err != nil {
			return "", err
		}
		return b.Email, nil
	}
	if err := r.ParseForm(); err != nil {
		return "", err
	}
	return r.PostForm.Get("email"), nil
}

// page finds the page of the request's slug, answering 404 if none.
func (s *Service) page(w http.ResponseWriter, r *http.Request, pages Pages) (model.StatusPage, bool) {
	p, err := pages.PageOf(r.Context(), r.PathValue("slug"))
	if errors.Is(err, status.ErrNotFound) {
		err = ErrNoPage
	}
	if err != nil {
		s.fail(w, r, err)
		return p, false
	}
	return p, true
}

// fail answers err without naming an address or a subscriber.
func (s *Service) fail(w http.ResponseWriter, r *http.Request, err error) {
	switch {
	case errors.Is(err, ErrNoPage):
		s.answer(w, r, http.StatusNotFound, "No such status page.")
	case errors.Is(err, model.ErrBadEmail):
		s.answer(w, r, http.StatusBadRequest, "That is not an e-mail address.")
	case errors.Is(err, ErrBadToken):
		s.answer(w, r, http.StatusBadRequest, "This link is not valid, or has expired. Subscribe again for a new one.")
	case errors.Is(err, ErrPageFull):
		s.answer(w, r, http.StatusConflict, "This page has reached its subscriber limit.")
	case errors.Is(err, ErrBusy):
		w.Header().Set("Retry-After", "30")
		s.answer(w, r, http.StatusServiceUnavailable, "Too many subscriptions at once; try again in a minute.")
	default:
		s.log.Warn("subscription request failed", "path", r.URL.Path, "err", err)
		w.Header().Set("Retry-After", "30")
		s.answer(w, r, http.StatusServiceUnavailable, "Subscriptions are not available right now; try again later.")
	}
}

// answer writes message as JSON to a JSON request, else as a page.
func (s *Service) answer(w http.ResponseWriter, r *http.Request, code int, message string) {
	if ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); ct == "application/json" {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(map[string]string{"message": message})
		return
	}
	s.show(w, code, "", message, form{})
}

var pageTmpl = template.Must(template.New("page").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">
<meta name="robots" content="noindex"><title>{{.Title}}</title></head>
<body><main><h1>{{.Title}}</h1><p>{{.Message}}</p>
{{if .Action}}<form method="post" action="{{.Action}}">{{if .OneClick}}<input type="hidden" name="List-Unsubscribe" value="One-Click">{{end}}<button type="submit">{{.Button}}</button></form>{{end}}
</main></body></html>
`))

// form is a page's one button: it posts to action (none when empty), with
// RFC 8058's one-click field when oneClick.
type form struct {
	action, button string
	oneClick       bool
}

func (s *Service) show(w http.ResponseWriter, code int, title, message string, f form) {
	if title == "" {
		title = "Status page subscription"
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(code)
	_ = pageTmpl.Execute(w, struct {
		Title, Message, Button string
		Action                 template.URL
		OneClick               bool
	}{strings.TrimSpace(title), message, f.button, template.URL(f.action), f.oneClick})
}

// securityHeaders: these pages are never cached or framed, and run no
// script.
func securityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Cache-Control", "no-store")
		h.Set("Content-Security-Policy", "default-src 'none'; form-action 'self'; frame-ancestors 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		next.ServeHTTP(w, r)
	})
}
