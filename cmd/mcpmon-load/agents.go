package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/mcpmon/mcpmon/pkg/agent"
	apiv1 "github.com/mcpmon/mcpmon/pkg/api/v1"
	"github.com/mcpmon/mcpmon/pkg/config"
	"github.com/mcpmon/mcpmon/pkg/daemon"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/schedule"
	"github.com/mcpmon/mcpmon/pkg/testpeers/e2e"
)

// agentsOptions size the agents run: one `mcpmon run` in a child process
// (the API replica measured; its scheduler, aggregator and alerter are in
// it too, the central prober idle: every endpoint is probed from an agent
// location only), agents in-process agent loops (pkg/agent's Run, real
// HTTP to the child), each with its own key and location, and every
// endpoint a path of one go-sdk server in a second child.
type agentsOptions struct {
	agents, perAgent int
	schedule         string
	interval         time.Duration // of schedule, for the expected rate
	settle, window   time.Duration
	concurrency      int // per agent; 0: the agent's default
	mcpmonArgs       []string
}

// runAgents measures one API replica serving o.agents agents of
// o.perAgent endpoints each and prints the table.
func runAgents(ctx context.Context, o agentsOptions, stdout, stderr io.Writer) error {
	dir, err := os.MkdirTemp("", "mcpmon-load-agents-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	n := o.agents * o.perAgent
	srv, urls, err := startFleet(ctx, n, 0, stderr)
	if err != nil {
		return err
	}
	defer srv.stop()
	data := filepath.Join(dir, "mcpmon")
	addr, err := e2e.FreeAddr()
	if err != nil {
		return err
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	keyFile := filepath.Join(dir, "admin.key")
	runArgs := append([]string{"--listen", addr, "--data-dir", data, "--bootstrap-key-file", keyFile,
		"--log-level", "warn", "--max-agents-per-tenant", "0"}, o.mcpmonArgs...)
	cfg, err := config.Parse("mcpmon run", runArgs, os.Getenv, stderr)
	if err != nil {
		return fmt.Errorf("--mcpmon-args: %w", err)
	}
	if cfg.Queue == config.QueueSQS {
		setDummyAWSCreds() // the emulator's; the child inherits them
		env := func(k string) string {
			return map[string]string{"MCPMON_SQS_ENDPOINT": cfg.SQSEndpoint, "MCPMON_SQS_REGION": cfg.SQSRegion, "MCPMON_SQS_PREFIX": cfg.SQSPrefix}[k]
		}
		if err := daemon.EnsureQueues(ctx, nil, env, io.Discard, stderr); err != nil {
			return fmt.Errorf("create the SQS queues: %w", err)
		}
	}
	fmt.Fprintf(stderr, "agents: writing %d endpoints into the store\n", n)
	if err := registerAgentEndpoints(ctx, cfg, urls, o.perAgent, o.schedule, stderr); err != nil {
		return err
	}
	child, err := startLogged(exe, append([]string{"--mcpmon-child", "--"}, runArgs...), nil, dir, "mcpmon")
	if err != nil {
		return err
	}
	defer child.Stop(10 * time.Second)
	if err := child.WaitReady(ctx, 2*time.Minute, e2e.HTTPReady(addr)); err != nil {
		return fmt.Errorf("mcpmon run: %w\n%s", err, tail(filepath.Join(dir, "mcpmon.log")))
	}
	token, err := os.ReadFile(keyFile)
	if err != nil {
		return err
	}
	api := e2e.API{URL: "http://" + addr, Token: strings.TrimSpace(string(token))}
	keys, err := createAgentKeys(ctx, api, o.agents)
	if err != nil {
		return err
	}

	st := &exchangeStats{}
	actx, stopAgents := context.WithCancel(ctx)
	var wg sync.WaitGroup
	errs := make([]error, o.agents)
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	for i, k := range keys {
		wg.Go(func() {
			errs[i] = agent.Run(actx, agent.Options{Server: api.URL, Token: model.Secret(k), AllowPrivateTargets: true, Version: "load", Concurrency: o.concurrency,
				HTTPClient: &http.Client{Transport: &countingTransport{next: &http.Transport{MaxIdleConnsPerHost: 4}, st: st},
					Timeout: apiv1.DefaultAgentWait + 30*time.Second},
				Logger: logger})
		})
	}
	defer func() { stopAgents(); wg.Wait() }()

	fmt.Fprintf(stderr, "agents: %d agents running; settling %s, then measuring %s\n", o.agents, o.settle, o.window)
	if err := sleep(ctx, o.settle); err != nil {
		return err
	}
	before, err := sampleAgentsRun(ctx, addr, child.PID(), srv)
	if err != nil {
		return err
	}
	st.measure(true)
	start := time.Now()
	if err := sleep(ctx, o.window); err != nil {
		return err
	}
	st.measure(false)
	elapsed := time.Since(start)
	after, err := sampleAgentsRun(ctx, addr, child.PID(), srv)
	if err != nil {
		return err
	}
	stopAgents()
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return fmt.Errorf("agent %d: %w", i, err)
		}
	}
	fmt.Fprintf(stdout, "agents: %d agents × %d endpoints (%d) on %q, %d probes in flight per agent, against one `mcpmon run` (queue %s, store %s), %s measured after %s; machine: %d CPUs, load %s\n\n",
		o.agents, o.perAgent, n, o.schedule, cmp.Or(o.concurrency, agent.DefaultConcurrency), cfg.Queue, cfg.Store, elapsed.Round(time.Second), o.settle, runtime.NumCPU(), loadavg())
	writeTable(stdout, agentsRows(o, st.snapshot(), before, after, elapsed))
	return nil
}

// registerAgentEndpoints writes the endpoints straight into the store of
// cfg (the child's), perAgent to each location a000, a001, …: the API
// would only add HTTP and auth per endpoint, which is not what is measured.
func registerAgentEndpoints(ctx context.Context, cfg config.Options, urls []string, perAgent int, sched string, stderr io.Writer) error {
	// The store the measured child opens; its first start makes the
	// admin key.
	cfg.Listen, cfg.BootstrapKey, cfg.BootstrapKeyFile = "127.0.0.1:0", false, ""
	return writeEndpoints(ctx, cfg, len(urls), stderr, func(i int) model.Endpoint {
		return model.Endpoint{
			ID: fmt.Sprintf("agent%06d", i), Name: fmt.Sprintf("agent %d", i), URL: urls[i], Transport: "auto",
			Schedule: sched, Timeout: 10 * time.Second, Regions: []string{schedule.Location(agentLocation(i / perAgent))},
		}
	})
}

func agentLocation(i int) string { return fmt.Sprintf("a%03d", i) }

// createAgentKeys creates one agent key per location through the API,
// waiting out the admin key's rate limit.
func createAgentKeys(ctx context.Context, api e2e.API, n int) ([]string, error) {
	keys := make([]string, 0, n)
	for i := 0; i < n; {
		var created struct{ Key string }
		err := api.Do(ctx, http.MethodPost, "/v1/agents", map[string]any{"name": "load-" + agentLocation(i), "location": agentLocation(i)}, &created)
		var se *e2e.StatusError
		if errors.As(err, &se) && se.Status == http.StatusTooManyRequests {
			if err := sleep(ctx, time.Second); err != nil {
				return nil, err
			}
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("create agent %d: %w", i, err)
		}
		keys = append(keys, created.Key)
		i++
	}
	return keys, nil
}

// countingTransport records the agents' exchanges with the API as the
// agents see them: round-trip times, answers by status, results accepted,
// commands received and how late after their slot.
type countingTransport struct {
	next http.RoundTripper
	st   *exchangeStats
}

func (t *countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	start := time.Now()
	resp, err := t.next.RoundTrip(req)
	if err != nil || !t.st.measuring.Load() {
		return resp, err
	}
	body, rerr := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	if rerr != nil {
		return resp, nil // the agent reads the same error
	}
	t.st.record(strings.HasSuffix(req.URL.Path, "/results"), resp.StatusCode, time.Since(start), body, time.Now())
	return resp, nil
}

// exchangeStats are the counts of the measured window.
type exchangeStats struct {
	measuring atomic.Bool
	mu        sync.Mutex
	s         exchangeSnapshot
}

type exchangeSnapshot struct {
	polls, posts          int
	pollRTT, postRTT      []time.Duration
	lateness              []time.Duration
	commands, withheld    int
	accepted, refused     int
	status429, statusElse map[string]int // by "poll" / "post"
}

func (e *exchangeStats) measure(on bool) { e.measuring.Store(on) }

func (e *exchangeStats) record(post bool, status int, rtt time.Duration, body []byte, now time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	s := &e.s
	if s.status429 == nil {
		s.status429, s.statusElse = map[string]int{}, map[string]int{}
	}
	kind := "poll"
	if post {
		kind = "post"
	}
	switch {
	case status == http.StatusTooManyRequests:
		s.status429[kind]++
		return
	case status/100 != 2:
		s.statusElse[kind]++
		return
	}
	if post {
		s.posts++
		s.postRTT = append(s.postRTT, rtt)
		var a struct {
			Accepted int               `json:"accepted"`
			Refused  []json.RawMessage `json:"refused"`
		}
		if json.Unmarshal(body, &a) == nil {
			s.accepted += a.Accepted
			s.refused += len(a.Refused)
		}
		return
	}
	s.polls++
	s.pollRTT = append(s.pollRTT, rtt)
	var c apiv1.AgentCommands
	if json.Unmarshal(body, &c) != nil {
		return
	}
	s.commands += len(c.Commands)
	s.withheld += c.Withheld
	for _, cmd := range c.Commands {
		s.lateness = append(s.lateness, now.Sub(cmd.Slot))
	}
}

func (e *exchangeStats) snapshot() exchangeSnapshot {
	e.mu.Lock()
	defer e.mu.Unlock()
	s := e.s
	if s.status429 == nil {
		s.status429, s.statusElse = map[string]int{}, map[string]int{}
	}
	return s
}

// agentsSample is what the run's processes had spent at one moment.
type agentsSample struct {
	apiCPU, selfCPU, fleetCPU time.Duration
	apiRSS, apiHWM            int64
	fleetAccepts              int64              // the MCP servers' failed accepts so far
	verdicts                  map[string]float64 // by state
}

func sampleAgentsRun(ctx context.Context, addr string, pid int, f *fleet) (agentsSample, error) {
	var s agentsSample
	var err error
	if s.apiCPU, err = procCPU(pid); err != nil {
		return s, err
	}
	if s.apiRSS, s.apiHWM, err = procRSS(pid); err != nil {
		return s, err
	}
	if s.fleetCPU, err = f.cpu(); err != nil {
		return s, err
	}
	s.fleetAccepts = f.failedAccepts()
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	s.selfCPU = tv(ru.Utime) + tv(ru.Stime)
	// A saturated API may not answer a scrape in time: the verdicts are
	// then missing from the table, not the other figures.
	var mfs map[string]*dto.MetricFamily
	for range 3 {
		if mfs, err = scrape(ctx, "http://"+addr+"/metrics"); err == nil {
			break
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "agents: no verdict counts:", err)
		return s, nil
	}
	s.verdicts = map[string]float64{}
	for _, m := range mfs["mcpmon_verdicts_total"].GetMetric() {
		for _, lp := range m.GetLabel() {
			if lp.GetName() == "state" {
				s.verdicts[lp.GetValue()] += m.GetCounter().GetValue()
			}
		}
	}
	return s, nil
}

// agentsRows is the table: what the agents saw and what the API spent.
func agentsRows(o agentsOptions, s exchangeSnapshot, before, after agentsSample, elapsed time.Duration) [][]string {
	secs := elapsed.Seconds()
	n := o.agents * o.perAgent
	expected := float64(n) / o.interval.Seconds()
	got := float64(s.accepted) / secs
	apiCPU := after.apiCPU - before.apiCPU
	noDataRow := "n/a: /metrics did not answer"
	var verdicts, noData float64
	for state, v := range after.verdicts {
		d := v - before.verdicts[state]
		verdicts += d
		if state == "no_data" {
			noData += d
		}
	}
	if before.verdicts != nil && after.verdicts != nil {
		noDataRow = fmt.Sprintf("%.1f %% (%.0f of %.0f verdicts)", 100*noData/math.Max(1, verdicts), noData, verdicts)
	}
	pct := func(d time.Duration) string { return fmt.Sprintf("%.1f %% of a core", 100*d.Seconds()/secs) }
	rows := [][]string{
		{"figure", "value"},
		{"agents × endpoints", fmt.Sprintf("%d × %d = %d on %q", o.agents, o.perAgent, n, o.schedule)},
		{"results accepted / s (expected)", fmt.Sprintf("%.1f (%.1f) → %.3f", got, expected, got/expected)},
		{"results refused in a post", fmt.Sprint(s.refused)},
		{"API requests / s: polls, posts", fmt.Sprintf("%.1f, %.1f (%.1f results per post)", float64(s.polls)/secs, float64(s.posts)/secs, float64(s.accepted)/math.Max(1, float64(s.posts)))},
		{"API CPU (the whole `mcpmon run`)", fmt.Sprintf("%s; %s per result", pct(apiCPU), perProbe(apiCPU, float64(s.accepted)))},
		{"API RSS (peak)", fmt.Sprintf("%.0f MiB (%.0f MiB)", mib(after.apiRSS), mib(after.apiHWM))},
		{"poll round trip p50 / p99 (long poll: includes the wait)", quantilePair(s.pollRTT)},
		{"post round trip p50 / p99", quantilePair(s.postRTT)},
		{"commands received; withheld", fmt.Sprintf("%d; %d", s.commands, s.withheld)},
		{"command handed out after its slot p50 / p99; > 5 s late", fmt.Sprintf("%s; %d", quantilePair(s.lateness), countOver(s.lateness, 5*time.Second))},
		{"429 answers: polls, posts", fmt.Sprintf("%d, %d", s.status429["poll"], s.status429["post"])},
		{"other non-2xx answers: polls, posts", fmt.Sprintf("%d, %d", s.statusElse["poll"], s.statusElse["post"])},
		{"windows no_data", noDataRow},
		{"agents' CPU (this process), MCP servers' CPU", fmt.Sprintf("%s, %s", pct(after.selfCPU-before.selfCPU), pct(after.fleetCPU-before.fleetCPU))},
		{"MCP servers' failed accepts (out of file descriptors: probes refused; above 0 the run measured the servers' limit, not mcpmon)", fmt.Sprint(after.fleetAccepts - before.fleetAccepts)},
	}
	return rows
}

func quantilePair(ds []time.Duration) string {
	if len(ds) == 0 {
		return "n/a"
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	q := func(p float64) time.Duration { return s[min(len(s)-1, int(p*float64(len(s))))] }
	return fmt.Sprintf("%s / %s", roundDur(q(0.5)), roundDur(q(0.99)))
}

func roundDur(d time.Duration) time.Duration {
	if d < 10*time.Millisecond {
		return d.Round(10 * time.Microsecond)
	}
	return d.Round(time.Millisecond)
}

func countOver(ds []time.Duration, limit time.Duration) int {
	n := 0
	for _, d := range ds {
		if d > limit {
			n++
		}
	}
	return n
}

// tail is the end of a log file, for an error.
func tail(path string) string {
	b, _ := os.ReadFile(path)
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}

// runAgentsMode checks the flags of the agents run and runs it.
func runAgentsMode(ctx context.Context, o options) error {
	raw, ok := strings.CutPrefix(o.schedule, "@every ")
	interval, err := time.ParseDuration(raw)
	switch {
	case !ok || err != nil || interval < time.Second:
		return fmt.Errorf("--agents needs --schedule '@every D' (D at least 1s), not %q", o.schedule)
	case o.agents > 1000 || o.endpointsPerAgent < 1 || o.agents*o.endpointsPerAgent > 100_000:
		return errors.New("--agents 1..1000 and --endpoints-per-agent at least 1, at most 100,000 endpoints in all")
	case o.duration < 10*time.Second || o.duration > 30*time.Minute:
		return errors.New("--agents needs --duration 10s..30m")
	}
	settle := o.agentsSettle
	if settle <= 0 {
		settle = 2*interval + 10*time.Second
	}
	return runAgents(ctx, agentsOptions{agents: o.agents, perAgent: o.endpointsPerAgent, schedule: o.schedule, interval: interval,
		settle: settle, window: o.duration, concurrency: o.agentConcurrency, mcpmonArgs: strings.Fields(o.mcpmonArgs)}, os.Stdout, os.Stderr)
}
