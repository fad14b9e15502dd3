package api

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/mcpmon/mcpmon/pkg/auth"
)

// mountMCP serves /mcp with the handler build makes of the API itself, so
// every MCP tool is a request to a /v1 route, authorized, scoped to the
// key's tenant, rate limited and audited by that route's guards: the MCP
// layer decides none of it. The door admits any live key (a read key may
// list tools and call the read ones); without one /mcp answers the same 401
// as /v1, with the same failed-authentication budget per address. The door
// spends one of the tenant's request tokens itself, so initialize and
// tools/list are rate limited like any request and a tool call costs one
// token more than the REST requests it makes.
func (s *server) mountMCP(r chi.Router, build func(rest http.Handler) http.Handler) {
	if build == nil {
		return
	}
	h := build(r)
	door := s.authenticateFor(func(*http.Request) auth.Scope { return auth.ScopeRead })
	r.With(door, s.limitRate).Handle("/mcp", h)
}
