package apiv1

import "time"

// MaintenanceInput is the body of POST /v1/maintenance and PUT
// /v1/maintenance/{id}: either a one-off window (start, end) or a recurring
// one (cron, duration as a Go duration string), for endpoints chosen by ID
// or label selector.
type MaintenanceInput struct {
	Name        string            `json:"name,omitempty"`
	EndpointIDs []string          `json:"endpointIds,omitempty"`
	Selector    map[string]string `json:"selector,omitempty"`
	Start       time.Time         `json:"start,omitzero"`
	End         time.Time         `json:"end,omitzero"`
	Cron        string            `json:"cron,omitempty"`
	Duration    string            `json:"duration,omitempty"`
}

// MaintenanceView is a stored maintenance window.
type MaintenanceView struct {
	ID          string            `json:"id"`
	Tenant      string            `json:"tenant"`
	Name        string            `json:"name,omitempty"`
	EndpointIDs []string          `json:"endpointIds,omitempty"`
	Selector    map[string]string `json:"selector,omitempty"`
	Start       time.Time         `json:"start,omitzero"`
	End         time.Time         `json:"end,omitzero"`
	Cron        string            `json:"cron,omitempty"`
	Duration    string            `json:"duration,omitempty"`
	CreatedAt   time.Time         `json:"createdAt,omitzero"`
}
