package api

// caps.go is the one home of the API's size caps on what a request may
// make the service store or parse: every collection and free-text field
// of an endpoint, the label selector and the cursor. A tenant's stored
// endpoint is read by every probe, every list and every alert, so what it
// may hold is bounded here, at the door, rather than by the body limit
// alone. The OpenAPI document states the same numbers (maxLength,
// maxItems, maxProperties); TestCapsMatchOpenAPI walks capTable against
// it so the two cannot drift.

import (
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/mcpmon/mcpmon/pkg/model"
)

// Request bodies: the shape checkJSON (bodycheck.go) holds every body to
// before anything decodes it. The size (--max-body-bytes) alone does not
// bound the work: 1 MiB holds 90,000 label members, which encoding/json
// builds into a map (ten times the body in memory) before the field caps
// below can refuse them. Each cap is set from the largest body a route
// accepts, with room to spare.
const (
	// maxBodyDepth bounds the nesting of any JSON request body. The
	// deepest document the API accepts (a tool check's arguments inside
	// an endpoint) needs far fewer levels.
	maxBodyDepth = 64
	// maxBodyMembers bounds one object's members or one array's
	// elements. The longest list a route accepts is a maintenance
	// window's model.MaxWindowEndpointIDs (1000) endpointIds; every other
	// list and map is capped at 256 or fewer (tool-check arguments) once
	// decoded.
	maxBodyMembers = 1024
	// maxBodyValues bounds the values of a whole body, containers
	// included. A maintenance window at its caps holds about 1,050; an
	// endpoint's lists and maps are capped at 32 each, and its sinks and
	// tool check at 16 KiB each, a few hundred values in practice.
	maxBodyValues = 4096
	// maxAgentResultsValues is the same bound for POST
	// /v1/agent/results, whose largest body is apiv1.MaxAgentResults
	// results each with every phase, a few events and
	// msg.MaxConformanceRules rule outcomes: about 35,000 values
	// (TestLargestBodiesPass counts them), with room for larger event
	// details.
	maxAgentResultsValues = 48 << 10
	// maxMCPBatch bounds the JSON-RPC messages of one /mcp request (a
	// batch, which the 2024-11-05 and 2025-03-26 eras allow; later eras
	// send one message a request). Each costs a request token (mcp.go).
	maxMCPBatch = 16
)

// bodyLimits hold most bodies; agentResultsLimits hold an agent's batch
// of results, the one route whose largest body needs more values.
var (
	bodyLimits         = bodyCaps{depth: maxBodyDepth, members: maxBodyMembers, values: maxBodyValues}
	agentResultsLimits = bodyCaps{depth: maxBodyDepth, members: maxBodyMembers, values: maxAgentResultsValues}
)

// Endpoint fields.
const (
	maxNameLen         = 200 // characters
	maxURLLen          = model.MaxURLLen
	maxScheduleLen     = 256
	maxDurationLen     = 32 // timeout, latencyThreshold, credentialWarning, repeatInterval
	maxHeaders         = 32
	maxHeaderNameLen   = 256
	maxHeaderValue     = 8 << 10
	maxLabels          = 32
	maxLabelKeyLen     = 63
	maxLabelValLen     = 255
	maxSinks           = 16
	maxSinksBytes      = 16 << 10
	maxRegions         = 32
	maxRegionLen       = 64
	maxToolNameLen     = 128
	maxToolArgsBytes   = 16 << 10
	maxToolArgsDepth   = 16 // levels inside the arguments object
	maxToolArgMembers  = 256
	maxExpectContains  = 1024
	maxJSONPathLen     = 512
	maxExpectEquals    = 4 << 10
	maxClientIDLen     = 256
	maxClientSecretLen = 4 << 10
	maxScopes          = 32
	maxScopeLen        = 256
	maxAudienceLen     = 512
)

// Times in query parameters and cursors are within what the stores can
// key: the embedded store keys time by nanoseconds since 1970 in an
// int64, which holds 1677-09-21 to 2262-04-11; past either end a key
// wraps around, and ?until=2263-01-01T00:00:00Z read as an empty log.
var (
	minQueryTime = time.Unix(0, math.MinInt64).UTC().Truncate(time.Second).Add(time.Second)
	maxQueryTime = time.Unix(0, math.MaxInt64).UTC().Truncate(time.Second)
)

// timeInRange is the problem with a time outside minQueryTime and
// maxQueryTime, or "".
func timeInRange(t time.Time) string {
	if t.Before(minQueryTime) || t.After(maxQueryTime) {
		return "must be " + queryTimeRange()
	}
	return ""
}

// queryTimeRange says the range of query times in a problem's words.
func queryTimeRange() string {
	return fmt.Sprintf("between %s and %s", minQueryTime.Format(time.RFC3339), maxQueryTime.Format(time.RFC3339))
}

// Query parameters.
const (
	maxCursorLen        = 512
	maxSelectorLen      = 4 << 10
	maxSelectorTerms    = 32
	maxSelectorInValues = 32 // values of one `k in (...)` term
)

// capRow is one cap as openapi.yaml states it: the keyword (maxLength,
// maxItems, maxProperties) at a path of the document, which must equal
// Limit. Path is a list of YAML keys from the document's root.
type capRow struct {
	Path    []string
	Keyword string
	Limit   int
}

// schemaProp is the path of a property of a component schema.
func schemaProp(schema string, props ...string) []string {
	p := []string{"components", "schemas", schema}
	for _, pr := range props {
		p = append(p, "properties", pr)
	}
	return p
}

// capTable lists every cap the document states.
var capTable = []capRow{
	{schemaProp("EndpointInput", "name"), "maxLength", maxNameLen},
	{schemaProp("EndpointInput", "url"), "maxLength", maxURLLen},
	{schemaProp("EndpointInput", "schedule"), "maxLength", maxScheduleLen},
	{schemaProp("EndpointInput", "timeout"), "maxLength", maxDurationLen},
	{schemaProp("EndpointInput", "latencyThreshold"), "maxLength", maxDurationLen},
	{schemaProp("EndpointInput", "credentialWarning"), "maxLength", maxDurationLen},
	{schemaProp("EndpointInput", "headers"), "maxProperties", maxHeaders},
	{append(schemaProp("EndpointInput", "headers"), "propertyNames"), "maxLength", maxHeaderNameLen},
	{append(schemaProp("EndpointInput", "headers"), "additionalProperties"), "maxLength", maxHeaderValue},
	{schemaProp("EndpointInput", "regions"), "maxItems", maxRegions},
	{append(schemaProp("EndpointInput", "regions"), "items"), "maxLength", maxRegionLen},
	{schemaProp("Labels"), "maxProperties", maxLabels},
	{append(schemaProp("Labels"), "propertyNames"), "maxLength", maxLabelKeyLen},
	{append(schemaProp("Labels"), "additionalProperties"), "maxLength", maxLabelValLen},
	{schemaProp("Rules", "repeatInterval"), "maxLength", maxDurationLen},
	{schemaProp("ToolCheck", "name"), "maxLength", maxToolNameLen},
	{schemaProp("ToolCheck", "arguments"), "maxProperties", maxToolArgMembers},
	{schemaProp("ToolCheck", "expect", "contains"), "maxLength", maxExpectContains},
	{schemaProp("ToolCheck", "expect", "jsonPath"), "maxLength", maxJSONPathLen},
	{schemaProp("OAuth", "tokenUrl"), "maxLength", maxURLLen},
	{schemaProp("OAuth", "clientId"), "maxLength", maxClientIDLen},
	{schemaProp("OAuth", "clientSecret"), "maxLength", maxClientSecretLen},
	{schemaProp("OAuth", "scopes"), "maxItems", maxScopes},
	{append(schemaProp("OAuth", "scopes"), "items"), "maxLength", maxScopeLen},
	{schemaProp("OAuth", "audience"), "maxLength", maxAudienceLen},
	{schemaProp("UpdateInput", "message"), "maxLength", model.MaxUpdateMessage},
	{schemaProp("StatusPageInput", "slug"), "maxLength", MaxSlugLen},
	{schemaProp("StatusPageInput", "title"), "maxLength", model.MaxPageTitle},
	{schemaProp("StatusPageInput", "description"), "maxLength", model.MaxPageDescription},
	{schemaProp("StatusPageInput", "logoUrl"), "maxLength", model.MaxPageLogoURL},
	{schemaProp("StatusPageInput", "host"), "maxLength", model.MaxPageHost},
	{schemaProp("StatusPageInput", "groups"), "maxItems", model.MaxPageGroups},
	{schemaProp("PageGroup", "name"), "maxLength", model.MaxGroupName},
	{schemaProp("PageGroup", "selector"), "maxProperties", model.MaxGroupSelector},
	{append(schemaProp("PageGroup", "selector"), "propertyNames"), "maxLength", maxLabelKeyLen},
	{append(schemaProp("PageGroup", "selector"), "additionalProperties"), "maxLength", maxLabelValLen},
	{schemaProp("IncidentView", "updates"), "maxItems", model.MaxIncidentUpdates},
	{[]string{"components", "parameters", "cursor", "schema"}, "maxLength", maxCursorLen},
	{[]string{"components", "parameters", "selector", "schema"}, "maxLength", maxSelectorLen},
}

// sinksCapProblem says why a sinks document is over its cap, or "".
func sinksCapProblem(sinks []byte) string {
	if len(sinks) > maxSinksBytes {
		return fmt.Sprintf("must be at most %d bytes", maxSinksBytes)
	}
	return ""
}

// toolArgsCapProblem says why a tool check's arguments are over their
// caps, or "": size, nesting (the object itself is the first level) and
// top-level members.
func toolArgsCapProblem(args []byte) string {
	switch {
	case len(args) > maxToolArgsBytes:
		return fmt.Sprintf("must be at most %d bytes", maxToolArgsBytes)
	case nestingExceeds(args, maxToolArgsDepth):
		return fmt.Sprintf("must be nested at most %d levels deep", maxToolArgsDepth)
	}
	var members map[string]json.RawMessage
	if json.Unmarshal(args, &members) == nil && len(members) > maxToolArgMembers {
		return fmt.Sprintf("at most %d members", maxToolArgMembers)
	}
	return ""
}
