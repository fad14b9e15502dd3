package msg

import "slices"

// Failure classes: ProbeResult.Class. A probe ends in exactly one class;
// StatusOf maps it to the probe's status. The table is the contract between
// whoever probes (the prober, an agent), the API that takes an agent's
// results, the aggregator and the README.
const (
	ClassOK                = "ok"                 // handshake and liveness call succeeded
	ClassDegraded          = "degraded"           // alive, but slower than the latency threshold or tools/list failing
	ClassRateLimited       = "rate_limited"       // HTTP 429: alive but throttling the probe
	ClassAuthRequired      = "auth_required"      // 401 with a usable OAuth protected-resource challenge: alive and protected
	ClassAuthRejected      = "auth_rejected"      // 401 although the endpoint has a credential header configured: it is wrong or expired
	ClassAuthMisconfigured = "auth_misconfigured" // 401 without a usable challenge / metadata: no client can log in
	ClassForbidden         = "forbidden"          // HTTP 403
	ClassNotFound          = "not_found"          // HTTP 404/405/501 on the MCP URL, in every transport tried
	ClassNotMCP            = "not_mcp"            // 2xx with HTML or no content type
	ClassProtocolError     = "protocol_error"     // invalid JSON / JSON-RPC / SSE, 406/415, oversized body
	ClassRPCError          = "rpc_error"          // initialize (or discover) answered with a JSON-RPC error
	ClassVersionMismatch   = "version_mismatch"   // no protocol revision both sides speak (or not the pinned one)
	ClassSessionBroken     = "session_broken"     // 404 on a request carrying the session ID right after initialize
	ClassSSEDeaf           = "sse_deaf"           // legacy SSE: endpoint event received, POSTs never answered on the stream
	ClassHTTP5xx           = "http_5xx"           // HTTP 5xx
	ClassTimeout           = "timeout"            // no answer within the endpoint's timeout
	ClassRefused           = "refused"            // TCP connection refused
	ClassDNS               = "dns"                // name does not resolve
	ClassTLS               = "tls"                // handshake failed: unknown authority, expired, wrong name
	ClassNetwork           = "network_error"      // any other transport failure (reset, EOF mid-response)
	ClassBlockedTarget     = "blocked_target"     // SSRF guard refused the address (loopback, private, metadata, ...)
	// The agent probing the endpoint holds no value for an agent-side
	// secret reference (${agent:NAME}) the endpoint makes: nothing is sent
	// to the target (pkg/agent sets it, no prober does).
	ClassSecretMissing   = "secret_missing"
	ClassToolFailed      = "tool_failed"       // the endpoint's tool check failed: tool missing, isError, error or unexpected result
	ClassAuthTokenFailed = "auth_token_failed" // the OAuth client-credentials token could not be obtained
	// Discovery named another authorization server than the pinned one,
	// which the probe did not follow (oauthpin.go).
	ClassAuthServerChanged = "auth_server_changed"
)

// ClassInfo is one outcome class: its name, the status it maps to and the
// meaning the README's table shows.
type ClassInfo struct {
	Class  string
	Status Status
	Doc    string
}

// Classes lists every class with its status, in README order. Metric label
// values and documentation are generated from it.
func Classes() []ClassInfo { return slices.Clone(classes[:]) }

var classes = [...]ClassInfo{
	{ClassOK, StatusUp, "handshake and liveness call succeeded"},
	{ClassAuthRequired, StatusUp, "401 with a Bearer challenge that leads to an authorization server (protected-resource metadata; for 2025-03-26 servers, authorization server metadata or the default /token at the origin): alive and protected (no credential header configured)"},
	{ClassDegraded, StatusDegraded, "alive, but slower than the latency threshold, or tools/list failing"},
	{ClassRateLimited, StatusDegraded, "HTTP 429 (Retry-After recorded): alive but throttling"},
	{ClassAuthRejected, StatusDown, "401 although a credential header is configured (Authorization, Cookie, an API key or token header): wrong or expired"},
	{ClassAuthMisconfigured, StatusDown, "bare 401, or a Bearer challenge that leads to no usable metadata or token endpoint"},
	{ClassAuthTokenFailed, StatusDown, "the endpoint's OAuth client-credentials token could not be obtained (token endpoint refused the client, unreachable, blocked or malformed answer); the message names the token URL's host and the OAuth error code"},
	{ClassAuthServerChanged, StatusDown, "the endpoint's OAuth token URL is discovered, and its metadata names another authorization server or token endpoint than the one pinned at the first discovery: the client secret is not sent there and no token is fetched (an `auth_server_changed` event names both); to accept the change, set `oauth.tokenUrl` or change the OAuth client"},
	{ClassForbidden, StatusDown, "HTTP 403"},
	{ClassNotFound, StatusDown, "HTTP 404/405/501 for every transport tried"},
	{ClassNotMCP, StatusDown, "2xx with HTML or no content type"},
	{ClassProtocolError, StatusDown, "invalid JSON, not JSON-RPC, bad SSE, 406/415, body over the size cap, a Content-Encoding the prober did not ask for, more than 5 interim (1xx) responses"},
	{ClassRPCError, StatusDown, "initialize / server/discover answered with a JSON-RPC error"},
	{ClassToolFailed, StatusDown, "the endpoint's tool check failed: the tool is not in tools/list, tools/call answered a JSON-RPC error or isError, or the result did not match the expectation (contains / jsonPath / equals)"},
	{ClassVersionMismatch, StatusDown, "no common protocol revision, or not the pinned one"},
	{ClassSessionBroken, StatusDown, "404 on the session right after initialize (load balancer without sticky sessions)"},
	{ClassSSEDeaf, StatusDown, "legacy SSE: endpoint event, then POSTs never answered on the stream"},
	{ClassHTTP5xx, StatusDown, "HTTP 5xx"},
	{ClassTimeout, StatusDown, "no complete answer within the endpoint timeout (also a response dripped past it)"},
	{ClassRefused, StatusDown, "TCP connection refused"},
	{ClassDNS, StatusDown, "host name does not resolve"},
	{ClassTLS, StatusDown, "TLS handshake failed (unknown authority, expired, wrong host)"},
	{ClassNetwork, StatusDown, "other transport failure (reset, truncated response)"},
	{ClassBlockedTarget, StatusDown, "SSRF guard refused the target address"},
	{ClassSecretMissing, StatusDown, "the agent probing the endpoint has no value for an agent-side secret it refers to (`${agent:NAME}`): nothing was sent to the target; the message names the agent, the secret and the variable to set"},
}

// KnownClass reports whether class is one of Classes: the API refuses an
// agent's result with any other.
func KnownClass(class string) bool {
	for _, c := range classes {
		if c.Class == class {
			return true
		}
	}
	return false
}

// StatusOf maps a class to the probe status; unknown classes are down.
func StatusOf(class string) Status {
	for _, c := range classes {
		if c.Class == class {
			return c.Status
		}
	}
	return StatusDown
}
