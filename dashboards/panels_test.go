package dashboards_test

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/mcpmon/mcpmon/dashboards"
	"github.com/mcpmon/mcpmon/pkg/metrics"
	"github.com/mcpmon/mcpmon/pkg/testpeers"
	"github.com/mcpmon/mcpmon/pkg/testpeers/e2e"
)

// The panel-query test proves every dashboard panel against real data: it
// builds and runs `mcpmon run`, registers a go-sdk MCP server (over TLS, so
// certificate expiry is real) and an endpoint that is down (a closed port),
// lets a real Prometheus scrape mcpmon every second, and evaluates every
// panel query of every dashboard through Prometheus's HTTP API with the
// template variables substituted. A query that returns no series fails.
//
// Queue: SQS (fauxqs) when MCPMON_TEST_SQS_ENDPOINT is set — always under
// `make test` — so the SQS-only panels (mcpmon_sqs_requests_total) are
// proven too; otherwise the embedded queue, and those panels are the only
// ones allowed to be empty (sqsOnly below).

const (
	envPrometheus = "MCPMON_TEST_PROMETHEUS"
	// rateInterval stands in for Grafana's $__rate_interval: at least four
	// scrape intervals (1s here), like Grafana computes it.
	rateInterval = "15s"
	// deadline bounds the whole wait for data; typically ~15s are needed.
	deadline = 90 * time.Second
)

// sqsOnly names the panels whose every query reads SQS-only metrics.
var sqsOnly = map[string]bool{"SQS requests per result": true, "SQS requests by stage queue and operation": true}

func TestPanelQueriesReturnData(t *testing.T) {
	if testing.Short() {
		t.Skip("builds mcpmon and runs Prometheus")
	}
	promBin := tool(t, envPrometheus, "prometheus")
	dir := t.TempDir()
	// Building is not part of the time budget: under `make test` it competes
	// with every other package's compile.
	bin := testpeers.Mcpmon(t)
	ctx, cancel := context.WithTimeout(t.Context(), deadline+30*time.Second)
	defer cancel()

	// 1. The peers mcpmon watches and alerts: a TLS go-sdk MCP server, a
	// closed port, a webhook receiver.
	mcpSrv := mcp.NewServer(&mcp.Implementation{Name: "panel-fixture", Version: "1.0.0"}, nil)
	mcp.AddTool(mcpSrv, &mcp.Tool{Name: "echo", Description: "Echo the text back."},
		func(_ context.Context, _ *mcp.CallToolRequest, in struct {
			Text string `json:"text"`
		}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
		})
	up := httptest.NewTLSServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return mcpSrv }, nil))
	defer up.Close()
	caFile := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: up.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	downURL := "http://" + closedPort(t) + "/mcp"
	hook := testpeers.NewReceiver(t, nil)

	// 2. mcpmon, all roles in one process.
	// Two regions (one in-process prober each), so the region panels are
	// proven too.
	regions := []string{"--regions", "eu,us"}
	args := append([]string{"run", "--listen", "127.0.0.1:0", "--data-dir", filepath.Join(dir, "data"), "--window", "2s",
		"--grace", "1s", "--allow-private-targets", "--webhook-url", hook.URL}, regions...)
	env := append(os.Environ(), "SSL_CERT_FILE="+caFile) // the prober trusts the fixture's certificate
	sqsEndpoint := os.Getenv(testpeers.EnvSQSEndpoint)
	if os.Getenv(testpeers.EnvRequire) == "1" {
		sqsEndpoint = testpeers.SQSEndpoint(t) // `make test`: SQS panels must be proven
	}
	if sqsEndpoint != "" {
		prefix := fmt.Sprintf("panels%d-", time.Now().UnixNano()%1e9)
		sqsArgs := []string{"--queue", "sqs", "--sqs-endpoint", sqsEndpoint, "--sqs-prefix", prefix, "--sqs-region", "us-east-1"}
		env = append(env, "AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=test", "AWS_REGION=us-east-1")
		ensure := exec.CommandContext(ctx, bin, append(append([]string{"queues", "ensure"}, sqsArgs...), regions...)...)
		ensure.Env = env
		if out, err := ensure.CombinedOutput(); err != nil {
			t.Fatalf("mcpmon queues ensure: %v\n%s", err, out)
		}
		args = append(args, sqsArgs...)
	} else {
		t.Logf("%s not set: running on the embedded queue; SQS-only panels %v may be empty", testpeers.EnvSQSEndpoint, slices.Sorted(maps.Keys(sqsOnly)))
	}
	api := testpeers.StartMcpmon(t, args, env)

	upID := register(t, ctx, api, "fixture-up", up.URL+"/mcp")
	downID := register(t, ctx, api, "fixture-down", downURL)

	// 3. Prometheus scraping mcpmon every second.
	prom := startPrometheus(t, ctx, promBin, dir, strings.TrimPrefix(api.URL, "http://"))

	// 4. Wait until the pipeline has produced what the panels show: both
	// verdicts, an alert delivered, and enough samples for rates.
	ready := []string{
		fmt.Sprintf(`mcpmon_verdict_state{endpoint=%q,state="up"} == 1`, upID),
		fmt.Sprintf(`mcpmon_verdict_state{endpoint=%q,state="down"} == 1`, downID),
		`sum(mcpmon_alerts_total{outcome="sent"}) > 0`,
		fmt.Sprintf(`mcpmon_probe_cert_expiry_timestamp_seconds{endpoint=%q}`, upID),
		`count_over_time(mcpmon_build_info[1m]) >= 5`,
	}
	waitFor(t, ctx, "the pipeline's first verdicts and alert", func() error {
		for _, q := range ready {
			if n, err := prom.count(ctx, q); err != nil || n == 0 {
				return fmt.Errorf("%s: %d series (%v)", q, n, err)
			}
		}
		return nil
	})

	// 5. Every panel query of every dashboard. A query may still be warming
	// up (a rate over fresh counters), so the whole set is retried until it
	// passes or the deadline reports what stayed empty.
	ds, err := dashboards.Load(dashboards.FS())
	if err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{
		"endpoint": upID, "datasource": "prometheus",
		"__rate_interval": rateInterval, "__interval": "1s", "__interval_ms": "1000",
		"__range": "5m", "__range_s": "300", "__range_ms": "300000",
	}
	type query struct{ where, expr string }
	var queries []query
	for _, d := range ds {
		for _, p := range d.AllPanels() {
			for _, tg := range p.Targets {
				if sqsEndpoint == "" && sqsOnly[p.Title] {
					continue
				}
				queries = append(queries, query{fmt.Sprintf("%s / %q / %s", d.File, p.Title, tg.RefID), dashboards.Substitute(tg.Expr, vars)})
			}
		}
		// The endpoint variable's own query must offer both endpoints.
		for _, v := range d.Templating.List {
			if v.Type == "query" {
				waitFor(t, ctx, "variable "+v.Name, func() error {
					vals, err := prom.labelValues(ctx, v.QueryString())
					if err != nil {
						return err
					}
					if !slices.Contains(vals, upID) || !slices.Contains(vals, downID) {
						return fmt.Errorf("%s offers %v, want %s and %s", v.QueryString(), vals, upID, downID)
					}
					return nil
				})
			}
		}
	}
	if len(queries) < 30 {
		t.Fatalf("only %d panel queries found", len(queries))
	}
	waitFor(t, ctx, "every panel query to return data", func() error {
		var empty []string
		for _, q := range queries {
			n, err := prom.rangeCount(ctx, q.expr)
			if err != nil {
				return fmt.Errorf("%s: %s: %w", q.where, q.expr, err)
			}
			if n == 0 {
				empty = append(empty, q.where+": "+q.expr)
			}
		}
		if len(empty) > 0 {
			return fmt.Errorf("%d of %d queries return no series:\n  %s", len(empty), len(queries), strings.Join(empty, "\n  "))
		}
		return nil
	})
	t.Logf("%d panel queries across %d dashboards returned data", len(queries), len(ds))

	// 6. The data says what happened, not just that something exists.
	checks := map[string]string{
		// the down endpoint's failure class is a refused connection
		fmt.Sprintf(`mcpmon_probes_total{endpoint=%q,class="refused"} > 0`, downID): "down endpoint classified refused",
		// the fleet's "not up" table lists it
		fmt.Sprintf(`max by (endpoint, state) (mcpmon_verdict_state{state!="up",endpoint=%q}) == 1`, downID): "fleet lists the down endpoint",
		// the up endpoint negotiated a protocol version over streamable HTTP
		fmt.Sprintf(`mcpmon_probe_protocol_info{endpoint=%q,version=~"20.+"}`, upID): "protocol version of the up endpoint",
		// its certificate (httptest's) expires in the future
		fmt.Sprintf(`mcpmon_probe_cert_expiry_timestamp_seconds{endpoint=%q} - time() > 86400`, upID): "certificate expiry in the future",
	}
	for q, what := range checks {
		if n, err := prom.count(ctx, q); err != nil || n == 0 {
			t.Errorf("%s: %s returned %d series (%v)", what, q, n, err)
		}
	}
	// 7. What mcpmon exports matches the catalog the dashboards are built
	// on: no unknown or mislabelled mcpmon_* family, and every catalog
	// family present (SQS-only ones on SQS only).
	mfs := scrape(t, ctx, api.URL)
	if err := metrics.Lint(prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) { return mfs, nil })); err != nil {
		t.Errorf("mcpmon's /metrics disagrees with the catalog:\n%v", err)
	}
	got := map[string]bool{}
	for _, mf := range mfs {
		got[mf.GetName()] = true
	}
	// Series that exist only with what this run does not configure: SQS
	// (unless the peer is set), a JWT bearer credential, a sink that
	// opted into change events (their tests: prober and the daemon's event
	// end-to-end test) and agents.
	// The agent families exist only with an agent (mcpmon agent): the
	// daemon's TestSilentAgentTellsItsTenantOnce checks them.
	conditional := map[string]bool{
		"mcpmon_probe_credential_expiry_timestamp_seconds": true,
		"mcpmon_event_notifications_total":                 true,
		"mcpmon_agent_last_seen_timestamp_seconds":         true,
		"mcpmon_agent_clock_skew_seconds":                  true,
		"mcpmon_agent_results_total":                       true,
		"mcpmon_agent_online":                              true,
		// Only with --store redis; the Redis store's tests check them.
		"mcpmon_store_ledger_waits_total":        true,
		"mcpmon_store_ledger_unreplicated_total": true,
	}
	if sqsEndpoint == "" {
		conditional["mcpmon_sqs_requests_total"] = true
	}
	for _, f := range metrics.Catalog() {
		if !got[f.Name] && !conditional[f.Name] {
			t.Errorf("catalog metric %s (owner %s) is not exported by mcpmon run", f.Name, f.Owner)
		}
	}
	if len(hook.Requests()) == 0 {
		t.Error("the webhook received no alert although the Prometheus counter says one was sent")
	}
}

func scrape(t *testing.T, ctx context.Context, api string) []*dto.MetricFamily {
	t.Helper()
	resp, err := httpGet(ctx, api+"/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	byName, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	var out []*dto.MetricFamily
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		out = append(out, byName[name])
	}
	return out
}

// tool finds a binary from env (set by .ci/start-prometheus.sh) or PATH.
func tool(t *testing.T, env, name string) string {
	t.Helper()
	if p := os.Getenv(env); p != "" {
		return p
	}
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	if os.Getenv(testpeers.EnvRequire) == "1" {
		t.Fatalf("%s not set and %s not on PATH but %s=1: .ci/start-prometheus.sh should have installed it", env, name, testpeers.EnvRequire)
	}
	t.Skipf("%s not set: run `make test` (or eval \"$(.ci/start-prometheus.sh DIR)\") for Debian's prometheus package", env)
	return ""
}

func closedPort(t *testing.T) string {
	t.Helper()
	addr, err := e2e.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	return addr
}

func httpGet(ctx context.Context, u string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	return http.DefaultClient.Do(req)
}

func register(t *testing.T, ctx context.Context, api e2e.API, name, target string) string {
	t.Helper()
	id, err := api.Register(ctx, map[string]any{"name": name, "url": target, "schedule": "@every 1s", "timeout": "1s"})
	if err != nil {
		t.Fatal(err)
	}
	return id
}

type promAPI struct{ base string }

func startPrometheus(t *testing.T, ctx context.Context, bin, dir, target string) promAPI {
	t.Helper()
	cfg := fmt.Sprintf(`global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: mcpmon
    static_configs:
      - targets: [%q]
`, target)
	cfgFile := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfgFile, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := closedPort(t)
	testpeers.StartProcess(t, e2e.Spec{Name: "prometheus", Path: bin, Args: []string{"--config.file=" + cfgFile,
		"--storage.tsdb.path=" + filepath.Join(dir, "tsdb"), "--web.listen-address=" + addr, "--log.level=warn"}})
	p := promAPI{base: "http://" + addr}
	waitFor(t, ctx, "prometheus /-/ready", func() error {
		resp, err := httpGet(ctx, p.base+"/-/ready")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("/-/ready %s", resp.Status)
		}
		return nil
	})
	return p
}

type promResponse struct {
	Status string `json:"status"`
	Error  string `json:"error"`
	Data   struct {
		ResultType string            `json:"resultType"`
		Result     []json.RawMessage `json:"result"`
	} `json:"data"`
}

func (p promAPI) get(ctx context.Context, path string, q url.Values, out any) error {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, p.base+path+"?"+q.Encode(), nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("%s: %s: %w", path, b, err)
	}
	return nil
}

// count evaluates an instant query now and returns how many series it has.
func (p promAPI) count(ctx context.Context, expr string) (int, error) {
	var r promResponse
	if err := p.get(ctx, "/api/v1/query", url.Values{"query": {expr}}, &r); err != nil {
		return 0, err
	}
	if r.Status != "success" {
		return 0, fmt.Errorf("query error: %s", r.Error)
	}
	return len(r.Data.Result), nil
}

// rangeCount evaluates expr over the last 30s at 1s steps, as a dashboard
// panel does, and returns how many series came back.
func (p promAPI) rangeCount(ctx context.Context, expr string) (int, error) {
	now := time.Now()
	var r promResponse
	q := url.Values{"query": {expr}, "start": {fmt.Sprint(now.Add(-30 * time.Second).Unix())}, "end": {fmt.Sprint(now.Unix())}, "step": {"1"}}
	if err := p.get(ctx, "/api/v1/query_range", q, &r); err != nil {
		return 0, err
	}
	if r.Status != "success" {
		return 0, fmt.Errorf("query error: %s", r.Error)
	}
	return len(r.Data.Result), nil
}

var labelValuesRe = regexp.MustCompile(`^label_values\(\s*([a-zA-Z_:][a-zA-Z0-9_:]*(?:\{[^}]*\})?)\s*,\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\)$`)

// labelValues answers a Grafana label_values(metric, label) variable query
// the way Grafana's Prometheus data source does (series API + label).
func (p promAPI) labelValues(ctx context.Context, q string) ([]string, error) {
	m := labelValuesRe.FindStringSubmatch(strings.TrimSpace(q))
	if m == nil {
		return nil, fmt.Errorf("variable query %q: only label_values(metric, label) is supported", q)
	}
	var r struct {
		Status string              `json:"status"`
		Data   []map[string]string `json:"data"`
	}
	if err := p.get(ctx, "/api/v1/series", url.Values{"match[]": {m[1]}}, &r); err != nil {
		return nil, err
	}
	var out []string
	for _, s := range r.Data {
		if v := s[m[2]]; v != "" && !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out, nil
}

// waitFor polls f every 250ms until it returns nil or ctx's deadline,
// reporting f's last error. It waits on a timer between polls of a real
// external system (Prometheus, a child process), not for a condition in
// this process.
func waitFor(t *testing.T, ctx context.Context, what string, f func() error) {
	t.Helper()
	wctx, cancel := context.WithTimeout(ctx, deadline)
	defer cancel()
	if err := e2e.Poll(wctx, 250*time.Millisecond, f); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}
