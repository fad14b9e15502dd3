package apiv1

import (
	"encoding/json"
	"time"

	"github.com/mcpmon/mcpmon/pkg/msg"
)

// Endpoint defaults and bounds: what an empty field of EndpointInput
// becomes, and the range a duration may take.
const (
	DefaultTransport = "auto"
	DefaultSchedule  = "@every 30s"
	DefaultTimeout   = 10 * time.Second
	MinTimeout       = time.Second
	MaxTimeout       = 2 * time.Minute
	// MinRepeatInterval bounds reminder spam.
	MinRepeatInterval = time.Minute
)

// Endpoint states besides the verdict states.
const (
	StatePaused  = "paused"
	StatePending = "pending" // registered, no verdict yet
)

// EndpointInput is the body of POST /v1/endpoints and, after a JSON merge
// patch is applied to the stored endpoint, of PATCH. Empty fields take the
// defaults.
type EndpointInput struct {
	Name      string `json:"name"`
	URL       string `json:"url"`
	Transport string `json:"transport,omitempty"` // auto (default) | streamable-http | sse
	// ProtocolVersion pins a revision such as "2025-06-18"; empty negotiates.
	ProtocolVersion  string `json:"protocolVersion,omitempty"`
	Schedule         string `json:"schedule,omitempty"`         // default "@every 30s"
	Timeout          string `json:"timeout,omitempty"`          // Go duration, default "10s", 1s..2m
	LatencyThreshold string `json:"latencyThreshold,omitempty"` // Go duration ≤ timeout; empty = prober default
	// Headers are sent with every probe; their values are secrets and never
	// returned. In a PATCH, a value of "<redacted>" keeps the stored value.
	Headers map[string]string `json:"headers,omitempty"`
	Labels  map[string]string `json:"labels,omitempty"`
	Rules   *RulesInput       `json:"rules,omitempty"`
	Sinks   json.RawMessage   `json:"sinks,omitempty"`
	Paused  bool              `json:"paused,omitempty"`
	// Public publishes the endpoint's status page, JSON and badge under
	// Slug (required then): /status/{slug}, /badge/{slug}.svg. Slugs are
	// unique across the deployment.
	Public bool   `json:"public,omitempty"`
	Slug   string `json:"slug,omitempty"`
	// PublicConformance adds the conformance line to the public page and
	// JSON and serves /badge/{slug}/conformance.svg (with Public).
	PublicConformance bool `json:"publicConformance,omitempty"`
	// ToolCheck, OAuth and CredentialWarning are the credentialed deep
	// checks. Tool argument values and the client secret are secrets,
	// never returned.
	ToolCheck         *ToolCheckInput `json:"toolCheck,omitempty"`
	OAuth             *OAuthInput     `json:"oauth,omitempty"`
	CredentialWarning string          `json:"credentialWarning,omitempty"` // Go duration; empty = prober default (72h)
	// Regions probe the endpoint, some of the deployment's --regions;
	// empty: all of them.
	Regions []string `json:"regions,omitempty"`
	// TraceContext sends each traced probe's W3C traceparent to the
	// endpoint (header, and params._meta under 2026-07-28); default off.
	TraceContext bool `json:"traceContext,omitempty"`
}

// RulesInput tunes verdicts and incidents; zero fields use the defaults.
type RulesInput struct {
	OpenAfter      int    `json:"openAfter,omitempty"`
	OpenWindow     int    `json:"openWindow,omitempty"`
	ResolveAfter   int    `json:"resolveAfter,omitempty"`
	RegionQuorum   int    `json:"regionQuorum,omitempty"`
	RepeatInterval string `json:"repeatInterval,omitempty"` // Go duration, ≥ 1m; empty = no reminders
}

// ToolCheckInput names a read-only tool the probe calls after the
// handshake, with its arguments (an object whose values are secrets, never
// returned: each comes back as "<redacted>") and what the result must
// show besides not being isError.
type ToolCheckInput struct {
	Name      string           `json:"name"`
	Arguments json.RawMessage  `json:"arguments,omitempty"`
	Expect    *ToolExpectInput `json:"expect,omitempty"`
}

// ToolExpectInput: contains is a substring of the result's text content;
// jsonPath ($.a.b[0]) selects a value of its structuredContent, which must
// exist and, when equals is set, equal it.
type ToolExpectInput struct {
	Contains string          `json:"contains,omitempty"`
	JSONPath string          `json:"jsonPath,omitempty"`
	Equals   json.RawMessage `json:"equals,omitempty"`
}

// OAuthInput is an OAuth 2.0 client-credentials client: the prober gets
// the probe's bearer token from tokenUrl. clientSecret is never returned.
type OAuthInput struct {
	// TokenURL empty: the prober discovers it from the endpoint's metadata.
	TokenURL     string   `json:"tokenUrl,omitempty"`
	ClientID     string   `json:"clientId"`
	ClientSecret string   `json:"clientSecret"`
	Scopes       []string `json:"scopes,omitempty"`
	Audience     string   `json:"audience,omitempty"`
}

// EndpointView is an endpoint as the API returns it.
type EndpointView struct {
	ID               string            `json:"id"`
	Tenant           string            `json:"tenant"`
	Name             string            `json:"name"`
	URL              string            `json:"url"`
	Transport        string            `json:"transport"`
	ProtocolVersion  string            `json:"protocolVersion,omitempty"`
	Schedule         string            `json:"schedule"`
	Timeout          string            `json:"timeout"`
	LatencyThreshold string            `json:"latencyThreshold,omitempty"`
	Headers          map[string]string `json:"headers,omitempty"` // values are always "<redacted>"
	Labels           map[string]string `json:"labels,omitempty"`
	Rules            *RulesInput       `json:"rules,omitempty"`
	Sinks            json.RawMessage   `json:"sinks,omitempty"` // secrets redacted
	Paused           bool              `json:"paused"`
	Public           bool              `json:"public,omitempty"`
	Slug             string            `json:"slug,omitempty"`
	Regions          []string          `json:"regions,omitempty"`
	CreatedAt        time.Time         `json:"createdAt"`
	UpdatedAt        time.Time         `json:"updatedAt"`
	Version          int64             `json:"version"`

	// PublicConformance: see EndpointInput.
	PublicConformance bool `json:"publicConformance,omitempty"`

	// State is the endpoint's current state: the last verdict's state (up,
	// degraded, down, regional, no_data), "paused", or "pending" before
	// its first verdict. StateWindow is the window that verdict decided.
	State       string     `json:"state"`
	StateWindow *time.Time `json:"stateWindow,omitempty"`

	// Only on GET /v1/endpoints/{id}:
	LatestResult *ResultView  `json:"latestResult,omitempty"`
	LastVerdict  *VerdictView `json:"lastVerdict,omitempty"`

	// Warnings, only on PATCH, say what the server did besides the patch:
	// headers dropped because the URL moved to another origin.
	Warnings []string `json:"warnings,omitempty"`

	// Deep checks: argument values and the client secret are always
	// "<redacted>".
	ToolCheck         *ToolCheckInput `json:"toolCheck,omitempty"`
	OAuth             *OAuthInput     `json:"oauth,omitempty"`
	CredentialWarning string          `json:"credentialWarning,omitempty"`
	TraceContext      bool            `json:"traceContext,omitempty"`
}

// ResultView is the latest probe result of an endpoint.
type ResultView struct {
	ProbeRunID         string            `json:"probeRunId"`
	Slot               time.Time         `json:"slot"`
	Region             string            `json:"region,omitempty"`
	StartedAt          time.Time         `json:"startedAt"`
	FinishedAt         time.Time         `json:"finishedAt"`
	Status             msg.Status        `json:"status"`
	Class              string            `json:"class"`
	Error              string            `json:"error,omitempty"`
	HTTPStatus         int               `json:"httpStatus,omitempty"`
	Transport          string            `json:"transport,omitempty"`
	ProtocolVersion    string            `json:"protocolVersion,omitempty"`
	ServerName         string            `json:"serverName,omitempty"`
	ServerVersion      string            `json:"serverVersion,omitempty"`
	Phases             map[string]string `json:"phases,omitempty"` // phase → Go duration
	CertExpiry         *time.Time        `json:"certExpiry,omitempty"`
	ToolCount          int               `json:"toolCount,omitempty"`
	CatalogFingerprint string            `json:"catalogFingerprint,omitempty"`
	CatalogTruncated   bool              `json:"catalogTruncated,omitempty"`
	Events             []msg.Event       `json:"events,omitempty"`
	// Blind: the prober could reach none of its canaries when it probed,
	// since BlindSince; the result's window is no_data, not down.
	Blind      bool       `json:"blind,omitempty"`
	BlindSince *time.Time `json:"blindSince,omitempty"`
}

// VerdictView is one verdict of an endpoint.
type VerdictView struct {
	Window         time.Time `json:"window"`
	WindowLength   string    `json:"windowLength"`
	State          msg.State `json:"state"`
	Class          string    `json:"class,omitempty"`
	Reason         string    `json:"reason,omitempty"`
	Results        int       `json:"results"`
	FailingRegions []string  `json:"failingRegions,omitempty"`
	// RegionStates is each due region's state (no_data: due, silent).
	RegionStates map[string]msg.State `json:"regionStates,omitempty"`
	FirstProbeAt time.Time            `json:"firstProbeAt,omitzero"`
	EmittedAt    time.Time            `json:"emittedAt,omitzero"`
}

// EndpointList is the body of GET /v1/endpoints.
type EndpointList struct {
	Endpoints []EndpointView `json:"endpoints"`
	// NextCursor, when present, fetches the next page (?cursor=); absent on
	// the last page.
	NextCursor string `json:"nextCursor,omitempty"`
}
