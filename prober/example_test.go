package prober_test

import (
	"fmt"

	"github.com/mcpmon/mcpmon/prober"
)

// The class table: every failure class and the probe status it maps to.
func ExampleStatusOf() {
	for _, c := range prober.Classes() {
		fmt.Printf("%-18s %s\n", c.Class, prober.StatusOf(c.Class))
	}
	// Output:
	// ok                 up
	// auth_required      up
	// degraded           degraded
	// rate_limited       degraded
	// auth_rejected      down
	// auth_misconfigured down
	// auth_token_failed  down
	// auth_server_changed down
	// forbidden          down
	// not_found          down
	// not_mcp            down
	// protocol_error     down
	// rpc_error          down
	// tool_failed        down
	// version_mismatch   down
	// session_broken     down
	// sse_deaf           down
	// http_5xx           down
	// timeout            down
	// refused            down
	// dns                down
	// tls                down
	// network_error      down
	// blocked_target     down
	// secret_missing     down
}

// The registration-time check the REST API runs on an endpoint's transport
// and pinned protocol version (its URL goes through netguard).
func ExampleValidateProtocol() {
	fmt.Println(prober.ValidateProtocol("sse", "2024-11-05"))
	fmt.Println(prober.ValidateProtocol("sse", "2026-07-28") != nil)
	// Output:
	// <nil>
	// true
}
