package client

import (
	"context"
	"net/http"

	apiv1 "github.com/mcpmon/mcpmon/pkg/api/v1"
)

// CreateAgent creates an agent key for a location of the caller's tenant
// (write scope); the answer's Key is the agent's token, shown only now.
func (c *Client) CreateAgent(ctx context.Context, in apiv1.AgentInput) (apiv1.AgentView, error) {
	var v apiv1.AgentView
	_, err := c.do(ctx, request{method: http.MethodPost, path: "/v1/agents", body: in}, &v)
	return v, err
}

// ListAgents returns the tenant's agents with what their polls told the
// server (write scope).
func (c *Client) ListAgents(ctx context.Context) ([]apiv1.AgentView, error) {
	var v apiv1.AgentList
	_, err := c.do(ctx, request{method: http.MethodGet, path: "/v1/agents"}, &v)
	return v.Agents, err
}

// RevokeAgent revokes an agent's key by ID or name: its next poll is
// refused and it stops.
func (c *Client) RevokeAgent(ctx context.Context, ref string) (apiv1.AgentView, error) {
	var v apiv1.AgentView
	_, err := c.do(ctx, request{method: http.MethodDelete, path: "/v1/agents/" + esc(ref)}, &v)
	return v, err
}
