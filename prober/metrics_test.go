package prober

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"

	"github.com/mcpmon/mcpmon/pkg/msg"
)

func newRegistry() *prometheus.Registry { return prometheus.NewRegistry() }

// seriesValue is the value of m's one series of family name whose labels
// include the name/value pairs given; the test fails unless exactly one
// matches.
func seriesValue(t *testing.T, m *Metrics, name string, labels ...string) float64 {
	t.Helper()
	var found []*dto.Metric
	for _, s := range series(t, m, name) {
		match := true
		for i := 0; i+1 < len(labels); i += 2 {
			has := false
			for _, lp := range s.GetLabel() {
				has = has || lp.GetName() == labels[i] && lp.GetValue() == labels[i+1]
			}
			match = match && has
		}
		if match {
			found = append(found, s)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%s%v: %d series match, want 1", name, labels, len(found))
	}
	s := found[0]
	return s.GetCounter().GetValue() + s.GetGauge().GetValue()
}

// seriesCount is how many series of family name m exports.
func seriesCount(t *testing.T, m *Metrics, name string) int {
	t.Helper()
	return len(series(t, m, name))
}

func series(t *testing.T, m *Metrics, name string) []*dto.Metric {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(m)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf.GetMetric()
		}
	}
	return nil
}

func gatherText(t *testing.T, reg *prometheus.Registry) string {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, mf := range mfs {
		if _, err := expfmt.MetricFamilyToText(&b, mf); err != nil {
			t.Fatal(err)
		}
	}
	return b.String()
}

// TestMetricsAndCertExpiry probes a TLS server whose certificate expires in
// two days: up, with the expiry recorded, a cert_expiring event and the
// catalog's metrics.
func TestMetricsAndCertExpiry(t *testing.T) {
	notAfter := time.Now().Add(48 * time.Hour).Truncate(time.Second)
	cert, x := genCert(t, time.Now().Add(-time.Hour), notAfter)
	ts := tlsServe(t, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return sdkServer() }, nil), cert)
	reg := newRegistry()
	p := testProber(t, func(o *Options) { trust(x)(o); o.Metrics = NewMetrics(reg); o.Region = "eu" })
	res := p.Probe(context.Background(), endpoint(ts.URL), cmd())
	if res.Class != ClassOK {
		t.Fatalf("class %s: %s", res.Class, res.Error)
	}
	if res.CertExpiry == nil || !res.CertExpiry.Equal(notAfter.UTC()) {
		t.Fatalf("cert expiry %v, want %v", res.CertExpiry, notAfter)
	}
	if len(res.Events) != 1 || res.Events[0].Kind != EventCertExpiring || res.Events[0].Severity != "warning" {
		t.Fatalf("events %+v", res.Events)
	}
	if _, ok := res.Phases[msg.PhaseTLS]; !ok {
		t.Errorf("no tls phase: %v", res.Phases)
	}
	m := p.opts.Metrics
	if got := seriesValue(t, m, "mcpmon_probes_total", "endpoint", "ep1", "class", ClassOK, "region", "eu"); got != 1 {
		t.Errorf("probes_total{ok} = %v", got)
	}
	if got := seriesValue(t, m, "mcpmon_probe_cert_expiry_timestamp_seconds", "endpoint", "ep1"); got != float64(notAfter.Unix()) {
		t.Errorf("cert expiry gauge = %v", got)
	}
	if got := seriesValue(t, m, "mcpmon_probe_up", "endpoint", "ep1", "region", "eu"); got != 1 {
		t.Errorf("probe_up = %v", got)
	}
	if got := seriesValue(t, m, "mcpmon_probe_protocol_info", "endpoint", "ep1", "version", Version20251125, "transport", TransportStreamableHTTP); got != 1 {
		t.Errorf("protocol_info = %v", got)
	}
	text := gatherText(t, reg)
	for _, name := range []string{"mcpmon_probes_total", "mcpmon_probe_duration_seconds", "mcpmon_probe_phase_seconds", "mcpmon_probe_cert_expiry_timestamp_seconds",
		"mcpmon_probe_protocol_info", "mcpmon_tool_catalog_changes_total", "mcpmon_probe_up"} {
		mustContain(t, text, name)
	}
	m.Forget("ep1")
	if strings.Contains(gatherText(t, reg), `endpoint="ep1"`) {
		t.Error("Forget left series behind")
	}
}

// TestExpositionPerEndpoint bounds what one probed endpoint adds to
// /metrics: its series are every scrape's size, multiplied by the fleet.
// A histogram per phase cost 186 series and 16.5 KB per endpoint here (157
// MB per scrape at 10,000 endpoints, mcpmon-load --fleet); now 44 series and
// 3.5 KB. The bound fails if a per-endpoint histogram comes back.
func TestExpositionPerEndpoint(t *testing.T) {
	const n = 50
	reg := newRegistry()
	m := NewMetrics(reg)
	base := len(gatherText(t, reg))
	expiry := time.Date(2027, 3, 1, 0, 0, 0, 0, time.UTC)
	for i := range n {
		// An https endpoint with a host name: every phase but discover.
		res := msg.ProbeResult{EndpointID: fmt.Sprintf("k%015d", i), Class: ClassOK, Status: msg.StatusUp, Region: "eu",
			ProtocolVersion: Version20251125, Transport: TransportStreamableHTTP, CertExpiry: &expiry, Phases: map[string]float64{}}
		for _, p := range msg.Phases() {
			if p != msg.PhaseDiscover {
				res.Phases[p] = 0.004
			}
		}
		m.observe(&res)
	}
	text := gatherText(t, reg)
	series := strings.Count(text, `endpoint="k000000000000007"`)
	perEndpoint := (len(text) - base) / n
	t.Logf("per endpoint: %d series, %d bytes of exposition", series, perEndpoint)
	if series == 0 || series > 45 {
		t.Errorf("one endpoint has %d series, want 1..45", series)
	}
	if perEndpoint > 5000 {
		t.Errorf("one endpoint costs %d bytes of exposition, want at most 5000", perEndpoint)
	}
}

// TestNoConnectionReuseBetweenProbes: each probe dials afresh.
func TestNoConnectionReuseBetweenProbes(t *testing.T) {
	ts, l := countingServer(t)
	p := testProber(t, nil)
	ep := endpoint(ts.URL)
	ep.ProtocolVersion = Version20251125
	for i := 0; i < 3; i++ {
		if res := p.Probe(context.Background(), ep, cmd()); res.Class != ClassOK {
			t.Fatalf("class %s: %s", res.Class, res.Error)
		}
	}
	if n := l.n.Load(); n < 3 {
		t.Fatalf("3 probes used %d connections: connections were reused across probes", n)
	}
}

// A protocol change replaces the endpoint's protocol_info series: one
// series per endpoint, the current one, and other endpoints' untouched.
func TestProtocolInfoKeepsOneSeriesPerEndpoint(t *testing.T) {
	reg := newRegistry()
	m := NewMetrics(reg)
	res := func(ep, version, transport string) *msg.ProbeResult {
		return &msg.ProbeResult{EndpointID: ep, Status: msg.StatusUp, Class: ClassOK, ProtocolVersion: version, Transport: transport}
	}
	m.observe(res("a", "2025-06-18", TransportStreamableHTTP))
	m.observe(res("b", "2025-06-18", TransportStreamableHTTP))
	m.observe(res("a", Version20251125, TransportStreamableHTTP))
	m.observe(res("a", Version20251125, TransportStreamableHTTP))
	if n := seriesCount(t, m, "mcpmon_probe_protocol_info"); n != 2 {
		t.Fatalf("%d protocol_info series, want 2 (a's current and b's)", n)
	}
	if got := seriesValue(t, m, "mcpmon_probe_protocol_info", "endpoint", "a", "version", Version20251125, "transport", TransportStreamableHTTP); got != 1 {
		t.Fatalf("a's current protocol_info = %v, want 1", got)
	}
	m.Forget("a")
	m.observe(res("a", "2025-06-18", TransportSSE))
	if n := seriesCount(t, m, "mcpmon_probe_protocol_info"); n != 2 {
		t.Fatalf("%d protocol_info series after forget and a new probe, want 2", n)
	}
}
