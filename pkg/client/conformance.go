package client

import (
	"context"
	"net/http"

	apiv1 "github.com/mcpmon/mcpmon/pkg/api/v1"
)

// Conformance returns every conformance rule with its outcome at the
// endpoint's latest result.
func (c *Client) Conformance(ctx context.Context, id string) (apiv1.ConformanceView, error) {
	var v apiv1.ConformanceView
	_, err := c.do(ctx, request{method: http.MethodGet, path: "/v1/endpoints/" + esc(id) + "/conformance"}, &v)
	return v, err
}
