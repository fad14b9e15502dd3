// Command mcpmon-load is the load harness behind `make bench`: it starts N
// go-sdk MCP servers on 127.0.0.1, runs the whole mcpmon pipeline in-process
// against them for a fixed duration, and prints a table of what it cost —
// probes per second, CPU per probe, probe→verdict delay, memory and, on SQS,
// SQS requests per probe result. All traffic stays on 127.0.0.1 and the run
// is bounded in time.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"

	"github.com/mcpmon/mcpmon/pkg/config"
	"github.com/mcpmon/mcpmon/pkg/daemon"
	"github.com/mcpmon/mcpmon/pkg/metrics"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/seal"
	"github.com/mcpmon/mcpmon/pkg/store"
)

type options struct {
	endpoints   int
	duration    time.Duration
	queue       string
	sqsEndpoint string
	redisURL    string

	schedule   string
	fleet      bool // the MCP server in a child process, one path per endpoint
	peer       int  // go-sdk client handshakes for the peer CPU figure
	warmup     time.Duration
	cpuprofile string
	memprofile string
	fleetChild bool
	peerChild  string // internal: run --peer handshakes against this URL, print their CPU
	down       int    // endpoints pointed at a closed port: outages, incidents and alerts

	synthetic   int // results published straight into the results queue; 0: the load run
	aggregators int

	idle         string // sizes for the idle measurement; empty: the load run
	idleWindow   time.Duration
	idleSettle   time.Duration
	idleProfiles string
	idleChild    string // data dir: run as the idle measurement's child
	idleCPUProf  string

	versus              bool // the same fleet checked by mcpmon, Gatus and blackbox_exporter
	versusSettle        time.Duration
	versusWindow        time.Duration
	gatus               string
	blackbox            string
	prometheus          string
	mcpmonArgs          string
	mcpmonChild         bool // internal: `mcpmon run` with the arguments after --
	fleetSessionTimeout time.Duration

	agents            int // agents mode: this many in-process agents against one `mcpmon run`
	endpointsPerAgent int
	agentsSettle      time.Duration
	agentConcurrency  int
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var o options
	fs := flag.NewFlagSet("mcpmon-load", flag.ContinueOnError)
	fs.IntVar(&o.endpoints, "endpoints", 50, "MCP endpoints to register")
	fs.StringVar(&o.schedule, "schedule", "@every 1s", "every endpoint's schedule")
	fs.BoolVar(&o.fleet, "fleet", false, "serve every endpoint from one go-sdk MCP server in a child process (/e/<i>), so the pipeline's CPU excludes the servers'; needed past 2,000 endpoints")
	fs.IntVar(&o.peer, "peer", 0, "with --fleet: after the run, this many go-sdk client handshakes against the same server, for the CPU-per-probe ratio")
	fs.DurationVar(&o.warmup, "warmup", 0, "with --fleet: leave the first this long of --duration out of the steady-state rows (one schedule interval: every endpoint's first probe, which stores its first records and runs the hourly conformance requests); --cpuprofile then starts after it")
	fs.IntVar(&o.down, "down", 0, "point this many of the endpoints at a closed port, so incidents open and alerts reach a local webhook (the verdict → alert delay row)")
	fs.StringVar(&o.cpuprofile, "cpuprofile", "", "write the pipeline's CPU profile over the run to this file")
	fs.StringVar(&o.peerChild, "peer-child", "", "internal: the go-sdk client handshakes of --peer against this URL, in a process of their own")
	fs.StringVar(&o.memprofile, "memprofile", "", "write the pipeline's allocation profile (go tool pprof -sample_index=alloc_space) at the end of the load run to this file")
	fs.IntVar(&o.synthetic, "synthetic", 0, "instead of probing, publish this many results straight into the results queue and measure the aggregator alone (results folded/s, verdicts applied/s)")
	fs.IntVar(&o.aggregators, "aggregators", 2, "--synthetic on SQS: aggregator daemons")
	fs.BoolVar(&o.fleetChild, "fleet-child", false, "internal: serve the --fleet MCP server until SIGTERM")
	fs.DurationVar(&o.fleetSessionTimeout, "fleet-session-timeout", 0, "internal: the --fleet server closes sessions idle this long (0: never)")
	fs.BoolVar(&o.versus, "versus", false, "instead of the load run, check the same --endpoints go-sdk endpoints every second with mcpmon run, Gatus (--gatus) and blackbox_exporter scraped by Prometheus (--blackbox, --prometheus), all at once, and print CPU per check and RSS per endpoint of each; --cpuprofile profiles mcpmon's side")
	fs.DurationVar(&o.versusSettle, "versus-settle", 20*time.Second, "--versus: how long every monitor runs before the window")
	fs.DurationVar(&o.versusWindow, "versus-window", time.Minute, "--versus: how long to measure")
	fs.StringVar(&o.gatus, "gatus", "", "--versus: the Gatus binary (empty: leave Gatus out)")
	fs.StringVar(&o.blackbox, "blackbox", "", "--versus: the blackbox_exporter binary (empty, or no --prometheus: leave it out)")
	fs.StringVar(&o.prometheus, "prometheus", "", "--versus: the Prometheus binary that scrapes the blackbox_exporter")
	fs.StringVar(&o.mcpmonArgs, "mcpmon-args", "", "--versus: more mcpmon run flags, separated by spaces (e.g. --probe-concurrency=64)")
	fs.BoolVar(&o.mcpmonChild, "mcpmon-child", false, "internal: run mcpmon run with the arguments after --")
	fs.IntVar(&o.agents, "agents", 0, "instead of the load run, run this many agents (pkg/agent over real HTTP, each its own key and location) against one mcpmon run in a child process and print what the API spent serving them; --schedule, --duration and --mcpmon-args apply")
	fs.IntVar(&o.endpointsPerAgent, "endpoints-per-agent", 200, "--agents: endpoints probed from each agent's location")
	fs.IntVar(&o.agentConcurrency, "agent-concurrency", 0, "--agents: each agent's probes in flight (0: the agent's default, 16)")
	fs.DurationVar(&o.agentsSettle, "agents-settle", 0, "--agents: how long the agents run before the measurement (default: two schedule intervals + 10s)")
	fs.DurationVar(&o.duration, "duration", 25*time.Second, "how long to run the pipeline")
	fs.StringVar(&o.queue, "queue", "embedded", "embedded or sqs")
	fs.StringVar(&o.sqsEndpoint, "sqs-endpoint", os.Getenv("MCPMON_TEST_SQS_ENDPOINT"), "SQS endpoint (an emulator on 127.0.0.1)")
	fs.StringVar(&o.redisURL, "redis-url", "", "use Redis as the store")
	fs.StringVar(&o.idle, "idle", "", "instead of the load run, measure idle cost with these endpoint counts registered and nothing due (e.g. 10000,100000)")
	fs.DurationVar(&o.idleWindow, "idle-window", time.Minute, "idle: how long to measure each size (a minute holds every periodic loop: resync every 15s, one aggregator window)")
	// The aggregator first lists endpoints for no_data once a whole
	// window that began after it started has closed: up to 2 windows +
	// grace after start.
	def := config.Defaults()
	fs.DurationVar(&o.idleSettle, "idle-settle", 2*def.Window+def.Grace+5*time.Second, "idle: how long to let the daemons settle before measuring (default: until the aggregator's first no_data listing)")
	fs.StringVar(&o.idleProfiles, "idle-profiles", "", "idle: write each child's CPU profile into this directory")
	fs.StringVar(&o.idleChild, "idle-child", "", "internal: run the daemon on this data dir until SIGTERM")
	fs.StringVar(&o.idleCPUProf, "idle-cpuprofile", "", "internal: the idle child's CPU profile")
	if err := fs.Parse(os.Args[1:]); err != nil {
		os.Exit(2)
	}
	if o.peerChild != "" {
		cpu, err := peerHandshakes(ctx, o.peerChild, o.peer, 8)
		if err != nil {
			fmt.Fprintln(os.Stderr, "mcpmon-load:", err)
			os.Exit(1)
		}
		fmt.Println(int64(cpu))
		return
	}
	if o.fleetChild {
		if err := serveFleet(ctx, o.fleetSessionTimeout, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "mcpmon-load:", err)
			os.Exit(1)
		}
		return
	}
	if o.mcpmonChild || o.versus {
		var err error
		if o.mcpmonChild {
			err = runMcpmonChild(ctx, fs.Args(), o.cpuprofile, os.Stdout, os.Stderr)
		} else if o.endpoints < 2 || o.endpoints > 100_000 || o.versusWindow < 10*time.Second || o.versusWindow > 30*time.Minute {
			fmt.Fprintln(os.Stderr, "mcpmon-load: --versus needs --endpoints 2..100000 and --versus-window 10s..30m")
			os.Exit(2)
		} else {
			err = runVersus(ctx, versusOptions{endpoints: o.endpoints, settle: o.versusSettle, window: o.versusWindow,
				gatus: o.gatus, blackbox: o.blackbox, prometheus: o.prometheus, cpuprofile: o.cpuprofile, mcpmonArgs: strings.Fields(o.mcpmonArgs)}, os.Stdout, os.Stderr)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "mcpmon-load:", err)
			os.Exit(1)
		}
		return
	}
	if o.agents > 0 {
		if err := runAgentsMode(ctx, o); err != nil {
			fmt.Fprintln(os.Stderr, "mcpmon-load:", err)
			os.Exit(1)
		}
		return
	}
	if o.idleChild != "" || o.idle != "" {
		var err error
		if o.idleChild != "" {
			err = runIdleChild(ctx, o.idleChild, o.idleCPUProf, os.Stdout, os.Stderr)
		} else {
			var sizes []int
			if sizes, err = parseSizes(o.idle); err == nil {
				err = runIdle(ctx, sizes, o.idleWindow, o.idleSettle, o.idleProfiles, os.Stdout, os.Stderr)
			}
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "mcpmon-load:", err)
			os.Exit(1)
		}
		return
	}
	if o.synthetic > 0 {
		stopProfile, err := startCPUProfile(o.cpuprofile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "mcpmon-load: --cpuprofile:", err)
			os.Exit(1)
		}
		defer stopProfile()
		if err := runSynthetic(ctx, o, os.Stdout, os.Stderr); err != nil {
			fmt.Fprintln(os.Stderr, "mcpmon-load:", err)
			os.Exit(1)
		}
		return
	}
	maxEndpoints := 2000
	if o.fleet {
		maxEndpoints = 100_000
	}
	if o.endpoints < 1 || o.endpoints > maxEndpoints || o.duration < 5*time.Second || o.duration > 30*time.Minute {
		fmt.Fprintf(os.Stderr, "mcpmon-load: --endpoints must be 1..%d (more with --fleet) and --duration 5s..30m\n", maxEndpoints)
		os.Exit(2)
	}
	if o.warmup < 0 || o.warmup > 0 && (!o.fleet || o.duration-o.warmup < 5*time.Second) {
		fmt.Fprintln(os.Stderr, "mcpmon-load: --warmup needs --fleet and at least 5s of --duration after it")
		os.Exit(2)
	}
	if err := run(ctx, o, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "mcpmon-load:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, o options, stdout, stderr io.Writer) error {
	dir, err := os.MkdirTemp("", "mcpmon-load-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	var (
		urls []string
		srv  *fleet
	)
	if o.fleet {
		if srv, urls, err = startFleet(ctx, o.endpoints, 0, stderr); err != nil {
			return err
		}
		defer srv.stop()
	} else {
		var closeServers func()
		if urls, closeServers, err = startServers(o.endpoints); err != nil {
			return err
		}
		defer closeServers()
	}

	cfg := config.Defaults()
	cfg.Listen = "127.0.0.1:0"
	cfg.DataDir = dir
	if o.down > 0 {
		// Down endpoints: a port that refuses, so every probe fails at
		// once; their incidents alert a local webhook that answers 204.
		closed, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		dead := "http://" + closed.Addr().String() + "/mcp"
		_ = closed.Close()
		for i := 0; i < o.down && i < len(urls); i++ {
			urls[i] = dead
		}
		hook := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }), ReadHeaderTimeout: 5 * time.Second}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		go func() { _ = hook.Serve(ln) }()
		defer hook.Close()
		cfg.WebhookURL = model.SecretURL("http://" + ln.Addr().String() + "/hook")
	}
	cfg.Window = 5 * time.Second
	cfg.Grace = time.Second
	cfg.AllowPrivateTargets = true
	cfg.ProbeConcurrency = 32
	if o.queue == config.QueueSQS {
		if o.sqsEndpoint == "" {
			return errors.New("--queue sqs needs --sqs-endpoint (or MCPMON_TEST_SQS_ENDPOINT)")
		}
		cfg.Queue = config.QueueSQS
		cfg.SQSEndpoint = o.sqsEndpoint
		cfg.SQSRegion = "us-east-1"
		cfg.SQSPrefix = fmt.Sprintf("load%d-", time.Now().UnixNano())
		setDummyAWSCreds()
		env := func(k string) string {
			return map[string]string{"MCPMON_SQS_ENDPOINT": cfg.SQSEndpoint, "MCPMON_SQS_REGION": cfg.SQSRegion, "MCPMON_SQS_PREFIX": cfg.SQSPrefix}[k]
		}
		if err := daemon.EnsureQueues(ctx, nil, env, io.Discard, stderr); err != nil {
			return fmt.Errorf("create the SQS queues: %w", err)
		}
	}
	if o.redisURL != "" {
		cfg.Store = config.StoreRedis
		cfg.RedisURL = o.redisURL
		cfg.RedisPrefix = fmt.Sprintf("mcpmon-load-%d:", time.Now().UnixNano())
		cfg.SecretsKey = model.Secret(seal.EncodeKey(seal.NewKey()))
	}
	reg := metrics.NewRegistry(daemon.Version)
	d, err := daemon.Start(ctx, daemon.RoleAll, cfg, daemon.Deps{Registry: reg, Logger: slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		return err
	}
	if err := registerLoad(ctx, d.Store(), urls, o.schedule, stderr); err != nil {
		return err
	}
	// Endpoints were written straight to the store; restart so the
	// scheduler loads them all at once (the API path schedules one by one).
	d.Stop()
	if err := d.Wait(); err != nil {
		return err
	}
	// The peer's first run, while no pipeline runs beside it: the
	// pipeline's probes and CPU are counted from its start on.
	var peerBefore time.Duration
	if srv != nil && o.peer > 0 {
		fmt.Fprintf(stderr, "load: %d go-sdk client handshakes against the same server, in a process of their own, before the pipeline starts probing ...\n", o.peer)
		if peerBefore, err = peerInChild(ctx, srv.base+"/e/peer", o.peer); err != nil {
			return err
		}
	}
	d, err = daemon.Start(ctx, daemon.RoleAll, cfg, daemon.Deps{Registry: prometheus.NewRegistry(), Logger: slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		return err
	}
	reg = nil
	_ = reg

	profile := o.cpuprofile
	if o.warmup > 0 {
		profile = "" // started after the warm-up
	}
	stopProfile, err := startCPUProfile(profile)
	if err != nil {
		return err
	}
	defer func() { stopProfile() }()
	if o.memprofile != "" {
		// Allocations since the start of the run, not since the daemon's
		// setup: the rate a probe costs, sampled at the default rate.
		defer writeAllocProfile(o.memprofile, stderr)
	}
	var before syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &before)
	var srvBefore time.Duration
	if srv != nil {
		if srvBefore, err = srv.cpu(); err != nil {
			return err
		}
	}
	start := time.Now()
	fmt.Fprintf(stderr, "load: %d endpoints on %q for %s on the %s queue ...\n", o.endpoints, o.schedule, o.duration, o.queue)
	progress := time.NewTicker(5 * time.Second)
	deadline := time.NewTimer(o.duration)
	var warm <-chan time.Time
	if o.warmup > 0 {
		warm = time.After(o.warmup)
	}
	var steady steadyMark
loop:
	for {
		select {
		case <-ctx.Done():
			break loop
		case <-deadline.C:
			break loop
		case <-warm:
			if steady, err = markSteady(ctx, srv, d); err != nil {
				return err
			}
			if stopProfile, err = startCPUProfile(o.cpuprofile); err != nil {
				return err
			}
			fmt.Fprintf(stderr, "load: warm-up over after %s; the steady-state rows count from here\n", time.Since(start).Round(time.Second))
		case <-progress.C:
			fmt.Fprintf(stderr, "load: %s elapsed\n", time.Since(start).Round(time.Second))
		}
	}
	progress.Stop()
	// The profile covers the run, not the gathers and the scrape after it.
	stopProfile()
	stopProfile = func() {}
	elapsed := time.Since(start)
	var after syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &after)
	if !steady.at.IsZero() {
		if err = steady.end(ctx, srv, d, after); err != nil {
			return err
		}
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	var srvCPU time.Duration
	if srv != nil {
		after, err := srv.cpu()
		if err != nil {
			return err
		}
		srvCPU = after - srvBefore
	}

	snap, err := gather(d)
	d.Stop()
	if werr := d.Wait(); err == nil {
		err = werr
	}
	if err != nil {
		return err
	}
	scrape, err := scrapeCost(d)
	if err != nil {
		return err
	}
	cpu := tv(after.Utime) + tv(after.Stime) - tv(before.Utime) - tv(before.Stime)
	probes := snap.sum("mcpmon_probes_total")
	pipeline := "whole pipeline, servers included"
	if srv != nil {
		pipeline = "pipeline alone: the servers run in a child process"
	}
	rows := [][2]string{
		{"endpoints × schedule", fmt.Sprintf("%d × %s", o.endpoints, o.schedule)},
		{"queue / store", fmt.Sprintf("%s / %s", cfg.Queue, cfg.Store)},
		{"duration", elapsed.Round(time.Millisecond).String()},
		{"probes", fmt.Sprintf("%.0f (%.1f/s)", probes, probes/elapsed.Seconds())},
		{"verdicts", fmt.Sprintf("%.0f", snap.sum("mcpmon_verdicts_total"))},
		{fmt.Sprintf("CPU per probe (%s)", pipeline), perProbe(cpu, probes)},
		{"pipeline CPU, % of one core", fmt.Sprintf("%.1f %%", 100*cpu.Seconds()/elapsed.Seconds())},
		{fmt.Sprintf("probe → verdict delay mean; p50 / p99 bucket (window %s + grace %s)", cfg.Window, cfg.Grace), snap.quantiles("mcpmon_pipeline_delay_seconds", "probe_to_verdict")},
		{"verdict → alert delay mean; p50 / p99 bucket", snap.quantiles("mcpmon_pipeline_delay_seconds", "verdict_to_alert")},
		{"heap in use at end", fmt.Sprintf("%.1f MiB", float64(ms.HeapInuse)/(1<<20))},
		{"one /metrics scrape at the end (gathered and encoded as text, the pipeline stopped)", scrape},
	}
	var per float64 // the go-sdk client's CPU per handshake, ns
	if srv != nil {
		rows = append(rows, [2]string{"server CPU per probe (go-sdk server, child process)", perProbe(srvCPU, probes)})
		if n := srv.failedAccepts(); n > 0 {
			rows = append(rows, [2]string{"the server's failed accepts (out of file descriptors: probes refused; this run measured the server's limit, not mcpmon)", fmt.Sprint(n)})
		}
		if o.peer > 0 {
			fmt.Fprintf(stderr, "load: pipeline stopped; %d go-sdk client handshakes again, in a process of their own ...\n", o.peer)
			peerAfter, err := peerInChild(ctx, srv.base+"/e/peer", o.peer)
			if err != nil {
				return err
			}
			// The mean of a run before and a run after the pipeline, each
			// in a fresh process: the pipeline's heap is not the peer's
			// to collect, and the box drifts over a run.
			per = float64(peerBefore+peerAfter) / float64(2*o.peer)
			rows = append(rows, [2]string{"go-sdk client CPU per handshake (initialize + initialized + ping + close, same server, same run: the mean of a child process before and one after the pipeline)",
				fmt.Sprintf("%s (before %s, after %s)", time.Duration(per).Round(time.Microsecond),
					(peerBefore / time.Duration(o.peer)).Round(time.Microsecond), (peerAfter / time.Duration(o.peer)).Round(time.Microsecond))})
			if probes > 0 {
				rows = append(rows, [2]string{"pipeline CPU per probe ÷ go-sdk client CPU per handshake (target ≤ 0.5)", fmt.Sprintf("%.2f×", float64(cpu)/probes/per)})
			}
		}
	}
	if !steady.at.IsZero() {
		rows = append(rows, steady.rows(o.warmup, per)...)
	}
	if cfg.Queue == config.QueueSQS {
		results := snap.labelled("mcpmon_queue_sends_total", "queue", "results")
		reqs := snap.sum("mcpmon_sqs_requests_total")
		rows = append(rows, [2]string{"SQS requests (all queues) per probe result", ratio(reqs, results)})
		rows = append(rows, sqsStages(snap, results)...)
	}
	fmt.Fprintln(stdout, "| measure | value |")
	fmt.Fprintln(stdout, "|---|---|")
	for _, r := range rows {
		fmt.Fprintf(stdout, "| %s | %s |\n", r[0], r[1])
	}
	return nil
}

// steadyMark is where the warm-up ended: the pipeline's CPU, the fleet
// server's, the handshakes it had seen begin and the embedded store's
// commits and pages written by then; end adds the same at the end of the
// run.
type steadyMark struct {
	at             time.Time
	cpu            time.Duration
	srvCPU         time.Duration // the fleet server's
	handshakes     int64
	commits, pages uint64
	file           bool          // the store is the embedded one
	window         time.Duration // set by end
	steadyCPU      time.Duration // set by end
	steadySrvCPU   time.Duration // set by end
	endHandshakes  int64         // set by end
	// set by end: the window's commits and pages
	steadyCommits, steadyPages uint64
}

func markSteady(ctx context.Context, srv *fleet, d *daemon.Daemon) (steadyMark, error) {
	n, err := srv.handshakes(ctx)
	if err != nil {
		return steadyMark{}, err
	}
	srvCPU, err := srv.cpu()
	if err != nil {
		return steadyMark{}, err
	}
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	commits, pages, file := d.StoreWrites()
	return steadyMark{at: time.Now(), cpu: tv(ru.Utime) + tv(ru.Stime), srvCPU: srvCPU, handshakes: n, commits: commits, pages: pages, file: file}, nil
}

// end closes the steady window (after, the pipeline's rusage at the end).
func (m *steadyMark) end(ctx context.Context, srv *fleet, d *daemon.Daemon, after syscall.Rusage) error {
	n, err := srv.handshakes(ctx)
	if err != nil {
		return err
	}
	srvCPU, err := srv.cpu()
	if err != nil {
		return err
	}
	m.endHandshakes = n
	m.steadyCPU = tv(after.Utime) + tv(after.Stime) - m.cpu
	m.steadySrvCPU = srvCPU - m.srvCPU
	m.window = time.Since(m.at)
	commits, pages, _ := d.StoreWrites()
	m.steadyCommits, m.steadyPages = commits-m.commits, pages-m.pages
	return nil
}

// rows are the steady-state rows: the window's probes are the initialize
// requests the fleet server saw in it. per is the go-sdk client's CPU per
// handshake (ns), 0 without the peer.
func (m steadyMark) rows(warmup time.Duration, per float64) [][2]string {
	probes := float64(m.endHandshakes - m.handshakes)
	rows := [][2]string{
		{fmt.Sprintf("steady state (after a %s warm-up): probes (initialize requests the server saw)", warmup), fmt.Sprintf("%.0f (%.1f/s)", probes, probes/m.window.Seconds())},
		{"steady state: CPU per probe (pipeline alone)", perProbe(m.steadyCPU, probes)},
	}
	if probes > 0 && per > 0 {
		rows = append(rows, [2]string{"steady state: pipeline CPU per probe ÷ go-sdk client CPU per handshake (target ≤ 0.5)", fmt.Sprintf("%.2f×", float64(m.steadyCPU)/probes/per)})
	}
	if probes > 0 && m.steadySrvCPU > 0 {
		// The server answers the same exchanges in the same seconds: the
		// gauge of the box's speed to compare builds run at different
		// times by (the peer's figure comes from minutes before and after).
		rows = append(rows, [2]string{"steady state: go-sdk server CPU per probe; pipeline CPU ÷ server CPU (compare builds by this)",
			fmt.Sprintf("%s; %.3f", perProbe(m.steadySrvCPU, probes), float64(m.steadyCPU)/float64(m.steadySrvCPU))})
	}
	if probes > 0 && m.file {
		rows = append(rows, [2]string{"steady state: embedded store commits and pages written per probe (mcpmon_store_commits_total, mcpmon_store_pages_written_total)",
			fmt.Sprintf("%.2f commits, %.1f pages (%.1f pages per commit)", float64(m.steadyCommits)/probes, float64(m.steadyPages)/probes, float64(m.steadyPages)/max(1, float64(m.steadyCommits)))})
	}
	return rows
}

// scrapeCost gathers the stopped daemon's registry and encodes it as the
// text exposition a Prometheus scrape gets: its series, size and CPU.
func scrapeCost(d *daemon.Daemon) (string, error) {
	var before, after syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &before)
	mfs, err := d.Gather()
	if err != nil {
		return "", fmt.Errorf("mcpmon-load: gather /metrics: %w", err)
	}
	var w countingWriter
	for _, mf := range mfs {
		if _, err := expfmt.MetricFamilyToText(&w, mf); err != nil {
			return "", fmt.Errorf("mcpmon-load: encode %s: %w", mf.GetName(), err)
		}
	}
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &after)
	cpu := tv(after.Utime) + tv(after.Stime) - tv(before.Utime) - tv(before.Stime)
	return fmt.Sprintf("%d lines, %.1f MB, %s CPU", w.lines, float64(w.n)/1e6, cpu.Round(time.Millisecond)), nil
}

// countingWriter counts the bytes and lines written to it.
type countingWriter struct{ n, lines int }

func (w *countingWriter) Write(p []byte) (int, error) {
	w.n += len(p)
	w.lines += bytes.Count(p, []byte{'\n'})
	return len(p), nil
}

// startCPUProfile profiles this process into path until stop is called;
// an empty path profiles nothing.
func startCPUProfile(path string) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}

// writeAllocProfile writes the process's allocation profile to path; a
// failure is reported, not fatal: the run's figures are already printed.
func writeAllocProfile(path string, stderr io.Writer) {
	f, err := os.Create(path)
	if err == nil {
		err = pprof.Lookup("allocs").WriteTo(f, 0)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		fmt.Fprintln(stderr, "mcpmon-load: --memprofile:", err)
	}
}

func setDummyAWSCreds() {
	for k, v := range map[string]string{"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test", "AWS_REGION": "us-east-1"} {
		if os.Getenv(k) == "" {
			os.Setenv(k, v)
		}
	}
}

func tv(t syscall.Timeval) time.Duration {
	return time.Duration(t.Sec)*time.Second + time.Duration(t.Usec)*time.Microsecond
}

func perProbe(cpu time.Duration, probes float64) string {
	if probes == 0 {
		return "n/a"
	}
	return (time.Duration(float64(cpu) / probes)).Round(time.Microsecond).String()
}

func ratio(a, b float64) string {
	if b == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.3f (%.0f requests / %.0f results)", a/b, a, b)
}

func startServers(n int) ([]string, func(), error) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "load", Version: "1.0.0"}, nil)
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{JSONResponse: true})
	var servers []*http.Server
	var urls []string
	closeAll := func() {
		for _, s := range servers {
			_ = s.Close()
		}
	}
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			closeAll()
			return nil, nil, err
		}
		s := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
		servers = append(servers, s)
		go func() { _ = s.Serve(ln) }()
		urls = append(urls, "http://"+ln.Addr().String()+"/mcp")
	}
	return urls, closeAll, nil
}

// snapshot is a scrape of the daemon's /metrics.
type snapshot map[string]*dto.MetricFamily

func gather(d *daemon.Daemon) (snapshot, error) {
	mfs, err := d.Gather()
	if err != nil {
		return nil, err
	}
	s := snapshot{}
	for _, mf := range mfs {
		s[mf.GetName()] = mf
	}
	return s, nil
}

func (s snapshot) sum(name string) float64 {
	var t float64
	if mf, ok := s[name]; ok {
		for _, m := range mf.GetMetric() {
			t += m.GetCounter().GetValue() + m.GetGauge().GetValue()
		}
	}
	return t
}

func (s snapshot) labelled(name, label, value string) float64 {
	var t float64
	if mf, ok := s[name]; ok {
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if lp.GetName() == label && lp.GetValue() == value {
					t += m.GetCounter().GetValue()
				}
			}
		}
	}
	return t
}

// quantiles estimates p50 and p99 from a histogram's buckets (upper bounds).
func (s snapshot) quantiles(name, stage string) string {
	mf, ok := s[name]
	if !ok {
		return "n/a"
	}
	for _, m := range mf.GetMetric() {
		match := false
		for _, lp := range m.GetLabel() {
			if lp.GetName() == "stage" && lp.GetValue() == stage {
				match = true
			}
		}
		h := m.GetHistogram()
		if !match || h.GetSampleCount() == 0 {
			continue
		}
		bs := h.GetBucket()
		sort.Slice(bs, func(i, j int) bool { return bs[i].GetUpperBound() < bs[j].GetUpperBound() })
		q := func(p float64) string {
			want := p * float64(h.GetSampleCount())
			for _, b := range bs {
				if float64(b.GetCumulativeCount()) >= want {
					return fmt.Sprintf("≤ %gs", b.GetUpperBound())
				}
			}
			return "> last bucket"
		}
		mean := time.Duration(h.GetSampleSum() / float64(h.GetSampleCount()) * float64(time.Second))
		return fmt.Sprintf("%s; %s / %s", mean.Round(time.Millisecond), q(0.5), q(0.99))
	}
	return "n/a"
}

// sqsStages breaks the SQS cost down by stage queue: requests per probe
// result for each queue, and which share of them is depth polling
// (GetQueueAttributes), next to the floor batching allows — a send, a
// receive and a delete per 10 messages, 0.3 requests per message.
func sqsStages(s snapshot, results float64) [][2]string {
	type cost struct{ all, depth float64 }
	by := map[string]*cost{}
	if mf, ok := s["mcpmon_sqs_requests_total"]; ok {
		for _, m := range mf.GetMetric() {
			var q, op string
			for _, lp := range m.GetLabel() {
				switch lp.GetName() {
				case "queue":
					q = lp.GetValue()
				case "op":
					op = lp.GetValue()
				}
			}
			c := by[q]
			if c == nil {
				c = &cost{}
				by[q] = c
			}
			v := m.GetCounter().GetValue()
			c.all += v
			if op == "GetQueueAttributes" {
				c.depth += v
			}
		}
	}
	names := make([]string, 0, len(by))
	for q := range by {
		names = append(names, q)
	}
	sort.Strings(names)
	var rows [][2]string
	for _, q := range names {
		c := by[q]
		if c.all == 0 || results == 0 {
			continue
		}
		msgs := s.labelled("mcpmon_queue_sends_total", "queue", q)
		floor := "—"
		if msgs > 0 {
			floor = fmt.Sprintf("%.3f", 0.3*msgs/results)
		}
		rows = append(rows, [2]string{fmt.Sprintf("SQS requests per probe result: queue %s (depth polling; floor with batches of 10)", q),
			fmt.Sprintf("%.3f (%.3f; floor %s) — %.0f requests, %.0f messages sent", c.all/results, c.depth/results, floor, c.all, msgs)})
	}
	return rows
}

// registerLoad writes one endpoint per URL straight into the store from a
// few writers (bbolt commits one transaction at a time; the next is ready
// while one commits), with progress every 10,000.
func registerLoad(ctx context.Context, st store.Store, urls []string, schedule string, stderr io.Writer) error {
	const writers = 8
	var (
		wg   sync.WaitGroup
		done atomic.Int64
	)
	errs := make([]error, writers)
	for w := range writers {
		wg.Go(func() {
			for i := w; i < len(urls) && errs[w] == nil; i += writers {
				_, err := st.CreateEndpoint(ctx, model.Endpoint{
					ID: fmt.Sprintf("load%06d", i), Name: fmt.Sprintf("load %d", i), URL: urls[i], Transport: "auto",
					Schedule: schedule, Timeout: 5 * time.Second,
				})
				if err != nil {
					errs[w] = fmt.Errorf("register endpoint %d: %w", i, err)
				}
				if n := done.Add(1); n%10_000 == 0 {
					fmt.Fprintf(stderr, "load: %d/%d endpoints registered\n", n, len(urls))
				}
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}
