// Package conformance owns mcpmon's spec-conformance rules: each a pure
// function over what one probe observed of a server (the results of
// initialize or server/discover and tools/list, the headers that matter,
// the answers to a few extra requests), with a stable ID, the protocol
// revisions (eras) it applies to and a link to the spec section it checks,
// and the official MCP JSON Schema of every era (schemas/, with their
// source in schemas/SOURCE) the results are validated against.
//
// Data enters as an Observation the prober fills during its handshake and
// leaves as a msg.Conformance on the probe result (Evaluate) and, when a
// rule that passed starts failing or back, as conformance_regressed and
// conformance_restored result events (Events). Conformance is advice: it
// never changes a probe's status. The rule list is docs/reference/conformance.md.
package conformance
