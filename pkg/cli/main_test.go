package cli

import (
	"context"
	"os"
	"testing"
)

// envRunAsMCPMON makes the test binary run as the mcpmon binary
// (`<test binary> probe …`): the conformance suite starts its client as a
// command, and this one is exactly the code under test, without a build.
const envRunAsMCPMON = "MCPMON_TEST_RUN_AS_MCPMON"

func TestMain(m *testing.M) {
	if os.Getenv(envRunAsMCPMON) == "1" {
		os.Exit(Run(context.Background(), os.Args[1:], IO{Getenv: os.Getenv, Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr}))
	}
	os.Exit(m.Run())
}
