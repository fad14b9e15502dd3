package apiv1

import "time"

// AuditEntryView is one state change made over the API, in GET
// /v1/audit. It names what changed (kind, ID and the field names of the
// request), never values.
type AuditEntryView struct {
	ID     string         `json:"id"`
	Time   time.Time      `json:"time"`
	Tenant string         `json:"tenant"`
	Actor  AuditActorView `json:"actor"`
	// Action: create, update, delete, acknowledge, silence, create-key,
	// revoke-key, refuse.
	Action     string `json:"action"`
	ObjectKind string `json:"objectKind"`
	ObjectID   string `json:"objectId,omitempty"`
	RequestID  string `json:"requestId,omitempty"`
	Status     int    `json:"status"`
	// Summary says what changed by field name only ("fields: name, schedule").
	Summary string `json:"summary,omitempty"`
}

// AuditActorView is who made a change: the API key's ID and name, or
// "auth:none" when the API runs without keys.
type AuditActorView struct {
	KeyID string `json:"keyId"`
	Name  string `json:"name,omitempty"`
}
