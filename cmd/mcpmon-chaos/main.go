// Command mcpmon-chaos is the chaos test behind `make chaos`: it proves that
// every outage pages exactly once while the pipeline is being killed.
//
// It builds mcpmon, starts N fake MCP endpoints on 127.0.0.1 and a webhook
// receiver that answers 500 to a share of deliveries, runs the pipeline —
// every role twice as separate processes on fauxqs and its own redis-server
// (--mode fleet), or one `mcpmon run` (--mode embedded) — and flips each
// endpoint through a plan of outages (503, a hung server, an HTML page)
// separated by up phases, while SIGKILLing a random process every few
// seconds and, in fleet mode, redis-server once. In agent mode (agent.go)
// two `mcpmon agent` processes probe every endpoint through a location,
// talking to the fleet's two API replicas, and are killed too; in
// embedded-agent mode the same agents talk to one `mcpmon run`. Then it matches delivered
// alerts to planned outages and prints a table: lost, duplicate and spurious
// alerts, the share of no_data verdicts and alert delay percentiles. It exits
// 1 when any outage was lost or paged other than once. All traffic stays on
// 127.0.0.1 and the run is bounded in time.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	o := defaultOptions()
	fs := flag.NewFlagSet("mcpmon-chaos", flag.ContinueOnError)
	fs.StringVar(&o.Mode, "mode", o.Mode, "fleet (every role ×2 on fauxqs + redis-server), embedded (one mcpmon run), agent (fleet roles, probed by 2 agents through a location; kills fall on agents and API replicas), embedded-agent (the same 2 agents talking to one mcpmon run) or cluster (the fleet on a 3+3 Redis Cluster; one primary SIGKILLed mid-run)")
	fs.IntVar(&o.Endpoints, "endpoints", o.Endpoints, "fake MCP endpoints, each probed @every 1s")
	fs.IntVar(&o.Outages, "outages", o.Outages, "planned outages per endpoint (kinds rotate: http503, hang, html)")
	fs.DurationVar(&o.Window, "window", o.Window, "mcpmon --window")
	fs.DurationVar(&o.Grace, "grace", o.Grace, "mcpmon --grace")
	fs.IntVar(&o.OutageWindows, "outage-windows", o.OutageWindows, "length of each outage, in windows")
	fs.IntVar(&o.UpWindows, "up-windows", o.UpWindows, "up phase after each outage, in windows")
	fs.IntVar(&o.WarmupWindows, "warmup-windows", o.WarmupWindows, "up phase before the first outage, in windows")
	fs.DurationVar(&o.KillEvery, "kill-every", o.KillEvery, "SIGKILL a random mcpmon process this often (0: 10s fleet, 15s embedded)")
	fs.DurationVar(&o.RedisDown, "redis-down", o.RedisDown, "fleet: how long redis-server stays dead after its mid-run kill")
	fs.Float64Var(&o.SinkFailRate, "sink-fail", o.SinkFailRate, "share of webhook deliveries answered 500")
	fs.Uint64Var(&o.Seed, "seed", o.Seed, "seed for the plan, the kills and the receiver's failures")
	fs.DurationVar(&o.Visibility, "visibility-timeout", o.Visibility, "mcpmon --visibility-timeout (0: the queue's own)")
	fs.DurationVar(&o.Drain, "drain", o.Drain, "how long to keep running after the plan (0: 2 windows + grace + 5s)")
	fs.DurationVar(&o.Bound, "bound", o.Bound, "how long after an outage ended its open alert still counts (0: one up phase)")
	fs.DurationVar(&o.Progress, "progress", o.Progress, "progress line interval")
	fs.StringVar(&o.SQSEndpoint, "sqs-endpoint", o.SQSEndpoint, "fauxqs endpoint on 127.0.0.1 (default $MCPMON_TEST_SQS_ENDPOINT)")
	fs.StringVar(&o.RedisServer, "redis-server", o.RedisServer, "redis-server binary; the harness runs its own on a free port")
	fs.StringVar(&o.Mcpmon, "mcpmon", o.Mcpmon, "prebuilt mcpmon binary (default: go build ./cmd/mcpmon)")
	fs.StringVar(&o.WorkDir, "work-dir", o.WorkDir, "directory for logs and data (default: a temporary one, kept only on failure)")
	if err := fs.Parse(os.Args[1:]); err != nil {
		os.Exit(2)
	}
	if err := o.validate(); err != nil {
		fmt.Fprintln(os.Stderr, "mcpmon-chaos:", err)
		os.Exit(2)
	}
	if err := run(ctx, o, os.Stdout); err != nil {
		if !errors.Is(err, errChaosFailed) {
			fmt.Fprintln(os.Stderr, "mcpmon-chaos:", err)
		}
		os.Exit(1)
	}
}
