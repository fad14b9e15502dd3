package netguard_test

import (
	"errors"
	"fmt"

	"github.com/mcpmon/mcpmon/pkg/netguard"
)

// The registration-time check the REST API runs before storing an endpoint.
func ExampleGuard_CheckTarget() {
	var g netguard.Guard // the zero Guard refuses every blocked address
	fmt.Println(g.CheckTarget("https://mcp.example.com/mcp"))
	fmt.Println(errors.Is(g.CheckTarget("http://169.254.169.254/latest/meta-data/"), netguard.ErrBlocked))
	fmt.Println(errors.Is(g.CheckTarget("https://user:pw@example.com/mcp"), netguard.ErrInvalidURL))
	// Output:
	// <nil>
	// true
	// true
}
