package daemon

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mcpmon/mcpmon/pkg/clock"
	"github.com/mcpmon/mcpmon/pkg/config"
	"github.com/mcpmon/mcpmon/pkg/queue"
	sqsq "github.com/mcpmon/mcpmon/pkg/queue/sqs"
	"github.com/mcpmon/mcpmon/pkg/store"
	redisstore "github.com/mcpmon/mcpmon/pkg/store/redis"
)

func openRedis(ctx context.Context, o config.Options, clk clock.Clock, logger *slog.Logger) (store.Store, error) {
	// go-redis logs every failed dial on its own process-wide logger; send
	// those to debug so an outage is one warning from the store, not a flood.
	redisstore.RouteDriverLogs(logger)
	// A replica started while Redis is down waits for it (readyz 503,
	// messages held) instead of exiting and staying down.
	s, err := redisstore.New(ctx, o.RedisURL, redisstore.Options{Prefix: o.RedisPrefix, LedgerTTL: o.LedgerTTL, AuditTTL: o.AuditTTL, Clock: clk, Logger: logger, WaitForServer: true, LedgerReplicas: o.RedisLedgerReplicas, WatchDeployment: true})
	if err != nil {
		return nil, fmt.Errorf("connect to Redis (check --redis-url and that Redis is up): %w", err)
	}
	return s, nil
}

// ledgerCollector is the collector of the Redis store's ledger waits
// (mcpmon_store_ledger_*), nil when st is another backend.
func ledgerCollector(st store.Store) prometheus.Collector {
	if r, ok := storeUnder[*redisstore.Store](st); ok { // backends.go
		return redisstore.NewLedgerCollector(r)
	}
	return nil
}

func sqsOptions(o config.Options, logger *slog.Logger, reg prometheus.Registerer) sqsq.Options {
	opts := sqsq.Options{Endpoint: o.SQSEndpoint, Prefix: o.SQSPrefix, Region: o.SQSRegion, HighThroughput: o.HighThroughput, Logger: logger}
	if reg != nil {
		opts.Metrics = sqsq.NewMetrics(reg)
	}
	return opts
}

// openSQS opens the stage queues a role uses — and only those, so each role's
// IAM policy can stay narrow and an idle replica polls no queue it does not
// consume. Depth is watched on the queues the role consumes.
func openSQS(ctx context.Context, o config.Options, logger *slog.Logger, reg prometheus.Registerer, use RoleQueues) (*queues, error) {
	c, err := sqsq.New(ctx, sqsOptions(o, logger, reg))
	if err != nil {
		return nil, fmt.Errorf("configure SQS (check AWS credentials, --sqs-region and --sqs-endpoint): %w", err)
	}
	qs := &queues{byName: map[string]queue.Queue{}, remote: true}
	for _, cfg := range queue.StageConfigs(o.Regions...) {
		if !use.Sends[cfg.Name] && !use.Consumes[cfg.Name] {
			continue
		}
		q, err := c.Open(ctx, cfg)
		if err != nil {
			return nil, fmt.Errorf("open SQS queue %q (prefix %q): %w", cfg.Name, o.SQSPrefix, err)
		}
		qs.byName[cfg.Name] = q
		if !use.Consumes[cfg.Name] {
			continue
		}
		src := queue.DepthSource{Name: cfg.Name, Queue: q}
		if cfg.MaxReceiveCount > 0 {
			dlq, err := c.OpenDLQ(ctx, cfg)
			if err != nil {
				return nil, fmt.Errorf("open SQS dead-letter queue of %q (prefix %q): %w", cfg.Name, o.SQSPrefix, err)
			}
			src.DLQ = dlq
		}
		qs.depth = append(qs.depth, src)
	}
	if sendsCommands(use, o.Regions) { // the API role: it serves /v1/dlq
		qs.dead = openDeadLetters(ctx, c, o, logger)
	}
	return qs, nil
}

// openDeadLetters opens every stage queue with its DLQ for /v1/dlq. It is
// best effort: an API replica whose IAM policy does not reach the DLQs
// still serves everything else, and /v1/dlq answers 404 for the stages it
// could not open.
func openDeadLetters(ctx context.Context, c *sqsq.Client, o config.Options, logger *slog.Logger) map[string]queue.DeadLetterQueue {
	dead := map[string]queue.DeadLetterQueue{}
	for _, cfg := range queue.StageConfigs(o.Regions...) {
		if cfg.MaxReceiveCount == 0 {
			continue
		}
		src, err := c.Open(ctx, cfg)
		var dlq *sqsq.Queue
		if err == nil {
			dlq, err = c.OpenDLQ(ctx, cfg)
		}
		if err != nil {
			logger.Warn("dead-letter queue not available to /v1/dlq", "queue", cfg.Name, "prefix", o.SQSPrefix, "err", err)
			continue
		}
		dead[cfg.Name] = sqsq.NewDeadLetters(src, dlq)
	}
	return dead
}

// EnsureQueues implements `mcpmon queues ensure`: it creates the FIFO stage
// queues and their DLQs if missing and reports drift on existing ones.
func EnsureQueues(ctx context.Context, args []string, env func(string) string, stdout, stderr io.Writer) error {
	o, err := config.Parse("mcpmon queues ensure", args, env, stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return usageError{err}
	}
	if o.Queue != config.QueueSQS {
		// `queues ensure` is only about SQS; default the backend so the
		// command works without --queue sqs.
		o.Queue = config.QueueSQS
	}
	logger := NewLogger(o, stderr)
	c, err := sqsq.New(ctx, sqsOptions(o, logger, nil))
	if err != nil {
		return fmt.Errorf("configure SQS (check AWS credentials, --sqs-region and --sqs-endpoint): %w", err)
	}
	fmt.Fprintf(stderr, "ensuring SQS FIFO queues with prefix %q (high throughput: %v) ...\n", o.SQSPrefix, o.HighThroughput)
	if len(o.Regions) > 0 {
		fmt.Fprintf(stderr, "one commands queue per region: %s\n", strings.Join(o.Regions, ", "))
	}
	rep, err := sqsq.Ensure(ctx, c, queue.WithMaxReceiveCount(queue.StageConfigs(o.Regions...), o.MaxReceiveCount))
	for _, n := range rep.Created {
		fmt.Fprintf(stdout, "created  %s\n", n)
	}
	for _, n := range rep.Existed {
		fmt.Fprintf(stdout, "exists   %s\n", n)
	}
	for _, d := range rep.Drift {
		fmt.Fprintf(stdout, "DRIFT    %s\n", d)
	}
	if err != nil {
		return fmt.Errorf("ensure queues: %w", err)
	}
	if len(rep.Drift) > 0 {
		return fmt.Errorf("%d queue attribute(s) differ from what mcpmon expects; fix them in the console or your CloudFormation stack (mcpmon does not change a live queue)", len(rep.Drift))
	}
	return nil
}

// keepReasonsIn gives remote (SQS) queues a home for failure reasons: SQS
// dead-letters messages on its own and a message cannot carry one, so the
// consumers record them in the store and /v1/dlq reads them back by
// message ID (queue.FailureBook). The embedded broker keeps them on its
// messages and needs none.
func (q *queues) keepReasonsIn(st store.Store, clk clock.Clock) {
	if !q.remote || q.failures != nil {
		return
	}
	book := queue.NewFailureBook(st, clk)
	q.failures = book
	for _, d := range q.dead {
		if sd, ok := d.(*sqsq.DeadLetters); ok {
			sd.Reasons = book
		}
	}
}
