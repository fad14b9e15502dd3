package cli

import (
	"context"
	"encoding/json"
	"os"
	"testing"
)

// envRunAsMCPMON makes the test binary run as the mcpmon binary
// (`<test binary> probe …`): the conformance suite starts its client as a
// command, and this one is exactly the code under test, without a build.
const envRunAsMCPMON = "MCPMON_TEST_RUN_AS_MCPMON"

func TestMain(m *testing.M) {
	if os.Getenv(envRunAsMCPMON) == "1" {
		os.Exit(Run(context.Background(), withConformanceCredentials(os.Args[1:]), IO{Getenv: os.Getenv, Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr}))
	}
	os.Exit(m.Run())
}

// withConformanceCredentials passes the client credentials a conformance
// scenario hands its client (MCP_CONFORMANCE_CONTEXT) to `mcpmon probe` as
// a user would: the ID as a flag, the secret through a reference. The
// suite appends the server URL last.
func withConformanceCredentials(args []string) []string {
	var c struct {
		ClientID     string `json:"client_id"`
		ClientSecret string `json:"client_secret"`
	}
	if json.Unmarshal([]byte(os.Getenv("MCP_CONFORMANCE_CONTEXT")), &c) != nil || c.ClientSecret == "" || len(args) == 0 {
		return args
	}
	os.Setenv("MCPMON_CONFORMANCE_CLIENT_SECRET", c.ClientSecret)
	url := args[len(args)-1]
	return append(args[:len(args)-1:len(args)-1], "--oauth-client-id", c.ClientID, "--oauth-client-secret", "${env:MCPMON_CONFORMANCE_CLIENT_SECRET}", url)
}
