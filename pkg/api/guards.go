package api

import (
	"context"
	"net"
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
)

// The guards below are the API's front door: they run before any handler
// and refuse what no handler should see. Each is a plain chi middleware.

// MaxRequestIDLen bounds an X-Request-Id the API adopts from a client.
const MaxRequestIDLen = 64

// requestID puts a request ID into the context (middleware.GetReqID reads
// it) and echoes it in the response. A client's X-Request-Id is adopted
// only when it is short and printable ASCII without spaces: the ID is
// logged with every request line, so a long or control-character value
// would let a client forge or flood log lines. Anything else is replaced by
// a fresh random ID.
func requestID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get(middleware.RequestIDHeader)
		if !validRequestID(id) {
			id = RandomID()
		}
		w.Header().Set(middleware.RequestIDHeader, id)
		ctx := context.WithValue(r.Context(), middleware.RequestIDKey, id)
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

func validRequestID(id string) bool {
	if id == "" || len(id) > MaxRequestIDLen {
		return false
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; c <= ' ' || c >= 0x7f {
			return false
		}
	}
	return true
}

// requireJSON refuses a state-changing request (POST, PUT, PATCH) whose
// Content-Type is not JSON, whatever its body, with 415 before any handler
// runs. A browser sends a cross-site form or a no-cors fetch only as
// text/plain, form-urlencoded or multipart, without a preflight; requiring
// JSON even on an empty-bodied POST (acknowledging an incident) means no web
// page a user visits can change anything here. DELETE is exempt: browsers
// never send it cross-site without a CORS preflight, which this API does
// not answer. A request for no route, or for a method its route does
// not have, passes on, so 404 and 405 stay what they are. routes is the
// API's flat route table (flatRoutes): the router's own Match says yes to
// every method on a mount's path (PUT /v1/endpoints), which answered 415
// where the method was the mistake.
func requireJSON(routes func() *chi.Mux) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch r.Method {
			case http.MethodPost, http.MethodPut, http.MethodPatch:
			default:
				next.ServeHTTP(w, r)
				return
			}
			if !routes().Match(chi.NewRouteContext(), r.Method, r.URL.Path) {
				next.ServeHTTP(w, r)
				return
			}
			if p := checkJSONContentType(r); p != nil {
				writeProblem(w, r, p)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

// hostAllowList refuses a request whose Host header is not in hosts with
// 421, the defence against DNS rebinding: a page on an attacker's domain
// that re-resolves to this server's address still sends its own name as
// Host. An entry with a port matches that host:port only; one without
// matches the host on any port. Names compare case-insensitively, without
// a trailing dot. An empty list allows every host.
func hostAllowList(hosts []string) func(http.Handler) http.Handler {
	type entry struct{ host, port string }
	var allowed []entry
	for _, h := range hosts {
		h = strings.TrimSpace(h)
		if h == "" {
			continue
		}
		e := entry{host: h}
		if host, port, err := net.SplitHostPort(h); err == nil {
			e = entry{host: host, port: port}
		}
		e.host = normalizeHost(e.host)
		allowed = append(allowed, e)
	}
	return func(next http.Handler) http.Handler {
		if len(allowed) == 0 {
			return next
		}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			host, port := r.Host, ""
			if h, p, err := net.SplitHostPort(r.Host); err == nil {
				host, port = h, p
			}
			host = normalizeHost(host)
			for _, e := range allowed {
				if e.host == host && (e.port == "" || e.port == port) {
					next.ServeHTTP(w, r)
					return
				}
			}
			// The Host value is the client's; not echoed (it may be anything).
			writeProblem(w, r, problemf(http.StatusMisdirectedRequest, "",
				"this server does not answer for the requested host; use one of the names it was configured with (--api-hosts)"))
		})
	}
}

func normalizeHost(h string) string {
	return strings.TrimSuffix(strings.ToLower(strings.Trim(h, "[]")), ".")
}
