// Command mcpmon watches remote MCP servers and alerts their owners once per
// incident. `mcpmon run` (the default) runs every role in one process on
// embedded defaults; `mcpmon api|prober|aggregator|alerter` runs one role, on
// SQS and Redis, as many replicas as you like; `mcpmon queues ensure` creates
// the SQS FIFO queues; `mcpmon secrets rotate` re-seals endpoint secrets
// under a new key.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/mcpmon/mcpmon/pkg/daemon"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

const usage = `usage: mcpmon [command] [flags]

commands:
  run              every role in one process (default)
  api              REST API and scheduler
  prober           probe workers
  aggregator       results → verdicts
  alerter          verdicts → incidents → alerts
  queues ensure    create or check the SQS FIFO queues and their DLQs
  secrets rotate   add a new secrets key and re-seal every endpoint under it
  keys create|list|revoke
                   API keys, on the store directly (embedded: mcpmon stopped)
  dlq list|show|replay|purge
                   dead-letter queues, through the REST API (admin key)
  version          print the version

Run "mcpmon <command> --help" for the flags; every flag --foo-bar can also be
set as MCPMON_FOO_BAR.
`

func run(ctx context.Context, args []string, env func(string) string, stdout, stderr io.Writer) int {
	cmd := "run"
	if len(args) > 0 && args[0] != "" && args[0][0] != '-' {
		cmd, args = args[0], args[1:]
	}
	var err error
	switch cmd {
	case "run", "api", "prober", "aggregator", "alerter":
		err = daemon.Main(ctx, daemon.Role(cmd), args, env, stdout, stderr)
	case "queues":
		if len(args) == 0 || args[0] != "ensure" {
			fmt.Fprintln(stderr, `mcpmon queues: want "mcpmon queues ensure"`)
			return 2
		}
		err = daemon.EnsureQueues(ctx, args[1:], env, stdout, stderr)
	case "secrets":
		if len(args) == 0 || args[0] != "rotate" {
			fmt.Fprintln(stderr, `mcpmon secrets: want "mcpmon secrets rotate"`)
			return 2
		}
		err = daemon.RotateSecrets(ctx, args[1:], env, stdout, stderr)
	case "keys":
		err = daemon.ManageKeys(ctx, args, env, stdout, stderr)
	case "dlq":
		err = daemon.DeadLetterCommand(ctx, args, env, stdout, stderr)
	case "version":
		fmt.Fprintln(stdout, daemon.Version)
		return 0
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "mcpmon: unknown command %q\n%s", cmd, usage)
		return 2
	}
	if err != nil {
		if daemon.IsUsage(err) {
			fmt.Fprintf(stderr, "mcpmon %s: %v\n", cmd, err)
			return 2
		}
		if daemon.IsNotFound(err) {
			fmt.Fprintf(stderr, "mcpmon %s: %v\n", cmd, err)
			return 3
		}
		fmt.Fprintf(stderr, "mcpmon %s: %v\n", cmd, err)
		return 1
	}
	return 0
}
