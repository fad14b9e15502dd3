package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	goredis "github.com/redis/go-redis/v9"

	"github.com/mcpmon/mcpmon/pkg/config"
	"github.com/mcpmon/mcpmon/pkg/daemon"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/msg"
	"github.com/mcpmon/mcpmon/pkg/queue"
	"github.com/mcpmon/mcpmon/pkg/queue/embedded"
	sqsq "github.com/mcpmon/mcpmon/pkg/queue/sqs"
	"github.com/mcpmon/mcpmon/pkg/seal"
)

// synthWindow is the aggregation window of the store-throughput run: long
// enough that every result is folded before its window closes on this
// machine, so results/s measures folding, not late drops.
const synthWindow = time.Minute

// runSynthetic measures the aggregator (and the alerter behind it) alone:
// no scheduler, no probes. It registers o.endpoints endpoints (never due),
// publishes o.synthetic results straight into the results queue — slots
// spread over the next window, so none is late — and only then starts the
// aggregators, so the backlog is drained as fast as they can fold it:
// results folded/s is results / time to drain. When that window has closed,
// the verdicts the aggregators apply are timed the same way, and the
// verdict publishes counted (more than one per verdict: windows decided
// by more than one replica). Embedded: one
// `mcpmon run` (bbolt, the in-process queue); SQS: o.aggregators aggregator
// processes' worth of daemons in this process plus one alerter, on Redis.
func runSynthetic(ctx context.Context, o options, stdout, stderr io.Writer) error {
	if o.synthetic < o.endpoints {
		return fmt.Errorf("--synthetic %d is fewer results than --endpoints %d", o.synthetic, o.endpoints)
	}
	perEndpoint := (o.synthetic + o.endpoints - 1) / o.endpoints
	if perEndpoint > int(synthWindow/time.Second) {
		return fmt.Errorf("--synthetic %d over %d endpoints is %d results per endpoint; at most %d fit one %s window (one per second): raise --endpoints",
			o.synthetic, o.endpoints, perEndpoint, int(synthWindow/time.Second), synthWindow)
	}
	dir, err := os.MkdirTemp("", "mcpmon-synth-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	cfg := config.Defaults()
	cfg.Listen = "127.0.0.1:0"
	cfg.DataDir = dir
	cfg.Window = synthWindow
	cfg.Grace = 2 * time.Second
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	roles := []daemon.Role{daemon.RoleAll}
	if o.queue == config.QueueSQS {
		if o.sqsEndpoint == "" || o.redisURL == "" {
			return errors.New("--synthetic on SQS needs --sqs-endpoint and --redis-url")
		}
		cfg.Queue, cfg.SQSEndpoint, cfg.SQSRegion = config.QueueSQS, o.sqsEndpoint, "us-east-1"
		cfg.SQSPrefix = fmt.Sprintf("synth%d-", time.Now().UnixNano())
		setDummyAWSCreds()
		env := func(k string) string {
			return map[string]string{"MCPMON_SQS_ENDPOINT": cfg.SQSEndpoint, "MCPMON_SQS_REGION": cfg.SQSRegion, "MCPMON_SQS_PREFIX": cfg.SQSPrefix}[k]
		}
		if err := daemon.EnsureQueues(ctx, nil, env, io.Discard, stderr); err != nil {
			return fmt.Errorf("create the SQS queues: %w", err)
		}
		cfg.Store, cfg.RedisURL = config.StoreRedis, o.redisURL
		cfg.RedisPrefix = fmt.Sprintf("mcpmon-synth-%d:", time.Now().UnixNano())
		cfg.SecretsKey = model.Secret(seal.EncodeKey(seal.NewKey()))
		roles = []daemon.Role{daemon.RoleAlerter}
		for range max(o.aggregators, 1) {
			roles = append(roles, daemon.RoleAggregator)
		}
	}

	// Register through a short-lived daemon's store (the API would add
	// HTTP and auth per endpoint, which is not what this measures).
	reg, err := daemon.Start(ctx, roles[len(roles)-1], cfg, daemon.Deps{Registry: prometheus.NewRegistry(), Logger: logger})
	if err != nil {
		return err
	}
	urls := make([]string, o.endpoints)
	for i := range urls {
		urls[i] = fmt.Sprintf("https://synthetic%d.example.com/mcp", i)
	}
	err = registerLoad(ctx, reg.Store(), urls, idleSchedule, stderr)
	reg.Stop()
	if werr := reg.Wait(); err == nil {
		err = werr
	}
	if err != nil {
		return err
	}

	// Results for the window after the next boundary: still open when the
	// aggregators fold them, closed soon after.
	window := time.Now().Truncate(synthWindow).Add(synthWindow)
	results := make([]msg.ProbeResult, 0, o.synthetic)
	for k := range perEndpoint {
		for i := 0; i < o.endpoints && len(results) < o.synthetic; i++ {
			id := fmt.Sprintf("load%06d", i)
			slot := window.Add(time.Duration(k) * time.Second)
			results = append(results, msg.ProbeResult{
				Schema: 1, EndpointID: id, ProbeRunID: msg.ProbeRunID(id, slot), Slot: slot,
				StartedAt: slot, FinishedAt: slot.Add(40 * time.Millisecond), Status: msg.StatusUp, Class: "ok",
				Transport: "streamable-http", ProtocolVersion: "2025-11-25",
				Phases: map[string]float64{msg.PhaseConnect: 0.001, msg.PhaseInitialize: 0.01, msg.PhaseTotal: 0.04},
			})
		}
	}
	fmt.Fprintf(stderr, "synthetic: publishing %d results for %d endpoints into the results queue ...\n", len(results), o.endpoints)
	t0 := time.Now()
	if err := publishResults(ctx, cfg, results); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "synthetic: published in %s; starting %d daemon(s): %v\n", time.Since(t0).Round(time.Millisecond), len(roles), roles)

	var daemons []*daemon.Daemon
	defer func() {
		for _, d := range daemons {
			d.Stop()
			_ = d.Wait()
		}
	}()
	start := time.Now()
	for i, role := range roles {
		c := cfg
		c.ReplicaID = fmt.Sprintf("synth-%s-%d", role, i)
		d, err := daemon.Start(ctx, role, c, daemon.Deps{Registry: prometheus.NewRegistry(), Logger: logger})
		if err != nil {
			return err
		}
		daemons = append(daemons, d)
	}
	sum := func(name, label, value string) (float64, error) {
		var t float64
		for _, d := range daemons {
			s, err := gather(d)
			if err != nil {
				return 0, err
			}
			if label == "" {
				t += s.sum(name)
			} else {
				t += s.labelled(name, label, value)
			}
		}
		return t, nil
	}
	waitFor := func(what string, want float64, read func() (float64, error), deadline time.Duration) (time.Duration, error) {
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		last := time.Now()
		for {
			got, err := read()
			if err != nil {
				return 0, err
			}
			if got >= want {
				return time.Since(start), nil
			}
			if time.Since(start) > deadline {
				return 0, fmt.Errorf("%s: %.0f of %.0f after %s", what, got, want, deadline)
			}
			if time.Since(last) >= 5*time.Second {
				fmt.Fprintf(stderr, "synthetic: %s %.0f/%.0f\n", what, got, want)
				last = time.Now()
			}
			select {
			case <-ctx.Done():
				return 0, ctx.Err()
			case <-tick.C:
			}
		}
	}
	folded, err := waitFor("results folded", float64(len(results)), func() (float64, error) {
		return sum("mcpmon_queue_deletes_total", "queue", msg.QueueResults)
	}, 10*time.Minute)
	if err != nil {
		return err
	}
	late, err := sum("mcpmon_results_late_total", "", "")
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "synthetic: folded in %s; waiting for the window to close (%s) and its %d verdicts ...\n",
		folded.Round(time.Millisecond), window.Add(synthWindow+cfg.Grace).Format(time.TimeOnly), o.endpoints)
	closeAt := window.Add(synthWindow + cfg.Grace)
	if err := sleep(ctx, time.Until(closeAt)); err != nil {
		return err
	}
	first := time.Now()
	start = first
	cmds0, cmdsErr := redisCommands(ctx, cfg)
	decided, err := waitFor("verdicts", float64(o.endpoints), func() (float64, error) {
		return sum("mcpmon_verdicts_total", "", "")
	}, 10*time.Minute)
	if err != nil {
		return err
	}
	aggs := 1
	if cfg.Queue == config.QueueSQS {
		aggs = max(o.aggregators, 1)
	}
	// Verdict publishes by every aggregator, duplicates included (SQS
	// accepts a duplicate send and drops it silently): the share of the
	// windows decided more than once. Read after two ticks more, so a
	// replica still deciding a window another has applied is counted.
	if err := sleep(ctx, 10*time.Second); err != nil {
		return err
	}
	publishes, err := sum("mcpmon_queue_sends_total", "queue", msg.QueueVerdicts)
	if err != nil {
		return err
	}
	takeovers, err := sum("mcpmon_aggregator_takeovers_total", "", "")
	if err != nil {
		return err
	}
	cmds1, err := redisCommands(ctx, cfg)
	cmdsErr = errors.Join(cmdsErr, err)
	fmt.Fprintln(stdout, "| measure | value |")
	fmt.Fprintln(stdout, "|---|---|")
	fmt.Fprintf(stdout, "| queue / store, aggregators | %s / %s, %d |\n", cfg.Queue, cfg.Store, aggs)
	fmt.Fprintf(stdout, "| results (endpoints × per endpoint) | %d (%d × %d) |\n", len(results), o.endpoints, perEndpoint)
	fmt.Fprintf(stdout, "| results folded/s (backlog drained) | **%.0f** (%s; %.0f late) |\n", float64(len(results))/folded.Seconds(), folded.Round(time.Millisecond), late)
	fmt.Fprintf(stdout, "| verdicts applied/s (after the window closed) | %.0f (%d in %s) |\n", float64(o.endpoints)/decided.Seconds(), o.endpoints, decided.Round(time.Millisecond))
	fmt.Fprintf(stdout, "| verdict publishes per verdict, all aggregators (1.00: each window decided once) | %.2f (%.0f; %.0f by takeover) |\n", publishes/float64(o.endpoints), publishes, takeovers)
	if cfg.Store == config.StoreRedis && cmdsErr == nil {
		// The CPU-independent cost of a verdict: what every replica's
		// decisions (and skips of windows another decided) ask of Redis,
		// the alerter's verdict handling included.
		fmt.Fprintf(stdout, "| Redis commands per verdict (window closed → verdicts applied + 10 s, all roles) | %.1f |\n", float64(cmds1-cmds0)/float64(o.endpoints))
	}
	return nil
}

// redisCommands reads the Redis server's total_commands_processed (0 and
// no error off Redis).
func redisCommands(ctx context.Context, cfg config.Options) (int64, error) {
	if cfg.Store != config.StoreRedis {
		return 0, nil
	}
	opt, err := goredis.ParseURL(cfg.RedisURL)
	if err != nil {
		return 0, err
	}
	c := goredis.NewClient(opt)
	defer c.Close()
	info, err := c.Info(ctx, "stats").Result()
	if err != nil {
		return 0, err
	}
	for line := range strings.SplitSeq(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "total_commands_processed:"); ok {
			return strconv.ParseInt(v, 10, 64)
		}
	}
	return 0, errors.New("redis INFO stats: no total_commands_processed")
}

// publishResults sends results into the results queue as the probers
// would (batches of 10, group = endpoint, dedup = endpoint-probeRun), from
// outside the daemons: on the embedded queue by opening its file while no
// daemon holds it.
func publishResults(ctx context.Context, cfg config.Options, results []msg.ProbeResult) error {
	var q queue.Queue
	var closeQ func() error
	switch cfg.Queue {
	case config.QueueSQS:
		c, err := sqsq.New(ctx, sqsq.Options{Endpoint: cfg.SQSEndpoint, Prefix: cfg.SQSPrefix, Region: cfg.SQSRegion})
		if err != nil {
			return err
		}
		var rc queue.Config
		for _, sc := range queue.StageConfigs() {
			if sc.Name == msg.QueueResults {
				rc = sc
			}
		}
		sq, err := c.Open(ctx, rc)
		if err != nil {
			return err
		}
		q, closeQ = sq, func() error { return nil }
	default:
		b, err := embedded.Open(cfg.DataDir, queue.StageConfigs(), embedded.Options{})
		if err != nil {
			return err
		}
		q, closeQ = b.Queue(msg.QueueResults), b.Close
	}
	pub := queue.NewPublisher(q, queue.PublisherOptions{MaxInFlight: 16})
	var wg sync.WaitGroup
	errs := make([]error, 64)
	for w := range errs {
		wg.Go(func() {
			for i := w; i < len(results) && errs[w] == nil; i += len(errs) {
				r := results[i]
				_, errs[w] = pub.Publish(ctx, queue.SendInput{GroupID: r.GroupID(), DedupID: r.DedupID(), Body: r.Body()})
			}
		})
	}
	wg.Wait()
	return errors.Join(errors.Join(errs...), pub.Close(), closeQ())
}
