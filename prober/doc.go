// Package prober owns the MCP probe: it speaks just enough of the Model
// Context Protocol over HTTP to tell whether a remote MCP server is alive, and
// classifies every way it can fail.
//
// Data enters as a msg.ProbeCommand (through Worker.Handle, a queue.Handler
// for the commands queue) plus the model.Endpoint it names; it leaves as one
// msg.ProbeResult per command, published to the results queue with group =
// endpoint ID and dedup ID = <endpointId>-<probeRunId>, the latest result kept
// in the store, the tool catalog and the last successful server identity
// kept under store.Objects kinds "catalog" and "server" (per region with a
// region set, Options.RegionalMemory: store.ProberObjectID), and the prober
// metrics.
//
// # Eras
//
// A probe speaks every protocol era a public server may (see Versions()):
// 2026-07-28 stateless (server/discover with params._meta and Mcp-Method),
// Streamable HTTP 2025-03-26 / 2025-06-18 / 2025-11-25 (initialize →
// notifications/initialized → ping → tools/list → DELETE, JSON or SSE answers,
// Mcp-Session-Id, MCP-Protocol-Version) and legacy HTTP+SSE 2024-11-05.
// Transport "auto" tries server/discover, falls back to initialize on a
// 2025-era answer, and to the legacy GET on 404/405/501; with the previous
// result it starts with the era the server spoke last time, unless that
// result failed or lies in an earlier renegotiation period
// (RenegotiateEvery). Protocol and server changes are measured against the
// last successful probe, kept under store.Objects kind "server".
//
// # Why not the go-sdk client
//
// The official client (github.com/modelcontextprotocol/go-sdk/mcp) turns HTTP
// failures into strings ("Unauthorized", "Not Found"), hides WWW-Authenticate
// and the status of the response that failed, offers no raw JSON-RPC, and
// starts with 2026-07-28 (an extra round trip against 2025-era servers). A
// probe needs exactly those facts to classify, so it speaks the handful of
// JSON-RPC calls itself, with httptrace hooks for the phases.
//
// It does not use net/http.Transport either: a probe is four requests on
// one fresh connection, where Transport's per-connection read/write
// goroutines and their hand-offs cost more CPU than the requests. httpClient
// (httpc.go) writes and reads on the calling goroutine: the probe's own
// requests, their headers chosen in one place (request.go), are spelled
// straight into the connection's buffer (reqwire.go, byte for byte what
// Request.Write would send), answers are read with the
// standard library's ReadResponse, and buffers are recycled between probes.
// The CPU this saves against the go-sdk client, measured side by side
// (BenchmarkProbe, BenchmarkProbeCPURatio, BenchmarkRawHTTPFloor*), is in
// the README's benchmark table, with the command that produced it:
//
//	go test ./prober -run '^$' -bench 'Probe|Floor' -benchtime 2000x
//
// Interleaving two clients in one process makes every client's probe
// dearer (caches gone cold, threads asleep; it is not garbage collection),
// which is why the alternating ratio reads higher than the side-by-side
// one for any client, the hand-written floor included.
//
// # Deep checks
//
// Three optional, credentialed checks go beyond liveness (the README's
// class table lists their classes):
//
//   - Tool check (toolcall.go): an endpoint's model.ToolCheck names one
//     read-only tool; after tools/list confirms it exists the probe sends
//     tools/call with its arguments (under 2026-07-28 with the Mcp-Name
//     header), timed as phase tool_call, and the result must not be
//     isError and must meet the expectation (a substring of the text
//     content, a jsonpath value of structuredContent). A failure is
//     tool_failed (down); a transport failure of the call keeps its own
//     class. The arguments are secrets like header values.
//   - OAuth client credentials (oauth.go): an endpoint's model.OAuthClient
//     yields the probe's bearer token, fetched through the SSRF guard,
//     cached per endpoint (bounded) and refreshed before it expires by the
//     prober's clock, timed as phase auth_token when fetched. Failing to
//     get one is auth_token_failed (down); a token the target refuses is
//     auth_rejected and dropped from the cache.
//   - Credential expiry watchdog (credexpiry.go): a configured
//     "Authorization: Bearer <JWT>" has its exp read (not verified) into
//     mcpmon_probe_credential_expiry_timestamp_seconds and, within the
//     warning window (default 72h) or once expired, a credential_expiry
//     event whose fingerprint hashes exp, iss and sub, never the token.
//
// # Traces
//
// With Options.Tracer (pkg/tracing builds it from --otlp-endpoint) each
// probe is a trace (otel.go): a root span "probe" with the result's
// class, status, era, transport and the target's host, and one child per
// phase with the phase's own start and end. An endpoint with TraceContext
// also gets the probe's traceparent on every request (request.go), and
// under 2026-07-28 in params._meta. Without a tracer no span is started.
//
// # Canaries
//
// With canary URLs (canary.go, --canary-url) each prober checks the
// operator's canaries every interval; DecideBlindness makes it blind when
// no canary gave an HTTP answer several rounds in a row and sighted after
// a few that did. While blind every result is published with Blind and
// BlindSince set (the aggregator turns the windows into no_data), a result
// that failed at the network level first waits for the canaries' word,
// and the operator gets one notice per spell and one when it ends.
//
// # Safety
//
// Targets are hostile until proven otherwise: the dialer refuses loopback,
// private, link-local (cloud metadata), CGNAT, unique-local, multicast and
// unspecified addresses after DNS resolution and on every redirect
// (blocked_target; the rule is pkg/netguard's, which the alert sinks use
// too); bodies and SSE streams are capped (1 MiB, 64 events);
// every probe has a deadline from the endpoint timeout and its own transport;
// the endpoint's headers, tool check arguments, OAuth client secret and
// token are secrets, never logged and scrubbed from what the target said
// (redact.go), never from the prober's own wording. An OAuth token URL is
// dialled through the same guard as a target.
package prober
