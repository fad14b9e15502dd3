package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	pmodel "github.com/prometheus/common/model"

	"github.com/mcpmon/mcpmon/pkg/daemon"
	"github.com/mcpmon/mcpmon/pkg/testpeers/e2e"
)

// versusOptions configure the side-by-side run: the same fleet checked by
// `mcpmon run` and by the monitors a user would pick instead.
type versusOptions struct {
	endpoints  int
	settle     time.Duration // after every endpoint is registered, before the window
	window     time.Duration
	gatus      string // binaries; empty: that monitor is left out
	blackbox   string
	prometheus string
	cpuprofile string   // mcpmon's CPU profile, written by its child on exit
	mcpmonArgs []string // more `mcpmon run` flags, e.g. --probe-concurrency 64
}

// versusInterval is every monitor's check interval.
const versusInterval = time.Second

// initializeBody is the one request a Gatus or blackbox_exporter user
// sends to check an MCP server: a JSON-RPC initialize, answered 200 by a
// live Streamable HTTP server.
const initializeBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"monitor","version":"1.0.0"}}}`

// initializeHeaders are the headers Streamable HTTP requires of that POST.
var initializeHeaders = map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}

// maxScrape bounds what is read from a monitor's /metrics or query API.
const maxScrape = 64 << 20

// versusSessionTimeout closes the fleet server's sessions that a one-POST
// check opens and never deletes, so a long run does not grow the server
// without bound.
const versusSessionTimeout = 10 * time.Second

// monitor is one contender at one size: its processes (CPU and RSS are
// summed over them) and how to read the checks it has done so far from its
// own metrics.
type monitor struct {
	name      string
	endpoints int
	procs     []*e2e.Proc
	checks    func(ctx context.Context) (total, ok float64, err error)
	// failures, if set, says what the checks that were not ok were.
	failures func(ctx context.Context) string
}

// sample is a monitor's state at one instant.
type sample struct {
	cpu        []time.Duration // per process
	checks, ok float64
}

// measured is what a monitor did over the window.
type measured struct {
	name      string
	endpoints int
	procNames []string
	cpu       []time.Duration // per process, over the window
	rss       int64           // summed VmRSS at the end
	checks    float64
	ok        float64
}

// runVersus starts the fleet, then every monitor twice — at o.endpoints and
// at one endpoint, the baseline the RSS per endpoint is taken against — all
// at once, so they share the machine's load; lets them settle, and measures
// each process's CPU (/proc/PID/stat) and the checks each monitor counted
// over one window.
func runVersus(ctx context.Context, o versusOptions, stdout, stderr io.Writer) error {
	dir, err := os.MkdirTemp("", "mcpmon-versus-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	srv, urls, err := startFleet(ctx, o.endpoints, versusSessionTimeout, stderr)
	if err != nil {
		return err
	}
	defer srv.stop()
	exe, err := os.Executable()
	if err != nil {
		return err
	}

	var monitors []*monitor
	defer func() {
		for _, m := range monitors {
			for _, p := range m.procs {
				p.Stop(30 * time.Second)
			}
		}
	}()
	for _, n := range []int{o.endpoints, 1} {
		sub := filepath.Join(dir, strconv.Itoa(n))
		if err := os.MkdirAll(sub, 0o755); err != nil {
			return err
		}
		profile := ""
		if n == o.endpoints {
			profile = o.cpuprofile
		}
		m, err := startMcpmon(ctx, exe, sub, urls[:n], profile, o.mcpmonArgs, stderr)
		if m != nil {
			monitors = append(monitors, m)
		}
		if err != nil {
			return err
		}
		if o.gatus != "" {
			m, err := startGatus(ctx, o.gatus, sub, urls[:n])
			if m != nil {
				monitors = append(monitors, m)
			}
			if err != nil {
				return err
			}
		}
		if o.blackbox != "" && o.prometheus != "" {
			m, err := startBlackbox(ctx, o.blackbox, o.prometheus, sub, urls[:n])
			if m != nil {
				monitors = append(monitors, m)
			}
			if err != nil {
				return err
			}
		}
	}
	fmt.Fprintf(stderr, "versus: %d monitors running against %d endpoints at %s; settling %s, then measuring %s ...\n", len(monitors), o.endpoints, versusInterval, o.settle, o.window)
	if err := sleep(ctx, o.settle); err != nil {
		return err
	}
	load0 := loadavg()
	before := make([]sample, len(monitors))
	for i, m := range monitors {
		if before[i], err = m.sample(ctx); err != nil {
			return err
		}
	}
	start := time.Now()
	if err := sleep(ctx, o.window); err != nil {
		return err
	}
	elapsed := time.Since(start)
	results := make([]measured, len(monitors))
	for i, m := range monitors {
		after, err := m.sample(ctx)
		if err != nil {
			return err
		}
		r := measured{name: m.name, endpoints: m.endpoints, checks: after.checks - before[i].checks, ok: after.ok - before[i].ok}
		for j, p := range m.procs {
			r.procNames = append(r.procNames, p.Name)
			r.cpu = append(r.cpu, after.cpu[j]-before[i].cpu[j])
			rss, _, err := procRSS(p.PID())
			if err != nil {
				return err
			}
			r.rss += rss
		}
		results[i] = r
		if r.ok < r.checks && m.failures != nil {
			fmt.Fprintf(stderr, "versus: %s (%d endpoints): %.0f of %.0f checks not ok since the start: %s\n", m.name, m.endpoints, after.checks-after.ok, after.checks, m.failures(ctx))
		}
	}
	fmt.Fprintf(stdout, "the same %d go-sdk MCP endpoints (one server in a child process, JSON answers) checked every %s by each monitor at once; window %s after %s settle; %d CPUs, load average %s at the start, %s at the end\n\n",
		o.endpoints, versusInterval, elapsed.Round(time.Second), o.settle, runtime.NumCPU(), load0, loadavg())
	writeTable(stdout, versusRows(results, o.endpoints, elapsed))
	return nil
}

func (m *monitor) sample(ctx context.Context) (sample, error) {
	var s sample
	var err error
	// Checks first, CPU last at the window's start (and the reverse at
	// its end, see runVersus): the scrape's own cost stays outside it.
	if s.checks, s.ok, err = m.checks(ctx); err != nil {
		return s, fmt.Errorf("%s (%d endpoints): count checks: %w", m.name, m.endpoints, err)
	}
	for _, p := range m.procs {
		cpu, err := procCPU(p.PID())
		if err != nil {
			return s, fmt.Errorf("%s: %w", p.Name, err)
		}
		s.cpu = append(s.cpu, cpu)
	}
	return s, nil
}

// versusRows is the table: one row per monitor at the measured size, with
// the RSS per endpoint taken against the same monitor at one endpoint and
// the CPU per check set beside mcpmon's; a monitor of several processes
// gets a row per process too.
func versusRows(rs []measured, n int, elapsed time.Duration) [][]string {
	base := map[string]measured{}
	var mcpmonPer float64
	for _, r := range rs {
		if r.endpoints == 1 && n > 1 {
			base[r.name] = r
		}
		if r.name == monitorMcpmon && r.endpoints == n && r.checks > 0 {
			mcpmonPer = float64(sum(r.cpu)) / r.checks
		}
	}
	rows := [][]string{{"monitor (what one check is)", "checks/s (ok)", "CPU per check", "CPU, % of one core", "RSS", "RSS per endpoint (vs 1 endpoint)", "mcpmon's CPU per check ÷ this"}}
	for _, r := range rs {
		if r.endpoints != n {
			continue
		}
		perEndpoint := "—"
		if b, ok := base[r.name]; ok {
			perEndpoint = fmt.Sprintf("%.1f KiB", float64(r.rss-b.rss)/float64(n-1)/1024)
		}
		row := func(label string, cpu time.Duration, rss string, perEp string) []string {
			per, vs := "n/a", "n/a"
			if r.checks > 0 {
				p := float64(cpu) / r.checks
				per = time.Duration(p).Round(time.Microsecond).String()
				if mcpmonPer > 0 {
					vs = fmt.Sprintf("%.2f×", mcpmonPer/p)
				}
			}
			okShare := "—"
			if r.checks > 0 {
				okShare = fmt.Sprintf("%.0f %%", 100*r.ok/r.checks)
			}
			return []string{label, fmt.Sprintf("%.1f (%s)", r.checks/elapsed.Seconds(), okShare), per,
				fmt.Sprintf("%.1f %%", 100*cpu.Seconds()/elapsed.Seconds()), rss, perEp, vs}
		}
		rows = append(rows, row(fmt.Sprintf("%s (%s)", r.name, checkOf[r.name]), sum(r.cpu), fmt.Sprintf("%.1f MiB", mib(r.rss)), perEndpoint))
		if len(r.cpu) > 1 {
			for i, c := range r.cpu {
				rows = append(rows, row("  of which "+r.procNames[i], c, "", ""))
			}
		}
	}
	return rows
}

func writeTable(w io.Writer, rows [][]string) {
	for i, r := range rows {
		fmt.Fprintf(w, "| %s |\n", strings.Join(r, " | "))
		if i == 0 {
			fmt.Fprintln(w, strings.Repeat("|---", len(r))+"|")
		}
	}
}

func sum(ds []time.Duration) time.Duration {
	var t time.Duration
	for _, d := range ds {
		t += d
	}
	return t
}

const (
	monitorMcpmon   = "mcpmon run"
	monitorGatus    = "Gatus v5.36.0"
	monitorBlackbox = "blackbox_exporter + Prometheus"
)

var checkOf = map[string]string{
	monitorMcpmon:   "initialize, initialized, ping, tools/list, DELETE on a fresh connection; result queued, verdicts and uptime in bbolt",
	monitorGatus:    "one POST of initialize on a kept-alive connection, [STATUS] == 200; results in memory",
	monitorBlackbox: "one POST of initialize on a fresh connection, valid_status_codes [200]; Prometheus scrapes it into its TSDB",
}

// startMcpmon runs `mcpmon run` (this binary's --mcpmon-child, which calls
// the daemon.Main the CLI's run command calls) on dir with default
// settings but for loopback targets allowed, no API keys and no API
// limits (and extra flags), and registers one endpoint per URL through the
// REST API.
func startMcpmon(ctx context.Context, exe, dir string, urls []string, cpuprofile string, extra []string, stderr io.Writer) (*monitor, error) {
	addr, err := e2e.FreeAddr()
	if err != nil {
		return nil, err
	}
	args := []string{"--mcpmon-child"}
	if cpuprofile != "" {
		args = append(args, "--cpuprofile", cpuprofile)
	}
	args = append(args, "--", "--listen", addr, "--data-dir", filepath.Join(dir, "mcpmon"), "--auth", "none", "--allow-private-targets", "--log-level", "warn",
		// The registrations below are one burst from one client.
		"--rate-limit", "0", "--max-endpoints-per-tenant", "0")
	args = append(args, extra...)
	p, err := startLogged(exe, args, nil, dir, "mcpmon")
	if err != nil {
		return nil, err
	}
	m := &monitor{name: monitorMcpmon, endpoints: len(urls), procs: []*e2e.Proc{p}, checks: func(ctx context.Context) (float64, float64, error) {
		mfs, err := scrape(ctx, "http://"+addr+"/metrics")
		if err != nil {
			return 0, 0, err
		}
		return counter(mfs, "mcpmon_probes_total", nil), counter(mfs, "mcpmon_probes_total", map[string]string{"class": "ok"}), nil
	}}
	m.failures = func(ctx context.Context) string {
		mfs, err := scrape(ctx, "http://"+addr+"/metrics")
		if err != nil {
			return err.Error()
		}
		by := map[string]float64{}
		for _, s := range mfs["mcpmon_probes_total"].GetMetric() {
			for _, lp := range s.GetLabel() {
				if lp.GetName() == "class" && lp.GetValue() != "ok" {
					by[lp.GetValue()] += s.GetCounter().GetValue()
				}
			}
		}
		return fmt.Sprint(by)
	}
	if err := p.WaitReady(ctx, time.Minute, e2e.HTTPReady(addr)); err != nil {
		return m, err
	}
	api := e2e.API{URL: "http://" + addr}
	for i, u := range urls {
		if _, err := api.Register(ctx, map[string]any{"name": fmt.Sprintf("mcp-%d", i), "url": u, "schedule": fmt.Sprintf("@every %s", versusInterval)}); err != nil {
			return m, err
		}
		if (i+1)%1000 == 0 {
			fmt.Fprintf(stderr, "versus: %d/%d endpoints registered in mcpmon\n", i+1, len(urls))
		}
	}
	return m, nil
}

// runMcpmonChild is `mcpmon run args`, with a CPU profile over its life.
func runMcpmonChild(ctx context.Context, args []string, cpuprofile string, stdout, stderr io.Writer) error {
	stopProfile, err := startCPUProfile(cpuprofile)
	if err != nil {
		return err
	}
	defer stopProfile()
	return daemon.Main(ctx, daemon.RoleAll, args, os.Getenv, stdout, stderr)
}

// startGatus runs Gatus with one endpoint per URL, configured as its users
// check an MCP server, and its Prometheus metrics on.
func startGatus(ctx context.Context, bin, dir string, urls []string) (*monitor, error) {
	addr, err := e2e.FreeAddr()
	if err != nil {
		return nil, err
	}
	cfg, err := gatusConfig(addr, urls)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, "gatus.yaml")
	if err := os.WriteFile(path, cfg, 0o644); err != nil {
		return nil, err
	}
	env := append(os.Environ(), "GATUS_CONFIG_PATH="+path, "GATUS_LOG_LEVEL=WARN")
	p, err := startLogged(bin, nil, env, dir, "gatus")
	if err != nil {
		return nil, err
	}
	m := &monitor{name: monitorGatus, endpoints: len(urls), procs: []*e2e.Proc{p}, checks: func(ctx context.Context) (float64, float64, error) {
		mfs, err := scrape(ctx, "http://"+addr+"/metrics")
		if err != nil {
			return 0, 0, err
		}
		return counter(mfs, "gatus_results_total", nil), counter(mfs, "gatus_results_total", map[string]string{"success": "true"}), nil
	}}
	return m, p.WaitReady(ctx, time.Minute, getOK("http://"+addr+"/health"))
}

// gatusConfig is a Gatus configuration in JSON, which its YAML parser
// reads: metrics on, the web server on addr, and per URL an endpoint that
// POSTs initialize every versusInterval with a status condition.
func gatusConfig(addr string, urls []string) ([]byte, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	portN, err := strconv.Atoi(port)
	if err != nil {
		return nil, err
	}
	eps := make([]map[string]any, len(urls))
	for i, u := range urls {
		eps[i] = map[string]any{
			"name": fmt.Sprintf("mcp-%d", i), "url": u, "method": http.MethodPost, "interval": versusInterval.String(),
			"headers": initializeHeaders, "body": initializeBody, "conditions": []string{"[STATUS] == 200"},
		}
	}
	return json.MarshalIndent(map[string]any{"metrics": true, "web": map[string]any{"address": host, "port": portN}, "endpoints": eps}, "", "  ")
}

// startBlackbox runs blackbox_exporter with an http_post module and a
// Prometheus that scrapes one probe per URL through it every
// versusInterval, as that pair is deployed; checks are the probe_success
// samples Prometheus stored.
func startBlackbox(ctx context.Context, bbBin, promBin, dir string, urls []string) (*monitor, error) {
	bbAddr, err := e2e.FreeAddr()
	if err != nil {
		return nil, err
	}
	promAddr, err := e2e.FreeAddr()
	if err != nil {
		return nil, err
	}
	bbCfg, promCfg := filepath.Join(dir, "blackbox.yml"), filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(bbCfg, blackboxConfig(), 0o644); err != nil {
		return nil, err
	}
	if err := os.WriteFile(promCfg, prometheusConfig(bbAddr, urls), 0o644); err != nil {
		return nil, err
	}
	bb, err := startLogged(bbBin, []string{"--config.file=" + bbCfg, "--web.listen-address=" + bbAddr, "--log.level=warn"}, nil, dir, "blackbox_exporter")
	if err != nil {
		return nil, err
	}
	m := &monitor{name: monitorBlackbox, endpoints: len(urls), procs: []*e2e.Proc{bb}}
	if err := bb.WaitReady(ctx, time.Minute, getOK("http://"+bbAddr+"/-/healthy")); err != nil {
		return m, err
	}
	prom, err := startLogged(promBin, []string{"--config.file=" + promCfg, "--storage.tsdb.path=" + filepath.Join(dir, "tsdb"),
		"--web.listen-address=" + promAddr, "--log.level=warn"}, nil, dir, "prometheus")
	if err != nil {
		return m, err
	}
	m.procs = append(m.procs, prom)
	m.checks = func(ctx context.Context) (float64, float64, error) {
		// Every sample since the start: the run is shorter than the range.
		total, err := promQuery(ctx, promAddr, `sum(count_over_time(probe_success{job="mcp"}[1h]))`)
		if err != nil {
			return 0, 0, err
		}
		ok, err := promQuery(ctx, promAddr, `sum(sum_over_time(probe_success{job="mcp"}[1h]))`)
		return total, ok, err
	}
	return m, prom.WaitReady(ctx, time.Minute, getOK("http://"+promAddr+"/-/ready"))
}

// blackboxConfig is the blackbox_exporter module that POSTs initialize
// and wants a 200.
func blackboxConfig() []byte {
	b, _ := json.MarshalIndent(map[string]any{"modules": map[string]any{"mcp_initialize": map[string]any{
		"prober": "http", "timeout": "5s",
		"http": map[string]any{"method": http.MethodPost, "headers": initializeHeaders, "body": initializeBody, "valid_status_codes": []int{200}},
	}}}, "", "  ")
	return b
}

// prometheusConfig scrapes /probe on bbAddr once per URL every
// versusInterval, the blackbox_exporter's documented relabelling.
func prometheusConfig(bbAddr string, urls []string) []byte {
	b, _ := json.MarshalIndent(map[string]any{
		"global": map[string]any{"scrape_interval": versusInterval.String(), "scrape_timeout": versusInterval.String()},
		"scrape_configs": []any{map[string]any{
			"job_name": "mcp", "metrics_path": "/probe", "params": map[string][]string{"module": {"mcp_initialize"}},
			"static_configs": []any{map[string]any{"targets": urls}},
			"relabel_configs": []any{
				map[string]any{"source_labels": []string{"__address__"}, "target_label": "__param_target"},
				map[string]any{"source_labels": []string{"__param_target"}, "target_label": "instance"},
				map[string]any{"target_label": "__address__", "replacement": bbAddr},
			},
		}},
	}, "", "  ")
	return b
}

// startLogged starts bin with its output in dir/name.log.
func startLogged(bin string, args, env []string, dir, name string) (*e2e.Proc, error) {
	f, err := os.Create(filepath.Join(dir, name+".log"))
	if err != nil {
		return nil, err
	}
	defer f.Close() // the child holds its own descriptor
	return e2e.Start(e2e.Spec{Name: name, Path: bin, Args: args, Env: env, Output: f})
}

// getOK is a readiness check that url answers 200.
func getOK(u string) func(context.Context) error {
	return func(ctx context.Context) error {
		_, err := get(ctx, u)
		return err
	}
}

var versusClient = &http.Client{Timeout: 10 * time.Second}

// get returns the body of a 200 answer to GET u, at most maxScrape bytes.
func get(ctx context.Context, u string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	resp, err := versusClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxScrape+1))
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", u, err)
	}
	if len(b) > maxScrape {
		return nil, fmt.Errorf("GET %s: answer over %d bytes", u, maxScrape)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", u, resp.Status)
	}
	return b, nil
}

// scrape reads a Prometheus text exposition.
func scrape(ctx context.Context, u string) (map[string]*dto.MetricFamily, error) {
	b, err := get(ctx, u)
	if err != nil {
		return nil, err
	}
	p := expfmt.NewTextParser(pmodel.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(strings.NewReader(string(b)))
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", u, err)
	}
	return mfs, nil
}

// counter sums the series of a counter whose labels include every pair of
// want.
func counter(mfs map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	var t float64
	mf, ok := mfs[name]
	if !ok {
		return 0
	}
	for _, m := range mf.GetMetric() {
		have := 0
		for _, lp := range m.GetLabel() {
			if v, ok := want[lp.GetName()]; ok && v == lp.GetValue() {
				have++
			}
		}
		if have == len(want) {
			t += m.GetCounter().GetValue()
		}
	}
	return t
}

// promQuery evaluates an instant query whose answer is one number (an
// empty vector is 0).
func promQuery(ctx context.Context, addr, query string) (float64, error) {
	b, err := get(ctx, "http://"+addr+"/api/v1/query?query="+url.QueryEscape(query))
	if err != nil {
		return 0, err
	}
	return promScalar(b)
}

// promScalar reads the value of a one-sample vector from a Prometheus
// query API answer.
func promScalar(b []byte) (float64, error) {
	var a struct {
		Status string `json:"status"`
		Data   struct {
			Result []struct {
				Value [2]any `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal(b, &a); err != nil {
		return 0, fmt.Errorf("query answer: %w", err)
	}
	if a.Status != "success" {
		return 0, fmt.Errorf("query answer status %q", a.Status)
	}
	switch len(a.Data.Result) {
	case 0:
		return 0, nil
	case 1:
		s, ok := a.Data.Result[0].Value[1].(string)
		if !ok {
			return 0, errors.New("query answer: value is not a string")
		}
		return strconv.ParseFloat(s, 64)
	default:
		return 0, fmt.Errorf("query answer: %d series, want one", len(a.Data.Result))
	}
}

// loadavg is the 1-minute load average, or "?".
func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return "?"
	}
	return f[0]
}
