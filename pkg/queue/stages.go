package queue

import (
	"time"

	"github.com/mcpmon/mcpmon/pkg/msg"
)

// DefaultVisibility is every stage queue's visibility timeout and the
// consumers' default. It is short on purpose: a message held by a replica
// that was killed comes back after it, and while it is held the endpoint's
// whole FIFO group waits, so a minute here is a minute of no_data. A handler
// still working keeps its message by heartbeat (every third of it), so the
// work a message takes is not bounded by it.
const DefaultVisibility = 5 * time.Second

// DefaultMaxReceiveCount is the redrive threshold for every stage: enough
// receives to ride out a dependency outage of a few minutes (Redis restart,
// sink down) before a message is declared poison and moved to the DLQ.
const DefaultMaxReceiveCount = 10

// StageConfigs returns the stage queues. `mcpmon queues ensure`, the
// embedded queue and deploy/cloudformation all derive from this one list.
// Without regions there are three: commands, results, verdicts. With a
// region set (--regions) the one commands queue is replaced by one per
// region (msg.CommandsQueue), each with its own DLQ, in the order given.
func StageConfigs(regions ...string) []Config {
	commands := func(region string) Config {
		return Config{
			// Command bodies are deterministic (endpoint + slot), so two
			// schedulers emitting the same slot collapse to one message.
			Name:              msg.CommandsQueue(region),
			ContentBasedDedup: true,
			DedupScope:        DedupScopeQueue,
			VisibilityTimeout: DefaultVisibility,
			MaxReceiveCount:   DefaultMaxReceiveCount,
			Retention:         4 * 24 * time.Hour,
		}
	}
	var cfgs []Config
	if len(regions) == 0 {
		cfgs = append(cfgs, commands(""))
	}
	for _, r := range regions {
		cfgs = append(cfgs, commands(r))
	}
	return append(cfgs, []Config{
		{
			Name:              msg.QueueResults,
			DedupScope:        DedupScopeQueue,
			VisibilityTimeout: DefaultVisibility,
			MaxReceiveCount:   DefaultMaxReceiveCount,
			Retention:         4 * 24 * time.Hour,
		},
		{
			Name:              msg.QueueVerdicts,
			DedupScope:        DedupScopeQueue,
			VisibilityTimeout: DefaultVisibility,
			MaxReceiveCount:   DefaultMaxReceiveCount,
			Retention:         4 * 24 * time.Hour,
		},
	}...)
}

// DLQSuffix names a stage's dead-letter queue: "results" → "results-dlq".
const DLQSuffix = "-dlq"

// DLQRetention keeps dead letters for SQS's maximum of 14 days, time enough
// to investigate a poison message.
const DLQRetention = 14 * 24 * time.Hour

// DLQName returns the dead-letter queue name for a stage queue.
func DLQName(name string) string { return name + DLQSuffix }

// DLQConfig returns the dead-letter queue for cfg: same deduplication
// settings (a FIFO DLQ must match its source), no redrive of its own, and
// the longest retention.
func DLQConfig(cfg Config) Config {
	return Config{
		Name:              DLQName(cfg.Name),
		ContentBasedDedup: cfg.ContentBasedDedup,
		DedupScope:        cfg.DedupScope,
		VisibilityTimeout: cfg.VisibilityTimeout,
		Retention:         DLQRetention,
	}
}
