package model

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"
	"time"
)

// Endpoint is a registered MCP endpoint.
type Endpoint struct {
	ID string `json:"id"`
	// Tenant owns the endpoint (empty: DefaultTenant, for records written
	// before tenants). It is set at creation and never changes: the
	// per-tenant index is keyed by it.
	Tenant    string `json:"tenant,omitempty"`
	Name      string `json:"name"`
	URL       string `json:"url"`
	Transport string `json:"transport"` // auto | streamable-http | sse
	// ProtocolVersion pins a protocol revision; empty negotiates.
	ProtocolVersion string        `json:"protocolVersion,omitempty"`
	Schedule        string        `json:"schedule"` // 5-field cron or @every
	Timeout         time.Duration `json:"timeout"`
	// LatencyThreshold marks a slower probe degraded; 0 uses the default.
	LatencyThreshold time.Duration `json:"latencyThreshold,omitempty"`
	// Headers are sent with every probe request. Values are secrets: the API
	// never returns them and nothing logs them.
	Headers map[string]string `json:"headers,omitempty"`
	Labels  map[string]string `json:"labels,omitempty"`
	// Rules tune verdicts and incidents; nil uses the defaults.
	Rules *Rules `json:"rules,omitempty"`
	// Regions are the regions that probe the endpoint, a subset of the
	// deployment's region set (--regions); empty: every region.
	Regions []string `json:"regions,omitempty"`
	// Sinks names alert sinks for this endpoint, plus per-endpoint sink configs.
	Sinks json.RawMessage `json:"sinks,omitempty"`
	// Paused endpoints are not scheduled.
	Paused bool `json:"paused,omitempty"`
	// Public endpoints have a public status page, JSON and badge at their
	// Slug (pkg/status), which is unique across the deployment: the public
	// URLs carry no tenant.
	Public    bool      `json:"public,omitempty"`
	Slug      string    `json:"slug,omitempty"`
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
	// Version increases on every update (compare-and-set).
	Version int64 `json:"version"`

	// PublicConformance adds the spec-conformance line (rule counts and
	// the failing rules' IDs, never a rule's detail) to the public page
	// and JSON of a Public endpoint, and serves its conformance badge
	// (pkg/status). It publishes nothing while the endpoint is private.
	PublicConformance bool `json:"publicConformance,omitempty"`

	// ToolCheck calls one read-only tool after the handshake; nil: none.
	// Its arguments are secrets like header values.
	ToolCheck *ToolCheck `json:"toolCheck,omitempty"`
	// OAuth obtains a bearer token by the client-credentials grant for
	// every probe; nil: none. Its ClientSecret is a secret.
	OAuth *OAuthClient `json:"oauth,omitempty"`
	// CredentialWarning is how long before a configured JWT bearer token
	// expires the probe starts warning (0: the prober's default, 72h).
	CredentialWarning time.Duration `json:"credentialWarning,omitempty"`
	// TraceContext sends the probe's W3C trace context (traceparent,
	// tracestate) to the endpoint on every request of a traced probe, so
	// the server's own spans join the probe's trace. Off by default: a
	// server learns mcpmon's trace IDs only when its owner asks.
	TraceContext bool `json:"traceContext,omitempty"`
}

// ToolCheck names a read-only tool the probe calls after the handshake and
// what its result must show.
type ToolCheck struct {
	Name string `json:"name"`
	// Arguments is the JSON object sent as the call's arguments (sealed at
	// rest: values may be secrets).
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Expect    *ToolExpect     `json:"expect,omitempty"`
}

// ToolExpect is what a tool result must show besides not being isError.
// Zero fields are not checked.
type ToolExpect struct {
	// Contains must occur in the result's text content (all text items
	// joined by newlines).
	Contains string `json:"contains,omitempty"`
	// JSONPath selects a value of the result's structuredContent
	// ($.a.b[0].c); it must exist, and equal Equals when that is set.
	JSONPath string          `json:"jsonPath,omitempty"`
	Equals   json.RawMessage `json:"equals,omitempty"`
}

// OAuthClient is an OAuth 2.0 client-credentials client the prober uses to
// obtain the probe's bearer token.
type OAuthClient struct {
	TokenURL     string   `json:"tokenUrl"`
	ClientID     string   `json:"clientId"`
	ClientSecret string   `json:"clientSecret"` // sealed at rest
	Scopes       []string `json:"scopes,omitempty"`
	Audience     string   `json:"audience,omitempty"`
}

// Rules tune how verdicts become incidents. Zero fields use defaults.
type Rules struct {
	OpenAfter      int           `json:"openAfter,omitempty"`      // N down windows ...
	OpenWindow     int           `json:"openWindow,omitempty"`     // ... of the last M
	ResolveAfter   int           `json:"resolveAfter,omitempty"`   // K consecutive up windows
	RegionQuorum   int           `json:"regionQuorum,omitempty"`   // Q regions down (0 = majority)
	RepeatInterval time.Duration `json:"repeatInterval,omitempty"` // reminder interval (0 = none)
}

// Clone returns a copy of e that shares no memory with it: its maps,
// slices and pointed-to parts are copied too, so a caller may change the
// copy (or e) freely. A cache that hands out one decoded endpoint to many
// readers (store.EndpointDecoder) gives each a Clone.
func (e Endpoint) Clone() Endpoint {
	e.Headers = maps.Clone(e.Headers)
	e.Labels = maps.Clone(e.Labels)
	if e.Rules != nil {
		r := *e.Rules
		e.Rules = &r
	}
	e.Regions = slices.Clone(e.Regions)
	e.Sinks = bytes.Clone(e.Sinks)
	if e.ToolCheck != nil {
		t := *e.ToolCheck
		t.Arguments = bytes.Clone(t.Arguments)
		if t.Expect != nil {
			x := *t.Expect
			x.Equals = bytes.Clone(x.Equals)
			t.Expect = &x
		}
		e.ToolCheck = &t
	}
	if e.OAuth != nil {
		o := *e.OAuth
		o.Scopes = slices.Clone(o.Scopes)
		e.OAuth = &o
	}
	return e
}
