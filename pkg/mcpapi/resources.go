package mcpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	apiv1 "github.com/mcpmon/mcpmon/pkg/api/v1"
)

// statusPagePrefix is the URI of a status page resource without its ID.
const statusPagePrefix = "mcpmon://status-pages/"

// addStatusPages serves the tenant's status pages as resources: each
// resources/list is GET /v1/status-pages as the caller (the list is the
// tenant's and changes as pages come and go, so it cannot be registered
// once), and resources/read of mcpmon://status-pages/{id} is GET
// /v1/status-pages/{id}: another tenant's page is not found, like a
// missing one.
func addStatusPages(s *mcp.Server, rc restCall) {
	s.AddResourceTemplate(&mcp.ResourceTemplate{
		Name: "status-page", Title: "Status page", MIMEType: "application/json",
		URITemplate: statusPagePrefix + "{id}",
		Description: "A status page of the tenant: its slug, title, host and the endpoint groups it shows (GET /v1/status-pages/{id}).",
	}, func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		uri := req.Params.URI
		id, ok := strings.CutPrefix(uri, statusPagePrefix)
		if !ok || id == "" || len(id) > maxID || strings.ContainsAny(id, "/?#") {
			return nil, mcp.ResourceNotFoundError(uri)
		}
		var raw json.RawMessage
		if _, err := rc.do(ctx, http.MethodGet, "/v1/status-pages/"+url.PathEscape(id), nil, &raw); err != nil {
			if isStatus(err, http.StatusNotFound) {
				return nil, mcp.ResourceNotFoundError(uri)
			}
			return nil, err
		}
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: "application/json", Text: string(raw)}}}, nil
	})
	s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method != "resources/list" {
				return next(ctx, method, req)
			}
			var pages apiv1.StatusPageList
			if _, err := rc.do(ctx, http.MethodGet, "/v1/status-pages", nil, &pages); err != nil {
				return nil, err
			}
			res := &mcp.ListResourcesResult{Cacheable: tenantCache, Resources: make([]*mcp.Resource, 0, len(pages.Items))}
			for _, p := range pages.Items {
				res.Resources = append(res.Resources, &mcp.Resource{
					URI: statusPagePrefix + p.ID, Name: p.Slug, Title: p.Title, MIMEType: "application/json",
					Description: p.Description,
				})
			}
			return res, nil
		}
	})
}

// tenantCache is the cache hint of every result: each is read with the
// caller's key, of its tenant's data, and may change at any moment, so no
// intermediary may keep it ("private") and the caller's client should
// not either (ttl 0). The SDK's default scope is "public"; the list this
// package builds itself (above) sent an empty, invalid one.
var tenantCache = mcp.Cacheable{TTLMs: 0, CacheScope: "private"}
