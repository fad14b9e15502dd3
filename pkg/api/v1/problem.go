package apiv1

import (
	"fmt"

	"github.com/mcpmon/mcpmon/pkg/model"
)

// Problem is an RFC 9457 problem details object, served as
// application/problem+json.
type Problem struct {
	// Type is a URI naming the problem type; "about:blank" when the HTTP
	// status says it all.
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail,omitempty"`
	// Instance is the request path the problem occurred on.
	Instance string `json:"instance,omitempty"`
	// Errors lists field problems of a request body or query.
	Errors []FieldError `json:"errors,omitempty"`
}

// FieldError is one invalid field: Pointer is a JSON pointer into the
// request body ("#/timeout") or names a query parameter ("?limit").
type FieldError struct {
	Pointer string `json:"pointer"`
	Detail  string `json:"detail"`
}

// Problem types beyond the plain HTTP status.
const (
	TypeInvalidRequest   = "urn:mcpmon:problem:invalid-request"
	TypeVersionConflict  = "urn:mcpmon:problem:version-conflict"
	TypeIncidentResolved = "urn:mcpmon:problem:incident-resolved"
	// TypeQuotaExceeded is the problem type of a create refused by a
	// tenant quota (409: the tenant's state conflicts with the request —
	// deleting one frees a place; 403 in this API means the key's scope
	// is too small).
	TypeQuotaExceeded = "urn:mcpmon:problem:quota-exceeded"
	// TypeTooManyUpdates is the problem type of an update refused because
	// its incident already keeps model.MaxIncidentUpdates (409).
	TypeTooManyUpdates = "urn:mcpmon:problem:too-many-updates"
	// TypeRateLimited is the problem type of a 429.
	TypeRateLimited = "urn:mcpmon:problem:rate-limited"
	// TypeEndpointPaused is the problem type of a probe asked of a paused
	// endpoint (409).
	TypeEndpointPaused = "urn:mcpmon:problem:endpoint-paused"
	// TypeHostNotVerified is the problem type of a status page host
	// verification that found no proof (409): the detail says what the
	// lookup found and which TXT record to publish.
	TypeHostNotVerified = "urn:mcpmon:problem:host-not-verified"
)

// ProblemContentType is the media type of error responses.
const ProblemContentType = "application/problem+json"

func (p *Problem) Error() string { return fmt.Sprintf("%d %s: %s", p.Status, p.Title, p.Detail) }

// Redacted replaces every secret value in responses.
const Redacted = model.Redacted
