// Package mcpapi is mcpmon as an MCP server: the tools and resources served
// at /mcp on the API listener (Streamable HTTP, stateless, through the
// official go-sdk server), for agents and CI pipelines that ask in MCP
// rather than REST.
//
// Every tool is one or a few in-process requests to the /v1 REST API,
// carrying the caller's Authorization header: pkg/api decides
// authorization, tenancy, rate limits and audit, and the tools map its JSON
// to structured content and its problems to tool errors. So a read key
// calling a write tool gets the REST 403 as a tool error, and another
// tenant's ID answers exactly like a missing one. Data enters as an MCP
// request (bounded by pkg/api's door — the body check every /v1 body
// passes, at most 16 messages a batch, a request token per message — by
// MaxRequestBytes and by every tool's input schema) and
// leaves as the REST response, bounded by MaxResponseBytes. See
// docs/reference/mcp.md.
package mcpapi

import (
	"context"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	apiv1 "github.com/mcpmon/mcpmon/pkg/api/v1"
)

// Bounds of what /mcp reads and what a tool reads back from the REST API.
const (
	MaxRequestBytes  = 256 << 10
	MaxResponseBytes = 4 << 20
)

// Options configure New.
type Options struct {
	// Version is the server version announced to clients.
	Version string
	// Logger; default discards.
	Logger *slog.Logger
}

// New returns the /mcp handler over rest, the API's own handler (api.New's,
// which pkg/api hands to Options.MCP). Each HTTP request gets a server
// bound to its caller (Authorization, Host, client address): the tools'
// REST requests are that caller's.
func New(rest http.Handler, opts Options) http.Handler {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = log.With("component", "mcpapi")
	cat := newCatalog()
	impl := &mcp.Implementation{Name: "mcpmon", Title: "mcpmon", Version: opts.Version}
	h := mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
		return cat.server(impl, rest, callerOf(r))
	}, &mcp.StreamableHTTPOptions{
		Stateless:           true,
		JSONResponse:        true,
		Logger:              log,
		MaxRequestBodyBytes: MaxRequestBytes,
	})
	return refuseForeignOrigin(h)
}

// caller is who sent an MCP request, as the REST API needs to see them.
type caller struct {
	authorization string
	host          string
	remoteAddr    string
	requestID     string
}

func callerOf(r *http.Request) caller {
	return caller{authorization: r.Header.Get("Authorization"), host: r.Host, remoteAddr: r.RemoteAddr,
		requestID: r.Header.Get("X-Request-Id")}
}

// ForeignOrigin reports whether a request from a browser page must be
// refused: an Origin header naming another host (or port) than the one the
// request was sent to. Without an Origin (every non-browser client) the
// request is not a browser's cross-origin call; "null" (a sandboxed or
// file:// page) is foreign.
func ForeignOrigin(origin, host string) bool {
	if origin == "" {
		return false
	}
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return true
	}
	return !strings.EqualFold(u.Host, host)
}

// refuseForeignOrigin answers 403 to a cross-origin request (DNS
// rebinding, a page the user visits posting to a local mcpmon), before the
// MCP server reads it.
func refuseForeignOrigin(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if ForeignOrigin(r.Header.Get("Origin"), r.Host) {
			http.Error(w, "cross-origin requests to /mcp are refused", http.StatusForbidden)
			return
		}
		// probe_endpoint_now waits up to an endpoint's longest timeout
		// plus the API's margin, which may outlast the server's write
		// timeout; a request that has passed the key check gets that long.
		_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(maxToolWait))
		next.ServeHTTP(w, r)
	})
}

// maxToolWait bounds the longest tool call: probe_endpoint_now of an
// endpoint with the longest timeout, the API's wait margin and time to
// write the answer.
const maxToolWait = apiv1.MaxTimeout + 30*time.Second

// cancelOnly keeps a context's deadline and cancellation and none of
// its values: a tool's REST request must be routed and authenticated from
// scratch, not find the outer request's route or principal.
type cancelOnly struct{ context.Context }

func (cancelOnly) Value(any) any { return nil }
