package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	"github.com/go-chi/chi/v5"

	apiv1 "github.com/mcpmon/mcpmon/pkg/api/v1"
	"github.com/mcpmon/mcpmon/pkg/auth"
)

// mountMCP serves /mcp with the handler build makes of the API itself, so
// every MCP tool is a request to a /v1 route, authorized, scoped to the
// key's tenant, rate limited and audited by that route's guards: the MCP
// layer decides none of it. The door admits any live key (a read key may
// list tools and call the read ones); without one /mcp answers the same 401
// as /v1, with the same failed-authentication budget per address. The door
// holds the body to the check every /v1 body passes (meterMCP) and spends
// one of the tenant's request tokens per JSON-RPC message itself, so
// initialize and tools/list are rate limited like any request, a batch
// costs what its messages sent one by one cost, and a tool call costs one
// token more than the REST requests it makes.
func (s *server) mountMCP(r chi.Router, build func(rest http.Handler) http.Handler) {
	if build == nil {
		return
	}
	h := build(r)
	door := s.authenticateFor(func(*http.Request) auth.Scope { return auth.ScopeRead })
	r.With(door, s.meterMCP).Handle("/mcp", h)
}

// meterMCP reads a POST's body under the API's body limit and checkJSON
// (a JSON-RPC message's arguments are a body like any other), refuses a
// batch of more than maxMCPBatch messages with 400, spends one token per
// message and hands the body on. Other methods pass for the MCP server to
// answer (405), charged one token. A batch of 5,000 tools/list fitted in
// the MCP server's own 256 KiB limit and cost one token: a 99 MB answer,
// 15 s of CPU and 600 MB of heap.
func (s *server) meterMCP(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			if s.spend(w, r, 1) {
				next.ServeHTTP(w, r)
			}
			return
		}
		body, p := s.readBodyWithin(w, r, true, bodyLimits)
		if p != nil {
			writeProblem(w, r, p)
			return
		}
		n, p := mcpMessages(body)
		if p != nil {
			writeProblem(w, r, p)
			return
		}
		if !s.spend(w, r, n) {
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		next.ServeHTTP(w, r)
	})
}

// mcpMessages counts the JSON-RPC messages of a checked /mcp body: the
// elements of a batch (a top-level array), else one. A batch of more than
// maxMCPBatch is the problem returned. What is not JSON counts one, for
// the MCP server to refuse.
func mcpMessages(body checkedJSON) (int, *apiv1.Problem) {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 || trimmed[0] != '[' {
		return 1, nil
	}
	var batch []json.RawMessage
	if json.Unmarshal(trimmed, &batch) != nil {
		return 1, nil
	}
	if len(batch) > maxMCPBatch {
		return 0, bodyProblem("#", fmt.Sprintf("at most %d JSON-RPC messages in one batch; send the rest in further requests", maxMCPBatch))
	}
	return max(len(batch), 1), nil
}
