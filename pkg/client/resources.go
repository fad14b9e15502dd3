package client

import (
	"context"
	"iter"
	"net/http"
	"strconv"
	"time"

	apiv1 "github.com/mcpmon/mcpmon/pkg/api/v1"
)

// ---- incidents

// IncidentFilter narrows an incident list: State is open, acknowledged or
// resolved ("" every state); Endpoint an endpoint ID.
type IncidentFilter struct {
	State    string
	Endpoint string
}

// Incidents walks the tenant's incidents, newest first.
func (c *Client) Incidents(ctx context.Context, f IncidentFilter) iter.Seq2[apiv1.IncidentView, error] {
	return seq[apiv1.IncidentView](ctx, c, "/v1/incidents"+query("state", f.State, "endpoint", f.Endpoint), "incidents")
}

// ListIncidents returns every incident f matches.
func (c *Client) ListIncidents(ctx context.Context, f IncidentFilter) ([]apiv1.IncidentView, error) {
	return collect(c.Incidents(ctx, f))
}

// GetIncident returns one incident with what each sink was told.
func (c *Client) GetIncident(ctx context.Context, id string) (apiv1.IncidentDetail, error) {
	var v apiv1.IncidentDetail
	_, err := c.do(ctx, request{method: http.MethodGet, path: "/v1/incidents/" + esc(id)}, &v)
	return v, err
}

// AckIncident acknowledges an open incident (a resolved one: IsConflict).
func (c *Client) AckIncident(ctx context.Context, id string, in apiv1.AckInput) (apiv1.IncidentView, error) {
	var v apiv1.IncidentView
	_, err := c.do(ctx, request{method: http.MethodPost, path: "/v1/incidents/" + esc(id) + "/ack", body: in}, &v)
	return v, err
}

// PostIncidentUpdate posts the owner's update to an incident and returns
// the incident, its updates newest first (an incident at its update cap:
// IsConflict).
func (c *Client) PostIncidentUpdate(ctx context.Context, id string, in apiv1.UpdateInput) (apiv1.IncidentView, error) {
	var v apiv1.IncidentView
	_, err := c.do(ctx, request{method: http.MethodPost, path: "/v1/incidents/" + esc(id) + "/updates", body: in}, &v)
	return v, err
}

// ---- maintenance

// Maintenance walks the tenant's maintenance windows.
func (c *Client) Maintenance(ctx context.Context) iter.Seq2[apiv1.MaintenanceView, error] {
	return seq[apiv1.MaintenanceView](ctx, c, "/v1/maintenance", "maintenance")
}

// ListMaintenance returns every maintenance window of the tenant.
func (c *Client) ListMaintenance(ctx context.Context) ([]apiv1.MaintenanceView, error) {
	return collect(c.Maintenance(ctx))
}

// GetMaintenance returns one maintenance window.
func (c *Client) GetMaintenance(ctx context.Context, id string) (apiv1.MaintenanceView, error) {
	var v apiv1.MaintenanceView
	_, err := c.do(ctx, request{method: http.MethodGet, path: "/v1/maintenance/" + esc(id)}, &v)
	return v, err
}

// AddMaintenance creates a maintenance window.
func (c *Client) AddMaintenance(ctx context.Context, in apiv1.MaintenanceInput) (apiv1.MaintenanceView, error) {
	var v apiv1.MaintenanceView
	_, err := c.do(ctx, request{method: http.MethodPost, path: "/v1/maintenance", body: in}, &v)
	return v, err
}

// RemoveMaintenance deletes a maintenance window.
func (c *Client) RemoveMaintenance(ctx context.Context, id string) error {
	_, err := c.do(ctx, request{method: http.MethodDelete, path: "/v1/maintenance/" + esc(id)}, nil)
	return err
}

// ---- status pages

// ListStatusPages returns every status page of the tenant, in slug order.
func (c *Client) ListStatusPages(ctx context.Context) ([]apiv1.StatusPageView, error) {
	var v apiv1.StatusPageList
	_, err := c.do(ctx, request{method: http.MethodGet, path: "/v1/status-pages"}, &v)
	return v.Items, err
}

// GetStatusPage returns one status page.
func (c *Client) GetStatusPage(ctx context.Context, id string) (apiv1.StatusPageView, error) {
	var v apiv1.StatusPageView
	_, err := c.do(ctx, request{method: http.MethodGet, path: "/v1/status-pages/" + esc(id)}, &v)
	return v, err
}

// CreateStatusPage creates a status page (a slug or host in use, or the
// quota reached: IsConflict).
func (c *Client) CreateStatusPage(ctx context.Context, in apiv1.StatusPageInput) (apiv1.StatusPageView, error) {
	var v apiv1.StatusPageView
	_, err := c.do(ctx, request{method: http.MethodPost, path: "/v1/status-pages", body: in}, &v)
	return v, err
}

// ReplaceStatusPage replaces a status page whole.
func (c *Client) ReplaceStatusPage(ctx context.Context, id string, in apiv1.StatusPageInput) (apiv1.StatusPageView, error) {
	var v apiv1.StatusPageView
	_, err := c.do(ctx, request{method: http.MethodPut, path: "/v1/status-pages/" + esc(id), body: in}, &v)
	return v, err
}

// VerifyStatusPageHost asks the server to look up the TXT record that
// proves the page's custom host; a record missing or wrong is a 409
// problem saying what was found and what to publish.
func (c *Client) VerifyStatusPageHost(ctx context.Context, id string) (apiv1.StatusPageView, error) {
	var v apiv1.StatusPageView
	_, err := c.do(ctx, request{method: http.MethodPost, path: "/v1/status-pages/" + esc(id) + "/verify-host", body: struct{}{}}, &v)
	return v, err
}

// ReleaseStatusPageHost takes host back from whatever status page, of any
// tenant, holds it (the operator's: an admin key of the default tenant;
// any other key, or a host no page has: IsNotFound).
func (c *Client) ReleaseStatusPageHost(ctx context.Context, host string) (apiv1.HostReleaseView, error) {
	var v apiv1.HostReleaseView
	_, err := c.do(ctx, request{method: http.MethodPost, path: "/v1/status-page-hosts/release", body: apiv1.HostReleaseInput{Host: host}}, &v)
	return v, err
}

// DeleteStatusPage deletes a status page.
func (c *Client) DeleteStatusPage(ctx context.Context, id string) error {
	_, err := c.do(ctx, request{method: http.MethodDelete, path: "/v1/status-pages/" + esc(id)}, nil)
	return err
}

// ---- keys

// KeyInput is the body of POST /v1/keys (the API's own request type is
// unexported). Scope is read, write or admin; ExpiresIn a Go duration
// ("720h", "" never).
type KeyInput struct {
	Name      string `json:"name"`
	Scope     string `json:"scope"`
	ExpiresIn string `json:"expiresIn,omitempty"`
}

// Keys walks the tenant's API keys (admin).
func (c *Client) Keys(ctx context.Context) iter.Seq2[apiv1.KeyView, error] {
	return seq[apiv1.KeyView](ctx, c, "/v1/keys", "keys")
}

// ListKeys returns every API key of the tenant (admin).
func (c *Client) ListKeys(ctx context.Context) ([]apiv1.KeyView, error) { return collect(c.Keys(ctx)) }

// CreateKey creates an API key in the caller's tenant; the answer's Key is
// the secret, shown only now.
func (c *Client) CreateKey(ctx context.Context, in KeyInput) (apiv1.KeyView, error) {
	var v apiv1.KeyView
	_, err := c.do(ctx, request{method: http.MethodPost, path: "/v1/keys", body: in}, &v)
	return v, err
}

// RevokeKey revokes a key by ID or name.
func (c *Client) RevokeKey(ctx context.Context, ref string) (apiv1.KeyView, error) {
	var v apiv1.KeyView
	_, err := c.do(ctx, request{method: http.MethodDelete, path: "/v1/keys/" + esc(ref)}, &v)
	return v, err
}

// ---- audit

// AuditFilter narrows the audit log: Since inclusive, Until exclusive
// (zero: unbounded); Limit is the page size (0: the server's).
type AuditFilter struct {
	Since, Until time.Time
	Limit        int
}

// Audit walks the tenant's audit log, newest first (admin).
func (c *Client) Audit(ctx context.Context, f AuditFilter) iter.Seq2[apiv1.AuditEntryView, error] {
	ts := func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return t.UTC().Format(time.RFC3339Nano)
	}
	return seq[apiv1.AuditEntryView](ctx, c, "/v1/audit"+query("since", ts(f.Since), "until", ts(f.Until), "limit", pageSize(f.Limit)), "entries")
}

// ListAudit returns every audit entry f matches (admin).
func (c *Client) ListAudit(ctx context.Context, f AuditFilter) ([]apiv1.AuditEntryView, error) {
	return collect(c.Audit(ctx, f))
}

// ---- dead letters (operator: the default tenant's admin key)

// DeadLetterQueues lists the stage queues' dead-letter queues.
func (c *Client) DeadLetterQueues(ctx context.Context) ([]apiv1.DLQView, error) {
	var out struct {
		Queues []apiv1.DLQView `json:"queues"`
	}
	_, err := c.do(ctx, request{method: http.MethodGet, path: "/v1/dlq"}, &out)
	return out.Queues, err
}

// PeekDeadLetters returns up to limit dead letters of queue without
// removing them (0: the server's default).
func (c *Client) PeekDeadLetters(ctx context.Context, queue string, limit int) ([]apiv1.DeadLetterView, error) {
	lim := ""
	if limit > 0 {
		lim = strconv.Itoa(limit)
	}
	var out struct {
		Messages []apiv1.DeadLetterView `json:"messages"`
	}
	_, err := c.do(ctx, request{method: http.MethodGet, path: "/v1/dlq/" + esc(queue) + "/messages" + query("limit", lim)}, &out)
	return out.Messages, err
}

// RedriveDeadLetters moves dead letters of queue back to it: the ones
// named by ids, or all when ids is empty.
func (c *Client) RedriveDeadLetters(ctx context.Context, queue string, ids []string) (apiv1.RedriveView, error) {
	if ids == nil {
		ids = []string{}
	}
	var v apiv1.RedriveView
	_, err := c.do(ctx, request{method: http.MethodPost, path: "/v1/dlq/" + esc(queue) + "/redrive", body: map[string]any{"ids": ids}}, &v)
	return v, err
}

// PurgeDeadLetters deletes every dead letter of queue and says how many.
func (c *Client) PurgeDeadLetters(ctx context.Context, queue string) (int, error) {
	var out struct {
		Purged int `json:"purged"`
	}
	_, err := c.do(ctx, request{method: http.MethodPost, path: "/v1/dlq/" + esc(queue) + "/purge", body: map[string]any{}}, &out)
	return out.Purged, err
}
