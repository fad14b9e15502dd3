package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mcpmon/mcpmon/pkg/clock"
	"github.com/mcpmon/mcpmon/pkg/config"
	"github.com/mcpmon/mcpmon/pkg/msg"
	"github.com/mcpmon/mcpmon/pkg/queue"
	"github.com/mcpmon/mcpmon/pkg/queue/embedded"
	"github.com/mcpmon/mcpmon/pkg/seal"
	"github.com/mcpmon/mcpmon/pkg/store"
	"github.com/mcpmon/mcpmon/pkg/store/bolt"
)

// queues is the set of stage queues a process talks to.
type queues struct {
	byName map[string]queue.Queue
	depth  []queue.DepthSource
	close  func() error
	// remote queues need receives finished on shutdown (see
	// queue.ConsumerOptions.FinishReceive), with a shorter long poll so
	// shutdown stays quick.
	remote bool
	// dead are the stage queues' dead-letter queues the API serves under
	// /v1/dlq; failures keeps why a handler failed, for those (the broker
	// itself when embedded, the store on SQS: keepReasonsIn).
	dead     map[string]queue.DeadLetterQueue
	failures queue.FailureRecorder
	// file is the embedded broker (nil on SQS): whether its file takes
	// writes (readiness) and how many of its own file's commits failed.
	file interface {
		Check() error
		CommitFailures() uint64
	}
}

func (q *queues) get(name string) queue.Queue { return q.byName[name] }

// openStore opens the store backend with endpoint secrets sealed at rest
// (secrets.go): every component reads and writes endpoints through it.
func openStore(ctx context.Context, o config.Options, kr *seal.Keyring, clk clock.Clock, logger *slog.Logger) (store.Store, error) {
	st, err := openBackend(ctx, o, clk, logger)
	if err != nil {
		return nil, err
	}
	sealedSt, err := sealStore(ctx, o, st, kr, logger)
	if err != nil {
		st.Close()
		return nil, err
	}
	return sealedSt, nil
}

func openBackend(ctx context.Context, o config.Options, clk clock.Clock, logger *slog.Logger) (store.Store, error) {
	switch o.Store {
	case config.StoreEmbedded:
		if err := os.MkdirAll(o.DataDir, 0o750); err != nil {
			return nil, fmt.Errorf("create data dir %s: %w", o.DataDir, err)
		}
		path := filepath.Join(o.DataDir, "store.db")
		s, err := bolt.Open(path, bolt.Options{Clock: clk, LedgerTTL: o.LedgerTTL, AuditTTL: o.AuditTTL, Logger: logger})
		if err != nil {
			return nil, fmt.Errorf("open embedded store %s: %w", path, err) // a lock held says which process
		}
		return s, nil
	case config.StoreRedis:
		return openRedis(ctx, o, clk, logger)
	}
	return nil, fmt.Errorf("unknown store %q", o.Store)
}

// RoleQueues says which stage queues a role sends to and consumes; the
// deployment's IAM policies are derived from the same table.
type RoleQueues struct {
	Sends, Consumes map[string]bool
}

// QueuesOf returns the stage queues role r uses without a region set.
func QueuesOf(r Role) RoleQueues { return QueuesIn(r, nil, "") }

// QueuesIn returns the stage queues role r uses in a deployment with the
// region set regions (nil: none), for a prober of region (its --region):
// the API/scheduler sends to every region's commands queue, a prober
// consumes its own region's, and `run` consumes them all (one prober per
// region).
func QueuesIn(r Role, regions []string, region string) RoleQueues {
	use := RoleQueues{Sends: map[string]bool{}, Consumes: map[string]bool{}}
	if r.has(RoleAPI) {
		for _, q := range commandQueues(regions) {
			use.Sends[q] = true
		}
		// Agents post their results to the API (pkg/api/agents.go), which
		// publishes them as a prober would.
		use.Sends[msg.QueueResults] = true
	}
	if r.has(RoleProber) {
		for _, pr := range proberRegions(r, regions, region) {
			use.Consumes[pr.queue] = true
		}
		use.Sends[msg.QueueResults] = true
	}
	if r.has(RoleAggregator) {
		use.Consumes[msg.QueueResults] = true
		use.Sends[msg.QueueVerdicts] = true
	}
	if r.has(RoleAlerter) {
		use.Consumes[msg.QueueVerdicts] = true
	}
	return use
}

// sharedFile returns the embedded store's file when the embedded queue is
// to keep its messages in it too: then a probe's queue writes and store
// writes share commits (one pair of fdatasyncs instead of one per file),
// and the data dir holds one file. nil otherwise.
func sharedFile(o config.Options, st store.Store) *bolt.Store {
	if o.Queue != config.QueueEmbedded || o.Store != config.StoreEmbedded {
		return nil
	}
	b, _ := storeUnder[*bolt.Store](st)
	return b
}

// fileCollector is the collector of the embedded store's commits and
// pages written (mcpmon_store_*), nil when st is another backend.
func fileCollector(st store.Store) *bolt.FileCollector {
	if b, ok := storeUnder[*bolt.Store](st); ok {
		return b.FileCollector()
	}
	return nil
}

// writeFailuresDesc is the one metric of writes that a full or failing
// disk refused, whichever backend holds them.
var writeFailuresDesc = prometheus.NewDesc("mcpmon_store_commit_failures_total",
	"Writes mcpmon's durable state could not persist (a full or failing disk): failed commits of the embedded store's file and of the embedded queue's own file, and writes Redis refused with MISCONF. /readyz names which.", nil, nil)

// writeFailures exports mcpmon_store_commit_failures_total: the sum of
// the store's (bolt.Store, redis.Store) and the embedded queue's own
// file's failed writes.
type writeFailures []func() uint64

// newWriteFailures counts what st and qs report, nil when neither does.
func newWriteFailures(st store.Store, qs *queues) writeFailures {
	var w writeFailures
	if f, ok := storeUnder[failingStore](st); ok {
		w = append(w, f.CommitFailures)
	}
	if qs != nil && qs.file != nil {
		w = append(w, qs.file.CommitFailures)
	}
	return w
}

// failingStore is a store that counts the writes it could not persist.
type failingStore interface {
	store.Store
	CommitFailures() uint64
}

// Describe implements prometheus.Collector.
func (w writeFailures) Describe(ch chan<- *prometheus.Desc) { ch <- writeFailuresDesc }

// Collect implements prometheus.Collector.
func (w writeFailures) Collect(ch chan<- prometheus.Metric) {
	var n uint64
	for _, f := range w {
		n += f()
	}
	ch <- prometheus.MustNewConstMetric(writeFailuresDesc, prometheus.CounterValue, float64(n))
}

// createdDesc: when the data was created, which moves forward only when
// it was replaced by nothing (rule MCPMonStoreReplaced).
var createdDesc = prometheus.NewDesc("mcpmon_store_created_timestamp_seconds",
	"When the data this process works on was created (Unix seconds): Redis's deployment marker, or the embedded store's file. It moves forward only when the data was replaced by an empty store (Redis restarted without persistence, the data dir emptied) while no process ran; rule MCPMonStoreReplaced.", nil, nil)

// createdStore is a store that knows when its data was created
// (bolt.Store, redis.Store).
type createdStore interface {
	store.Store
	Created() time.Time
}

// storeCreated exports mcpmon_store_created_timestamp_seconds, nothing
// while the store does not know yet (Redis not reached).
type storeCreated struct{ st createdStore }

// Describe implements prometheus.Collector.
func (c storeCreated) Describe(ch chan<- *prometheus.Desc) { ch <- createdDesc }

// Collect implements prometheus.Collector.
func (c storeCreated) Collect(ch chan<- prometheus.Metric) {
	if t := c.st.Created(); !t.IsZero() {
		ch <- prometheus.MustNewConstMetric(createdDesc, prometheus.GaugeValue, float64(t.Unix()))
	}
}

// storeUnder returns the store of type T under st's wrappers (sealing,
// tracing), if st is one.
func storeUnder[T store.Store](st store.Store) (T, bool) {
	for st != nil {
		if b, ok := st.(T); ok {
			return b, true
		}
		u, ok := st.(interface{ Unwrap() store.Store })
		if !ok {
			break
		}
		st = u.Unwrap()
	}
	var zero T
	return zero, false
}

// openQueues opens the stage queues; an embedded queue keeps its messages
// in shared's file (sharedFile) when it is not nil, committed with the
// store's writes, else in its own file.
func openQueues(ctx context.Context, o config.Options, shared *bolt.Store, clk clock.Clock, logger *slog.Logger, reg prometheus.Registerer, use RoleQueues) (*queues, error) {
	cfgs := queue.WithMaxReceiveCount(queue.StageConfigs(o.Regions...), o.MaxReceiveCount)
	switch o.Queue {
	case config.QueueEmbedded:
		if err := os.MkdirAll(o.DataDir, 0o750); err != nil {
			return nil, fmt.Errorf("create data dir %s: %w", o.DataDir, err)
		}
		eo := embedded.Options{Clock: clk, Logger: logger}
		if shared != nil {
			eo.DB, eo.Batch = shared.DB(), shared.BatchOf
		}
		b, err := embedded.Open(o.DataDir, cfgs, eo)
		if err != nil {
			return nil, fmt.Errorf("open embedded queue in %s: %w", o.DataDir, err)
		}
		qs := &queues{byName: map[string]queue.Queue{}, close: b.Close, dead: map[string]queue.DeadLetterQueue{}, failures: b, file: b}
		for _, c := range cfgs {
			qs.byName[c.Name] = b.Queue(c.Name)
			if c.MaxReceiveCount > 0 {
				qs.dead[c.Name] = b.DeadLetters(c.Name)
			}
			src := queue.DepthSource{Name: c.Name}
			if sr, ok := b.Queue(c.Name).(queue.StatsReader); ok {
				src.Queue = sr
			}
			if sr, ok := b.DLQ(c.Name).(queue.StatsReader); ok {
				src.DLQ = sr
			}
			qs.depth = append(qs.depth, src)
		}
		return qs, nil
	case config.QueueSQS:
		return openSQS(ctx, o, logger, reg, use)
	}
	return nil, errors.New("unknown queue backend " + o.Queue)
}
