package mcpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"strconv"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	apiv1 "github.com/mcpmon/mcpmon/pkg/api/v1"
)

// Bounds of tool inputs, declared in every input schema (the go-sdk
// refuses an input outside them before a tool runs) and checked again by
// the REST API.
const (
	maxID         = 128
	maxString     = 256
	maxText       = 1000
	maxItems      = 100
	maxProperties = 32
	maxPageLimit  = 100
	maxEvents     = 50
	maxCursor     = 512
	defaultEvents = 10
)

// idPattern is the shape of every mcpmon object ID (endpoint IDs are
// [a-z0-9-]; incident IDs append the opening window).
const idPattern = `^[A-Za-z0-9][A-Za-z0-9._:-]*$`

// Scopes the tools' REST routes need (pkg/auth's names).
const (
	scopeRead  = "read"
	scopeWrite = "write"
)

// Tool describes one registered tool for documentation: its name, the key
// scope its REST route needs, and its annotations.
type Tool struct {
	Name        string
	Scope       string
	Annotations mcp.ToolAnnotations
}

// tool is one tool: its definition (schemas resolved once) and how to bind
// its handler to one caller's REST calls.
type tool struct {
	def   *mcp.Tool
	scope string
	bind  func(s *mcp.Server, rc restCall)
}

// catalog is every tool, built once; server binds them to a caller.
type catalog struct {
	tools []tool
	cache *mcp.SchemaCache
}

func ptr[T any](v T) *T { return &v }

var (
	readOnly = mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, DestructiveHint: ptr(false), OpenWorldHint: ptr(false)}
)

func newCatalog() *catalog {
	c := &catalog{cache: mcp.NewSchemaCache()}
	c.tools = []tool{
		define("list_endpoints", "List endpoints",
			"One page of the tenant's monitored MCP endpoints with their state (up, degraded, down, regional, no_data, paused, pending). GET /v1/endpoints.",
			scopeRead, readOnly, listEndpoints, withPage(map[string]*jsonschema.Schema{
				"state":    enum("up", "degraded", "down", "regional", "no_data", "paused", "pending"),
				"selector": str(maxString),
			})),
		define("get_endpoint", "Get an endpoint",
			"An endpoint's configuration (secrets redacted), state, latest probe result and last verdict, its uptime over a range and its most recent change events. GET /v1/endpoints/{id}, /uptime and /events.",
			scopeRead, readOnly, getEndpoint, map[string]*jsonschema.Schema{
				"id":     idSchema(),
				"range":  enum("24h", "7d", "30d", "90d"),
				"events": {Type: "integer", Minimum: ptr(0.0), Maximum: ptr(float64(maxEvents))},
			}),
		define("list_incidents", "List incidents",
			"One page of the tenant's incidents, newest first, optionally by state or endpoint. GET /v1/incidents.",
			scopeRead, readOnly, listIncidents, withPage(map[string]*jsonschema.Schema{
				"state":      enum("open", "acknowledged", "resolved"),
				"endpointId": idSchema(),
			})),
		define("acknowledge_incident", "Acknowledge an incident",
			"Moves an open incident to acknowledged (an acknowledged one is left as it is; a resolved one is refused). POST /v1/incidents/{id}/ack.",
			scopeWrite, mcp.ToolAnnotations{IdempotentHint: true, DestructiveHint: ptr(false), OpenWorldHint: ptr(false)}, acknowledgeIncident,
			map[string]*jsonschema.Schema{"id": idSchema(), "by": str(200), "reason": str(maxText)}),
		define("create_maintenance_window", "Create a maintenance window",
			"Mutes incident alerts of the named endpoints, or of those whose labels match the selector, from start to end, or every time cron fires for duration. POST /v1/maintenance.",
			scopeWrite, mcp.ToolAnnotations{DestructiveHint: ptr(false), OpenWorldHint: ptr(false)}, createMaintenance,
			map[string]*jsonschema.Schema{
				"endpointIds": {Type: "array", Items: idSchema(), MaxItems: ptr(maxItems)},
				"start":       {Type: "string", Format: "date-time", MaxLength: ptr(64)},
				"end":         {Type: "string", Format: "date-time", MaxLength: ptr(64)},
			}),
		define("probe_endpoint_now", "Probe an endpoint now",
			"Probes the endpoint through the monitoring pipeline now and returns the result, or the run ID to look for in get_endpoint's latestResult when the probe outlasts the wait. POST /v1/endpoints/{id}/probe.",
			scopeWrite, mcp.ToolAnnotations{DestructiveHint: ptr(false), OpenWorldHint: ptr(true)}, probeNow,
			map[string]*jsonschema.Schema{"id": idSchema()}),
	}
	return c
}

// Tools lists the tools /mcp serves, for documentation.
func Tools() []Tool {
	c := newCatalog()
	out := make([]Tool, 0, len(c.tools))
	for _, t := range c.tools {
		out = append(out, Tool{Name: t.def.Name, Scope: t.scope, Annotations: *t.def.Annotations})
	}
	return out
}

// server is a stateless MCP server whose tools and resources make their
// REST requests as c.
func (c *catalog) server(impl *mcp.Implementation, rest http.Handler, cl caller) *mcp.Server {
	s := mcp.NewServer(impl, &mcp.ServerOptions{
		SchemaCache:  c.cache,
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}, Resources: &mcp.ResourceCapabilities{}},
		Instructions: "mcpmon monitors remote MCP servers. Tools read endpoints, incidents and uptime, acknowledge incidents, create maintenance windows and probe an endpoint now; resources are the tenant's status pages.",
		SetCacheable: func(_ context.Context, _ mcp.Request, c *mcp.Cacheable) { *c = tenantCache },
	})
	rc := restCall{rest: rest, c: cl}
	for _, t := range c.tools {
		t.bind(s, rc)
	}
	addStatusPages(s, rc) // resources.go
	return s
}

// schemaOptions infers schemas of the API's types: a json.RawMessage (an
// endpoint's sinks document) is any JSON value.
var schemaOptions = &jsonschema.ForOptions{TypeSchemas: map[reflect.Type]*jsonschema.Schema{
	reflect.TypeFor[json.RawMessage](): {},
}}

// define builds a tool from its input and output types: the input schema
// inferred, with fields' schemas replacing those of the properties they
// name (tighter bounds, enums, patterns), then bounded (bound); the output
// schema inferred; the handler run with the caller's REST calls.
func define[In, Out any](name, title, desc, scope string, ann mcp.ToolAnnotations, run func(context.Context, restCall, In) (Out, error), fields map[string]*jsonschema.Schema) tool {
	in, err := jsonschema.For[In](schemaOptions)
	if err != nil {
		panic(fmt.Sprintf("mcpapi: input schema of %s: %v", name, err))
	}
	for prop, fs := range fields {
		if in.Properties[prop] == nil {
			panic(fmt.Sprintf("mcpapi: tool %s has no input %q", name, prop))
		}
		fs.Description = in.Properties[prop].Description
		in.Properties[prop] = fs
	}
	bound(in)
	out, err := jsonschema.For[Out](schemaOptions)
	if err != nil {
		panic(fmt.Sprintf("mcpapi: output schema of %s: %v", name, err))
	}
	ann.Title = title
	def := &mcp.Tool{Name: name, Title: title, Description: desc, InputSchema: in, OutputSchema: out, Annotations: &ann}
	return tool{def: def, scope: scope, bind: func(s *mcp.Server, rc restCall) {
		mcp.AddTool(s, def, func(ctx context.Context, _ *mcp.CallToolRequest, input In) (*mcp.CallToolResult, Out, error) {
			o, err := run(ctx, rc, input)
			return nil, o, err
		})
	}}
}

// bound gives every string of an input schema a maximum length, every
// list a maximum count and every map a maximum size, unless the field's
// own bound (set by its input type's schema method) is tighter.
func bound(s *jsonschema.Schema) {
	if s == nil {
		return
	}
	switch s.Type {
	case "string":
		if s.MaxLength == nil {
			s.MaxLength = ptr(maxString)
		}
	case "array":
		if s.MaxItems == nil {
			s.MaxItems = ptr(maxItems)
		}
		bound(s.Items)
	case "object":
		if s.AdditionalProperties != nil && s.MaxProperties == nil {
			s.MaxProperties = ptr(maxProperties)
		}
		bound(s.AdditionalProperties)
		for _, p := range s.Properties {
			bound(p)
		}
	}
	for _, t := range s.Types {
		if t == "string" && s.MaxLength == nil {
			s.MaxLength = ptr(maxString)
		}
	}
}

// idSchema is the schema of an object ID.
func idSchema() *jsonschema.Schema {
	return &jsonschema.Schema{Type: "string", MinLength: ptr(1), MaxLength: ptr(maxID), Pattern: idPattern}
}

func str(maxLen int) *jsonschema.Schema {
	return &jsonschema.Schema{Type: "string", MaxLength: ptr(maxLen)}
}

func enum(values ...string) *jsonschema.Schema {
	s := &jsonschema.Schema{Type: "string"}
	for _, v := range values {
		s.Enum = append(s.Enum, v)
	}
	return s
}

// withPage adds the paging inputs' schemas to fields.
func withPage(fields map[string]*jsonschema.Schema) map[string]*jsonschema.Schema {
	fields["limit"] = &jsonschema.Schema{Type: "integer", Minimum: ptr(1.0), Maximum: ptr(float64(maxPageLimit))}
	fields["cursor"] = str(maxCursor)
	return fields
}

// ---- the tools

type pageIn struct {
	Limit  int    `json:"limit,omitempty" jsonschema:"items per page, 1 to 100 (default 100)"`
	Cursor string `json:"cursor,omitempty" jsonschema:"nextCursor of the previous page, unchanged"`
}

func (p pageIn) query(q url.Values) url.Values {
	if p.Limit > 0 {
		q.Set("limit", strconv.Itoa(min(p.Limit, maxPageLimit)))
	}
	if p.Cursor != "" {
		q.Set("cursor", p.Cursor)
	}
	return q
}

type listEndpointsIn struct {
	pageIn
	State    string `json:"state,omitempty" jsonschema:"keep endpoints in this state: up, degraded, down, regional, no_data, paused or pending"`
	Selector string `json:"selector,omitempty" jsonschema:"label selector such as team=search,env!=dev"`
}

func listEndpoints(ctx context.Context, rc restCall, in listEndpointsIn) (apiv1.EndpointList, error) {
	q := in.query(url.Values{})
	if in.State != "" {
		q.Set("state", in.State)
	}
	if in.Selector != "" {
		q.Set("selector", in.Selector)
	}
	var out apiv1.EndpointList
	_, err := rc.do(ctx, http.MethodGet, withQuery("/v1/endpoints", q), nil, &out)
	return out, err
}

type getEndpointIn struct {
	ID     string `json:"id" jsonschema:"the endpoint's ID"`
	Range  string `json:"range,omitempty" jsonschema:"uptime range: 24h (default), 7d, 30d or 90d"`
	Events int    `json:"events,omitempty" jsonschema:"how many recent change events, 0 to 50 (default 10)"`
}

// EndpointDetail is get_endpoint's output: the endpoint as GET
// /v1/endpoints/{id} shows it, its uptime (absent from a store without
// rollups) and its most recent change events, newest first.
type EndpointDetail struct {
	Endpoint apiv1.EndpointView `json:"endpoint"`
	Uptime   *apiv1.UptimeView  `json:"uptime,omitempty"`
	Events   []apiv1.EventView  `json:"events"`
}

func getEndpoint(ctx context.Context, rc restCall, in getEndpointIn) (EndpointDetail, error) {
	var out EndpointDetail
	path := "/v1/endpoints/" + url.PathEscape(in.ID)
	if _, err := rc.do(ctx, http.MethodGet, path, nil, &out.Endpoint); err != nil {
		return EndpointDetail{}, err
	}
	rng := in.Range
	if rng == "" {
		rng = "24h"
	}
	var up apiv1.UptimeView
	switch _, err := rc.do(ctx, http.MethodGet, withQuery(path+"/uptime", url.Values{"range": {rng}}), nil, &up); {
	case err == nil:
		out.Uptime = &up
	case isStatus(err, http.StatusNotImplemented):
	default:
		return EndpointDetail{}, err
	}
	n := in.Events
	if n == 0 {
		n = defaultEvents
	}
	out.Events = []apiv1.EventView{}
	if n > 0 {
		var evs struct {
			Events []apiv1.EventView `json:"events"`
		}
		if _, err := rc.do(ctx, http.MethodGet, withQuery(path+"/events", url.Values{"limit": {strconv.Itoa(min(n, maxEvents))}}), nil, &evs); err != nil {
			return EndpointDetail{}, err
		}
		out.Events = append(out.Events, evs.Events...)
	}
	return out, nil
}

type listIncidentsIn struct {
	pageIn
	State      string `json:"state,omitempty" jsonschema:"keep incidents in this state: open, acknowledged or resolved"`
	EndpointID string `json:"endpointId,omitempty" jsonschema:"keep incidents of this endpoint"`
}

// IncidentList is list_incidents' output, as GET /v1/incidents answers.
type IncidentList struct {
	Incidents  []apiv1.IncidentView `json:"incidents"`
	NextCursor string               `json:"nextCursor,omitempty"`
}

func listIncidents(ctx context.Context, rc restCall, in listIncidentsIn) (IncidentList, error) {
	q := in.query(url.Values{})
	if in.State != "" {
		q.Set("state", in.State)
	}
	if in.EndpointID != "" {
		q.Set("endpoint", in.EndpointID)
	}
	var out IncidentList
	_, err := rc.do(ctx, http.MethodGet, withQuery("/v1/incidents", q), nil, &out)
	if out.Incidents == nil {
		out.Incidents = []apiv1.IncidentView{}
	}
	return out, err
}

type acknowledgeIn struct {
	ID     string `json:"id" jsonschema:"the incident's ID"`
	By     string `json:"by,omitempty" jsonschema:"who acknowledges it"`
	Reason string `json:"reason,omitempty" jsonschema:"why, for the incident's record"`
}

func acknowledgeIncident(ctx context.Context, rc restCall, in acknowledgeIn) (apiv1.IncidentView, error) {
	var out apiv1.IncidentView
	_, err := rc.do(ctx, http.MethodPost, "/v1/incidents/"+url.PathEscape(in.ID)+"/ack", apiv1.AckInput{By: in.By, Reason: in.Reason}, &out)
	return out, err
}

func createMaintenance(ctx context.Context, rc restCall, in apiv1.MaintenanceInput) (apiv1.MaintenanceView, error) {
	var out apiv1.MaintenanceView
	_, err := rc.do(ctx, http.MethodPost, "/v1/maintenance", in, &out)
	return out, err
}

type probeIn struct {
	ID string `json:"id" jsonschema:"the endpoint's ID"`
}

// ProbeOutcome is probe_endpoint_now's output: the result when it arrived
// in time, else what to look for later.
type ProbeOutcome struct {
	Result   *apiv1.ResultView    `json:"result,omitempty"`
	Accepted *apiv1.ProbeAccepted `json:"accepted,omitempty"`
}

func probeNow(ctx context.Context, rc restCall, in probeIn) (ProbeOutcome, error) {
	var raw json.RawMessage
	status, err := rc.do(ctx, http.MethodPost, "/v1/endpoints/"+url.PathEscape(in.ID)+"/probe", nil, &raw)
	if err != nil {
		return ProbeOutcome{}, err
	}
	var out ProbeOutcome
	if status == http.StatusAccepted {
		out.Accepted = new(apiv1.ProbeAccepted)
		err = json.Unmarshal(raw, out.Accepted)
	} else {
		out.Result = new(apiv1.ResultView)
		err = json.Unmarshal(raw, out.Result)
	}
	if err != nil {
		return ProbeOutcome{}, fmt.Errorf("decode the probe's answer: %w", err)
	}
	return out, nil
}

func withQuery(path string, q url.Values) string {
	if len(q) == 0 {
		return path
	}
	return path + "?" + q.Encode()
}
