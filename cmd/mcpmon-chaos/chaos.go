package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mcpmon/mcpmon/pkg/seal"
	"github.com/mcpmon/mcpmon/pkg/testpeers/e2e"
)

// Modes of the harness.
const (
	ModeFleet    = "fleet"    // every role ×2 as its own process on fauxqs + redis-server
	ModeEmbedded = "embedded" // one `mcpmon run` on a data dir
)

// options size and shape one chaos run.
type options struct {
	Mode          string
	Endpoints     int
	Outages       int // per endpoint
	Window        time.Duration
	Grace         time.Duration
	ProbeTimeout  time.Duration // endpoints are probed @every 1s with this timeout (mcpmon's minimum, 1s)
	OutageWindows int           // outage length in windows
	UpWindows     int           // up phase after each outage, in windows
	WarmupWindows int
	KillEvery     time.Duration // 0: 10s in fleet mode, 15s embedded
	RedisDown     time.Duration // how long redis-server stays dead mid-run (fleet)
	SinkFailRate  float64
	Seed          uint64
	Visibility    time.Duration // passed as --visibility-timeout when > 0
	Drain         time.Duration // after the plan; 0: 2 windows + grace + 5s
	Bound         time.Duration // an open alert may come this long after its outage ended; 0: one up phase
	Progress      time.Duration
	SQSEndpoint   string
	RedisServer   string // redis-server binary
	Mcpmon        string // prebuilt mcpmon binary; empty: go build
	WorkDir       string // logs and data; empty: a temporary directory, kept only on failure
}

func defaultOptions() options {
	return options{
		Mode: ModeFleet, Endpoints: 50, Outages: 8, Window: 2 * time.Second, Grace: 2 * time.Second,
		ProbeTimeout: time.Second, OutageWindows: 5, UpWindows: 5, WarmupWindows: 2,
		RedisDown: 5 * time.Second, SinkFailRate: 0.2, Seed: 1, Progress: 5 * time.Second,
		SQSEndpoint: os.Getenv("MCPMON_TEST_SQS_ENDPOINT"), RedisServer: "redis-server",
	}
}

func (o options) validate() error {
	var errs []string
	if !slices.Contains([]string{ModeFleet, ModeEmbedded, ModeAgent, ModeEmbeddedAgent, ModeCluster}, o.Mode) {
		errs = append(errs, "--mode must be fleet, embedded, agent, embedded-agent or cluster")
	}
	if o.Endpoints < 1 || o.Endpoints > 500 {
		errs = append(errs, "--endpoints must be 1..500")
	}
	if o.Outages < 1 || o.Outages > 100 {
		errs = append(errs, "--outages must be 1..100")
	}
	if o.Window < time.Second || time.Minute%o.Window != 0 {
		errs = append(errs, "--window must divide a minute (1s..30s)")
	}
	if o.OutageWindows < 3 || o.UpWindows < 4 {
		errs = append(errs, "--outage-windows must be ≥ 3 and --up-windows ≥ 4 (2 of 3 down windows open an incident, 2 up windows resolve it; phases are not window-aligned)")
	}
	if o.SinkFailRate < 0 || o.SinkFailRate >= 1 {
		errs = append(errs, "--sink-fail must be in [0, 1)")
	}
	if !o.embedded() && o.SQSEndpoint == "" {
		errs = append(errs, "--mode fleet, agent and cluster need --sqs-endpoint (or MCPMON_TEST_SQS_ENDPOINT): start fauxqs with .ci/start-fauxqs.sh")
	}
	if len(errs) > 0 {
		return errors.New(strings.Join(errs, "; "))
	}
	return nil
}

func (o options) killEvery() time.Duration {
	switch {
	case o.KillEvery != 0:
		return o.KillEvery
	case o.embedded():
		return 15 * time.Second
	default:
		return 10 * time.Second
	}
}

func (o options) drain() time.Duration {
	if o.Drain > 0 {
		return o.Drain
	}
	return 2*o.Window + o.Grace + 5*time.Second
}

func (o options) bound() time.Duration {
	if o.Bound > 0 {
		return o.Bound
	}
	return time.Duration(o.UpWindows) * o.Window
}

// target p99 of first failing probe → delivered open alert.
func (o options) delayTarget() time.Duration { return 2*o.Window + o.Grace + 5*time.Second }

// killEvent is one SIGKILL the harness sent.
type killEvent struct {
	At   time.Time
	Name string
}

// harness is one run's moving parts.
type harness struct {
	o       options
	out     io.Writer // progress and report
	dir     string
	bin     string
	targets []*target
	rcv     *receiver
	procs   []*proc // mcpmon processes
	apis    []*proc // those serving the REST API
	redis   *proc
	ids     []string // API endpoint ID per target
	agents  []*proc  // agent mode: the `mcpmon agent` processes (agent.go)
	token   string   // agent mode: the admin API key

	mu    sync.Mutex
	kills []killEvent

	cluster     *redisCluster // cluster mode (cluster.go)
	failoverErr error         // under mu
}

// run executes one chaos run and prints its report to out. It returns
// errChaosFailed when an outage was lost or paged other than once.
func run(ctx context.Context, o options, out io.Writer) (err error) {
	if err := o.validate(); err != nil {
		return err
	}
	h := &harness{o: o, out: out, dir: o.WorkDir}
	if h.dir == "" {
		if h.dir, err = os.MkdirTemp("", "mcpmon-chaos-"); err != nil {
			return err
		}
		defer func() {
			if err == nil {
				os.RemoveAll(h.dir)
			} else {
				fmt.Fprintf(out, "chaos: logs and data kept in %s\n", h.dir)
			}
		}()
	}
	if h.bin = o.Mcpmon; h.bin == "" {
		fmt.Fprintf(out, "chaos: building mcpmon ...\n")
		if h.bin, err = e2e.Build(ctx, h.dir); err != nil {
			return err
		}
	}
	if h.targets, err = startTargets(o.Endpoints); err != nil {
		return err
	}
	defer closeTargets(h.targets)
	if h.rcv, err = startReceiver(o.SinkFailRate, rand.New(rand.NewPCG(o.Seed, 3))); err != nil {
		return err
	}
	defer h.rcv.close()
	defer h.stopCluster() // after the processes on it (deferred calls run last-in first)
	defer h.stopAll()
	if err := h.startPipeline(ctx); err != nil {
		return err
	}
	if err := h.register(ctx); err != nil {
		return err
	}
	if err := h.waitAllUp(ctx, 60*time.Second); err != nil {
		return err
	}

	plan := makePlan(planOptions{
		Endpoints: o.Endpoints, Outages: o.Outages, Warmup: time.Duration(o.WarmupWindows) * o.Window,
		Outage: time.Duration(o.OutageWindows) * o.Window, Up: time.Duration(o.UpWindows) * o.Window,
	}, time.Now(), rand.New(rand.NewPCG(o.Seed, 1)))
	fmt.Fprintf(out, "chaos %s: %d endpoints × %d outages = %d planned over %s (+%s drain), window %s, kill every %s\n",
		o.Mode, o.Endpoints, o.Outages, len(plan.Outages), plan.End.Sub(plan.Start).Round(time.Second), o.drain(), o.Window, o.killEvery())

	firstBad := make([]time.Time, len(plan.Outages))
	chaosCtx, stopChaos := context.WithDeadline(ctx, plan.End)
	defer stopChaos()
	var wg sync.WaitGroup
	wg.Go(func() { h.flip(chaosCtx, plan, firstBad) })
	wg.Go(func() { h.killLoop(chaosCtx, rand.New(rand.NewPCG(o.Seed, 2))) })
	if h.redis != nil {
		wg.Go(func() { h.redisOutage(chaosCtx, plan.Start.Add(plan.End.Sub(plan.Start)/2)) })
	}
	if h.cluster != nil { // cluster.go
		wg.Go(func() { h.primaryFailover(chaosCtx, plan.Start.Add(plan.End.Sub(plan.Start)/2)) })
	}
	drainCtx, stopDrain := context.WithDeadline(ctx, plan.End.Add(o.drain()))
	defer stopDrain()
	h.progress(drainCtx, plan)
	wg.Wait()
	if ctx.Err() != nil {
		return ctx.Err()
	}

	verdicts, verr := h.verdicts(ctx)
	h.stopAll()
	h.rcv.close()
	if verr != nil {
		fmt.Fprintf(out, "chaos: reading verdicts: %v\n", verr)
	}
	idx := map[string]int{}
	for i, id := range h.ids {
		idx[id] = i
	}
	r := check(plan, firstBad, idx, h.rcv.all(), o.bound())
	r.Duplicates, r.InWindow = splitByMarkWindow(r.Duplicates, h.senderKills(), markWindow)
	h.printReport(plan, r, tallyVerdicts(plan, o.Window, verdicts), verdicts)
	if r.failed() {
		return errChaosFailed
	}
	if h.failoverErr != nil {
		return fmt.Errorf("primary failover: %w", h.failoverErr)
	}
	return verr
}

// env is the environment every mcpmon process gets: the caller's, without
// any MCPMON_ setting that could change what is under test, plus the run's.
func (h *harness) env(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "MCPMON_") {
			env = append(env, kv)
		}
	}
	env = append(env,
		"MCPMON_WINDOW="+h.o.Window.String(), "MCPMON_GRACE="+h.o.Grace.String(),
		"MCPMON_ALLOW_PRIVATE_TARGETS=true", "MCPMON_WEBHOOK_URL="+h.rcv.url, "MCPMON_LOG_LEVEL=info",
		"MCPMON_AUTH=none",    // replicas listen on 127.0.0.1; chaos is not about API keys
		"MCPMON_RATE_LIMIT=0") // nor the rate limit: it registers and polls a fleet as fast as it likes
	if h.o.Visibility > 0 {
		env = append(env, "MCPMON_VISIBILITY_TIMEOUT="+h.o.Visibility.String())
	}
	return append(env, extra...)
}

func (h *harness) startPipeline(ctx context.Context) error {
	if h.o.embedded() {
		env := h.env("MCPMON_DATA_DIR=" + filepath.Join(h.dir, "data"))
		if err := h.prepareAgentMode(ctx, &env); err != nil { // agent.go
			return err
		}
		p, err := newProc("run", h.bin, env, h.dir, true,
			func(addr string) []string { return []string{"run", "--listen", addr} })
		if err != nil {
			return err
		}
		h.procs, h.apis = []*proc{p}, []*proc{p}
		if err := p.start(); err != nil {
			return err
		}
		if err := p.waitReady(ctx, 30*time.Second, httpReady); err != nil {
			return err
		}
		return h.startAgents(ctx, env) // agent.go
	}

	if h.o.Mode == ModeCluster {
		url, err := h.startCluster(ctx) // cluster.go
		if err != nil {
			return err
		}
		return h.startFleet(ctx, url)
	}
	redisBin, err := exec.LookPath(h.o.RedisServer)
	if err != nil {
		return fmt.Errorf("redis-server not found (%w): install it with .ci/start-redis.sh", err)
	}
	redisDir := filepath.Join(h.dir, "redis")
	if err := os.MkdirAll(redisDir, 0o755); err != nil {
		return err
	}
	// Our own redis-server, so killing it disturbs nobody else; AOF on and
	// restarted on the same port and directory, as a crashed Redis would be.
	// Every write is fsynced before Redis acknowledges it, as
	// docs/operations/distributed.md asks of a deployment (everysec can lose
	// acknowledged ledger marks, i.e. send an alert twice).
	h.redis, err = newProc("redis-server", redisBin, os.Environ(), h.dir, false, func(addr string) []string {
		_, port, _ := strings.Cut(addr, ":")
		return []string{"--bind", "127.0.0.1", "--port", port, "--dir", redisDir, "--appendonly", "yes",
			"--appendfsync", "always", "--save", "", "--daemonize", "no", "--logfile", ""}
	})
	if err != nil {
		return err
	}
	if err := h.redis.start(); err != nil {
		return err
	}
	if err := h.redis.waitReady(ctx, 20*time.Second, redisReady); err != nil {
		return err
	}
	return h.startFleet(ctx, "redis://"+h.redis.Addr()+"/0")
}

// startFleet starts every role ×2 on fauxqs and the Redis at redisURL.
func (h *harness) startFleet(ctx context.Context, redisURL string) error {
	prefix := fmt.Sprintf("chaos%d-", time.Now().UnixNano())
	env := h.env(e2e.Distributed{SQSEndpoint: h.o.SQSEndpoint, RedisURL: redisURL,
		Prefix: prefix, SecretsKey: seal.EncodeKey(seal.NewKey())}.Env()...)
	ensure := exec.CommandContext(ctx, h.bin, "queues", "ensure")
	ensure.Env = env
	if b, err := ensure.CombinedOutput(); err != nil {
		return fmt.Errorf("mcpmon queues ensure: %w\n%s", err, b)
	}
	if err := h.prepareAgentMode(ctx, &env); err != nil { // agent.go
		return err
	}
	for _, role := range fleetRoles(h.o.Mode) {
		for i := 1; i <= 2; i++ {
			name := fmt.Sprintf("%s-%d", role, i)
			args := []string{role}
			if role == "alerter" {
				// A stable identity, as a StatefulSet pod has: a restarted
				// alerter takes over its own claims at once.
				args = append(args, "--replica-id", name)
			}
			p, err := newProc(name, h.bin, env, h.dir, true, func(addr string) []string { return slices.Concat(args, []string{"--listen", addr}) })
			if err != nil {
				return err
			}
			h.procs = append(h.procs, p)
			if role == "api" {
				h.apis = append(h.apis, p)
			}
			if err := p.start(); err != nil {
				return err
			}
		}
	}
	for _, p := range h.procs {
		if err := p.waitReady(ctx, 30*time.Second, httpReady); err != nil {
			return err
		}
	}
	return h.startAgents(ctx, env) // agent.go
}

func (h *harness) stopAll() {
	var wg sync.WaitGroup
	for _, p := range h.procs {
		wg.Go(func() { p.stop(20 * time.Second) })
	}
	wg.Wait()
	if h.redis != nil {
		h.redis.stop(10 * time.Second)
	}
}

// api calls the REST API on whichever API process answers.
func (h *harness) api(ctx context.Context, method, path string, body, into any) error {
	var lastErr error
	deadline := time.Now().Add(15 * time.Second)
	for attempt := 0; time.Now().Before(deadline); attempt++ {
		p := h.apis[attempt%len(h.apis)]
		var rd io.Reader
		if body != nil {
			b, _ := json.Marshal(body)
			rd = bytes.NewReader(b)
		}
		req, err := http.NewRequestWithContext(ctx, method, "http://"+p.Addr()+path, rd)
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/json")
		if h.token != "" {
			req.Header.Set("Authorization", "Bearer "+h.token)
		}
		resp, err := pollClient.Do(req)
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode < 300 {
				return json.Unmarshal(b, into)
			}
			err = fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, bytes.TrimSpace(b))
			if resp.StatusCode < 500 {
				return err
			}
		}
		lastErr = err
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond): // retry back-off against a restarting replica
		}
	}
	return lastErr
}

func (h *harness) register(ctx context.Context) error {
	for i, t := range h.targets {
		var v struct {
			ID string `json:"id"`
		}
		body := map[string]any{"name": fmt.Sprintf("chaos-%03d", i), "url": t.url, "transport": "streamable-http",
			"schedule": "@every 1s", "timeout": h.o.ProbeTimeout.String()}
		h.endpointRegions(body) // agent.go
		if err := h.api(ctx, http.MethodPost, "/v1/endpoints", body, &v); err != nil {
			return fmt.Errorf("register endpoint %d: %w", i, err)
		}
		h.ids = append(h.ids, v.ID)
	}
	return nil
}

// waitAllUp polls until every endpoint's last verdict is up: the pipeline
// is flowing before anything fails.
func (h *harness) waitAllUp(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	pending := append([]string(nil), h.ids...)
	for len(pending) > 0 {
		var still []string
		for _, id := range pending {
			var v struct {
				LastVerdict *struct {
					State string `json:"state"`
				} `json:"lastVerdict"`
			}
			if err := h.api(ctx, http.MethodGet, "/v1/endpoints/"+id, nil, &v); err != nil || v.LastVerdict == nil || v.LastVerdict.State != "up" {
				still = append(still, id)
			}
		}
		pending = still
		if len(pending) == 0 {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d endpoints without an up verdict after %s", len(pending), len(h.ids), timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
	fmt.Fprintf(h.out, "chaos: all %d endpoints up\n", len(h.ids))
	return nil
}

// waitUntil waits for the wall clock to reach at; false if ctx ended
// first. The harness runs real processes on real time.
func waitUntil(ctx context.Context, at time.Time) bool {
	timer := time.NewTimer(time.Until(at))
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-timer.C:
		return true
	}
}

// flip applies the plan's mode changes on time and records each outage's
// first failing probe.
func (h *harness) flip(ctx context.Context, plan Plan, firstBad []time.Time) {
	for _, tr := range plan.transitions() {
		if !waitUntil(ctx, tr.At) {
			return
		}
		fb := h.targets[tr.Endpoint].setMode(tr.Mode)
		if tr.Mode == ModeOK {
			firstBad[tr.Outage] = fb
		}
	}
}

// killLoop SIGKILLs a random mcpmon process every kill interval; the
// supervisor restarts it at once.
func (h *harness) killLoop(ctx context.Context, rng *rand.Rand) {
	tick := time.NewTicker(h.o.killEvery())
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		p := h.victim(rng) // agent.go
		h.mu.Lock()
		h.kills = append(h.kills, killEvent{At: time.Now(), Name: p.name})
		h.mu.Unlock()
		p.kill(0)
	}
}

// redisOutage SIGKILLs redis-server at `at` and has it restarted on the same
// port and data directory after RedisDown.
func (h *harness) redisOutage(ctx context.Context, at time.Time) {
	if !waitUntil(ctx, at) {
		return
	}
	h.mu.Lock()
	h.kills = append(h.kills, killEvent{At: time.Now(), Name: "redis-server"})
	h.mu.Unlock()
	h.redis.kill(h.o.RedisDown)
}

// senderKills are the times the harness SIGKILLed a process that sends
// alerts: `mcpmon run` or an alerter.
func (h *harness) senderKills() []time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	var ts []time.Time
	for _, k := range h.kills {
		if k.Name == "run" || strings.HasPrefix(k.Name, "alerter-") {
			ts = append(ts, k.At)
		}
	}
	return ts
}

func (h *harness) killCounts() (n int, redis bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, k := range h.kills {
		if k.Name == "redis-server" {
			redis = true
		} else {
			n++
		}
	}
	return n, redis
}

func (h *harness) unexpectedExits() []string {
	var all []string
	for _, p := range append(append([]*proc(nil), h.procs...), h.redis) {
		if p != nil {
			all = append(all, p.Unexpected()...)
		}
	}
	return all
}

// progress prints one line every Progress until ctx ends.
func (h *harness) progress(ctx context.Context, plan Plan) {
	tick := time.NewTicker(h.o.Progress)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		kills, redis := h.killCounts()
		opens, resolves, failed := h.rcv.counts()
		phase := "plan"
		if time.Now().After(plan.End) {
			phase = "drain"
		}
		redisNote := ""
		if redis {
			redisNote = " + redis-server"
		}
		fmt.Fprintf(h.out, "chaos %s: +%-4s %s  kills %d%s  unexpected exits %d  alerts: %d open, %d resolve (%d answered 500)\n",
			h.o.Mode, time.Since(plan.Start).Round(time.Second), phase, kills, redisNote, len(h.unexpectedExits()), opens, resolves, failed)
	}
}

// verdicts reads every endpoint's verdict history over the REST API.
func (h *harness) verdicts(ctx context.Context) ([][]verdictRow, error) {
	out := make([][]verdictRow, len(h.ids))
	for i, id := range h.ids {
		var v struct {
			Verdicts []verdictRow `json:"verdicts"`
		}
		if err := h.api(ctx, http.MethodGet, "/v1/endpoints/"+id+"/verdicts?limit="+strconv.Itoa(1000), nil, &v); err != nil {
			return out, fmt.Errorf("verdicts of %s: %w", id, err)
		}
		out[i] = v.Verdicts
	}
	return out, nil
}
