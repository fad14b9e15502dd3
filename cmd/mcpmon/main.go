// Command mcpmon watches remote MCP servers and alerts their owners once per
// incident, and is the command-line client of its own REST API: `mcpmon run`
// (the default) runs every role in one process; `mcpmon endpoints|incidents|
// maintenance|keys|dlq|status|apply|export` talk to a running server. The
// command tree lives in pkg/cli; this file only wires the process to it.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/mcpmon/mcpmon/pkg/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Run(ctx, os.Args[1:], cli.IO{Getenv: os.Getenv, Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr})
	stop()
	os.Exit(code)
}
