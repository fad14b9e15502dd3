package apiv1

import (
	"time"

	"github.com/mcpmon/mcpmon/pkg/msg"
)

// AgentInput is the body of POST /v1/agents: an agent key for one
// location of the caller's tenant. At most one of Expires and ExpiresIn.
type AgentInput struct {
	Name string `json:"name"`
	// Location names where the agent runs: 1-28 of [a-z0-9-]. Endpoints
	// name it in their regions as "loc-" + Location.
	Location  string     `json:"location"`
	Expires   *time.Time `json:"expires,omitempty"`
	ExpiresIn string     `json:"expiresIn,omitempty"`
}

// AgentView is an agent as the API returns it: its key's record and what
// its polls told the server.
type AgentView struct {
	ID       string `json:"id"`
	Name     string `json:"name"`
	Location string `json:"location"`
	// Region is what endpoints name in their regions to be probed there.
	Region  string     `json:"region"`
	Status  string     `json:"status"` // active, expired or revoked
	Created time.Time  `json:"created"`
	Expires *time.Time `json:"expires,omitempty"`
	Revoked *time.Time `json:"revoked,omitempty"`
	// LastSeen is the agent's last poll (absent before its first).
	LastSeen *time.Time `json:"lastSeen,omitempty"`
	// Version is the agent's own, from its User-Agent.
	Version string `json:"version,omitempty"`
	// ProbesPerMinute counts the results it posted over the last minute
	// it was seen in.
	ProbesPerMinute int `json:"probesPerMinute"`
	// Online: it polled within the server's --agent-offline-after.
	Online bool `json:"online"`
	// OfflineSince is its last poll, when it has not polled since for
	// --agent-offline-after (absent while online or before its first).
	OfflineSince *time.Time `json:"offlineSince,omitempty"`
	// ClockSkewSeconds is the agent's clock minus the server's, in
	// seconds, at its last poll that sent its time (AgentTimeHeader);
	// absent when none did. Slightly negative by the request's latency.
	ClockSkewSeconds *float64 `json:"clockSkewSeconds,omitempty"`
	// Key is the agent's token, only in the response to its creation.
	Key string `json:"key,omitempty"`
}

// AgentList is the body of GET /v1/agents.
type AgentList struct {
	Agents []AgentView `json:"agents"`
}

// AgentCommand is one probe an agent owes: the slot of an endpoint, with
// the endpoint as the prober needs it.
type AgentCommand struct {
	EndpointID string        `json:"endpointId"`
	Slot       time.Time     `json:"slot"`
	Endpoint   AgentEndpoint `json:"endpoint"`
}

// AgentEndpoint is what an agent needs of an endpoint to probe it.
// Secret values (header values, tool arguments, the OAuth client secret)
// are in clear: the server sends commands that carry them only over TLS,
// unless it was started to allow plain HTTP for tests. Agent-side
// references (${agent:NAME}, model.AgentRefs) are sent as written; the
// agent fills them in from its own secrets.
type AgentEndpoint struct {
	ID                string            `json:"id"`
	URL               string            `json:"url"`
	Transport         string            `json:"transport"`
	ProtocolVersion   string            `json:"protocolVersion,omitempty"`
	Schedule          string            `json:"schedule"`
	Timeout           string            `json:"timeout"`
	LatencyThreshold  string            `json:"latencyThreshold,omitempty"`
	Headers           map[string]string `json:"headers,omitempty"`
	ToolCheck         *ToolCheckInput   `json:"toolCheck,omitempty"`
	OAuth             *OAuthInput       `json:"oauth,omitempty"`
	CredentialWarning string            `json:"credentialWarning,omitempty"`
	Version           int64             `json:"version"`
}

// AgentCommands is the body of GET /v1/agent/commands.
type AgentCommands struct {
	Commands []AgentCommand `json:"commands"`
	// Withheld counts commands not sent because they carry secrets and
	// the request did not come over TLS.
	Withheld int `json:"withheld,omitempty"`
	// Agent is the name of the polling agent's key, for the agent's own
	// messages ("agent office-1 has no secret …").
	Agent string `json:"agent,omitempty"`
}

// AgentResults is the body of POST /v1/agent/results: the results of
// commands, as the prober made them.
type AgentResults struct {
	Results []msg.ProbeResult `json:"results"`
}

// AgentResultsAccepted is the answer to POST /v1/agent/results: Accepted
// results were published to the results queue; Refused lists the others,
// each refused alone with its reason and nothing of it published. A post
// whose every result is refused is answered with the first refusal's
// problem instead (as a post of one result always was).
type AgentResultsAccepted struct {
	Accepted int                  `json:"accepted"`
	Refused  []AgentResultRefused `json:"refused,omitempty"`
}

// AgentResultRefused is one refused result of a post: its index in
// results, the HTTP status it would have had alone (400 invalid, 403 not
// this location's endpoint, 404 no such endpoint), why, and the JSON
// pointer of the field at fault. Posting it again cannot help.
type AgentResultRefused struct {
	Index   int    `json:"index"`
	Status  int    `json:"status"`
	Detail  string `json:"detail"`
	Pointer string `json:"pointer,omitempty"`
}

// AgentUserAgent starts the User-Agent of `mcpmon agent`; the version
// follows the slash.
const AgentUserAgent = "mcpmon-agent/"

// AgentTimeHeader carries the agent's clock (RFC 3339 with fraction) on
// every request, so the server can show its skew.
const AgentTimeHeader = "Mcpmon-Agent-Time"

// Bounds of the agent exchanges.
const (
	// MaxAgentWait bounds ?wait= of GET /v1/agent/commands, below the
	// server's write timeout.
	MaxAgentWait     = 30 * time.Second
	DefaultAgentWait = 25 * time.Second
	// MaxAgentCommands bounds ?limit= (and the default) of one poll.
	MaxAgentCommands = 500
	// MaxAgentResults bounds the results of one POST.
	MaxAgentResults = 100
	// AgentRatePerSecond and AgentRateBurst are each agent key's request
	// rate on /v1/agent, a bucket of its own apart from its tenant's
	// --rate-limit: a location of 200 endpoints on @every 1s is 2 posts of
	// 100 results and a few polls a second.
	AgentRatePerSecond = 10
	AgentRateBurst     = 20
)
