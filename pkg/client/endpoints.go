package client

import (
	"context"
	"iter"
	"net/http"
	"strconv"
	"time"

	apiv1 "github.com/mcpmon/mcpmon/pkg/api/v1"
)

// EndpointFilter narrows an endpoint list: Selector is a label selector
// ("team=search,env!=dev"), States a comma-separated list of states
// (up, down, paused, pending, …), Limit the page size (0: the server's).
type EndpointFilter struct {
	Selector string
	States   string
	Limit    int
}

func (f EndpointFilter) path() string {
	return "/v1/endpoints" + query("selector", f.Selector, "state", f.States, "limit", pageSize(f.Limit))
}

// Endpoints walks the tenant's endpoints page by page (one page in
// memory). Breaking out of the loop stops the walk; an error ends it as
// the last pair.
func (c *Client) Endpoints(ctx context.Context, f EndpointFilter) iter.Seq2[apiv1.EndpointView, error] {
	return seq[apiv1.EndpointView](ctx, c, f.path(), "endpoints")
}

// ListEndpoints returns every endpoint of the tenant that selector matches
// ("" for all), reading every page.
func (c *Client) ListEndpoints(ctx context.Context, selector string) ([]apiv1.EndpointView, error) {
	var out []apiv1.EndpointView
	for e, err := range c.Endpoints(ctx, EndpointFilter{Selector: selector}) {
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

// GetEndpoint returns one endpoint with its latest result and verdict.
func (c *Client) GetEndpoint(ctx context.Context, id string) (apiv1.EndpointView, error) {
	var v apiv1.EndpointView
	_, err := c.do(ctx, request{method: http.MethodGet, path: "/v1/endpoints/" + esc(id)}, &v)
	return v, err
}

// CreateEndpoint registers an endpoint.
func (c *Client) CreateEndpoint(ctx context.Context, in apiv1.EndpointInput) (apiv1.EndpointView, error) {
	var v apiv1.EndpointView
	_, err := c.do(ctx, request{method: http.MethodPost, path: "/v1/endpoints", body: in}, &v)
	return v, err
}

// PatchEndpoint applies patch, a JSON merge patch (RFC 7386: members set,
// null removes), to the endpoint's current version.
func (c *Client) PatchEndpoint(ctx context.Context, id string, patch any) (apiv1.EndpointView, error) {
	return c.PatchEndpointIfMatch(ctx, id, patch, 0)
}

// PatchEndpointIfMatch is PatchEndpoint applied only if the endpoint is
// still at version (its ETag); otherwise the answer is a 412 (IsConflict).
// A version of 0 sends no If-Match.
func (c *Client) PatchEndpointIfMatch(ctx context.Context, id string, patch any, version int64) (apiv1.EndpointView, error) {
	req := request{method: http.MethodPatch, path: "/v1/endpoints/" + esc(id), body: patch, ctype: "application/merge-patch+json"}
	if version > 0 {
		req.ifMatch = `"` + strconv.FormatInt(version, 10) + `"`
	}
	var v apiv1.EndpointView
	_, err := c.do(ctx, req, &v)
	return v, err
}

// DeleteEndpoint removes an endpoint.
func (c *Client) DeleteEndpoint(ctx context.Context, id string) error {
	_, err := c.do(ctx, request{method: http.MethodDelete, path: "/v1/endpoints/" + esc(id)}, nil)
	return err
}

// PauseEndpoint stops probing the endpoint (its configuration is kept).
func (c *Client) PauseEndpoint(ctx context.Context, id string) (apiv1.EndpointView, error) {
	return c.PatchEndpoint(ctx, id, map[string]any{"paused": true})
}

// ResumeEndpoint probes a paused endpoint again.
func (c *Client) ResumeEndpoint(ctx context.Context, id string) (apiv1.EndpointView, error) {
	return c.PatchEndpoint(ctx, id, map[string]any{"paused": false})
}

// VerdictFilter pages an endpoint's verdicts: Limit is the page size (0:
// the server's). The API filters verdicts by nothing else; a caller that
// wants one state keeps those it meets.
type VerdictFilter struct {
	Limit int
}

// Verdicts walks the endpoint's verdicts page by page, newest window
// first (one page in memory). Breaking out of the loop stops the walk.
func (c *Client) Verdicts(ctx context.Context, id string, f VerdictFilter) iter.Seq2[apiv1.VerdictView, error] {
	return seq[apiv1.VerdictView](ctx, c, "/v1/endpoints/"+esc(id)+"/verdicts"+query("limit", pageSize(f.Limit)), "verdicts")
}

// EventFilter narrows an endpoint's change events: Kind is one kind
// (catalog_breaking, version, certificate_expiry, …; "" every kind),
// Limit the page size (0: the server's).
type EventFilter struct {
	Kind  string
	Limit int
}

// Events walks the endpoint's durable change events page by page, newest
// first.
func (c *Client) Events(ctx context.Context, id string, f EventFilter) iter.Seq2[apiv1.EventView, error] {
	return seq[apiv1.EventView](ctx, c, "/v1/endpoints/"+esc(id)+"/events"+query("kind", f.Kind, "limit", pageSize(f.Limit)), "events")
}

// ListEvents returns every change event of the endpoint that f matches.
func (c *Client) ListEvents(ctx context.Context, id string, f EventFilter) ([]apiv1.EventView, error) {
	return collect(c.Events(ctx, id, f))
}

// Uptime returns the endpoint's uptime and latency over rng (24h, 7d,
// 30d, 90d; "" is 24h). A store without rollups answers 501.
func (c *Client) Uptime(ctx context.Context, id, rng string) (apiv1.UptimeView, error) {
	var v apiv1.UptimeView
	_, err := c.do(ctx, request{method: http.MethodGet, path: "/v1/endpoints/" + esc(id) + "/uptime" + query("range", rng)}, &v)
	return v, err
}

// UptimeBetween returns the endpoint's uptime and latency over a custom
// range [from, to) (range=custom; whole seconds, as RFC 3339 carries them).
func (c *Client) UptimeBetween(ctx context.Context, id string, from, to time.Time) (apiv1.UptimeView, error) {
	var v apiv1.UptimeView
	path := "/v1/endpoints/" + esc(id) + "/uptime" + query("range", "custom",
		"from", from.UTC().Format(time.RFC3339), "to", to.UTC().Format(time.RFC3339))
	_, err := c.do(ctx, request{method: http.MethodGet, path: path}, &v)
	return v, err
}

// Catalog returns the tools the endpoint's server last listed, their
// fingerprint and the latest probe's catalog drift.
func (c *Client) Catalog(ctx context.Context, id string) (apiv1.CatalogView, error) {
	var v apiv1.CatalogView
	_, err := c.do(ctx, request{method: http.MethodGet, path: "/v1/endpoints/" + esc(id) + "/catalog"}, &v)
	return v, err
}

// pageSize is a page size as a query value ("" for the server's default).
func pageSize(n int) string {
	if n > 0 {
		return strconv.Itoa(n)
	}
	return ""
}

// Readyz asks the server whether it is ready: nil when it is, else an
// *Error whose Detail is the server's reason.
func (c *Client) Readyz(ctx context.Context) error {
	_, err := c.do(ctx, request{method: http.MethodGet, path: "/readyz"}, nil)
	return err
}
