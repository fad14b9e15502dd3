package prober

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/expfmt"

	"github.com/mcpmon/mcpmon/pkg/msg"
)

func newRegistry() *prometheus.Registry { return prometheus.NewRegistry() }

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
	if got := testutil.ToFloat64(m.probes.WithLabelValues("ep1", ClassOK, "eu")); got != 1 {
		t.Errorf("probes_total{ok} = %v", got)
	}
	if got := testutil.ToFloat64(m.certExpiry.WithLabelValues("ep1")); got != float64(notAfter.Unix()) {
		t.Errorf("cert expiry gauge = %v", got)
	}
	if got := testutil.ToFloat64(m.up.WithLabelValues("ep1", "eu")); got != 1 {
		t.Errorf("probe_up = %v", got)
	}
	if got := testutil.ToFloat64(m.protocolInfo.WithLabelValues("ep1", Version20251125, TransportStreamableHTTP)); got != 1 {
		t.Errorf("protocol_info = %v", got)
	}
	text := gatherText(t, reg)
	for _, name := range []string{"mcpmon_probes_total", "mcpmon_probe_phase_seconds", "mcpmon_probe_cert_expiry_timestamp_seconds",
		"mcpmon_probe_protocol_info", "mcpmon_tool_catalog_changes_total", "mcpmon_probe_up"} {
		mustContain(t, text, name)
	}
	m.Forget("ep1")
	if strings.Contains(gatherText(t, reg), `endpoint="ep1"`) {
		t.Error("Forget left series behind")
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
	if n := testutil.CollectAndCount(m.protocolInfo); n != 2 {
		t.Fatalf("%d protocol_info series, want 2 (a's current and b's)", n)
	}
	if got := testutil.ToFloat64(m.protocolInfo.WithLabelValues("a", Version20251125, TransportStreamableHTTP)); got != 1 {
		t.Fatalf("a's current protocol_info = %v, want 1", got)
	}
	m.Forget("a")
	m.observe(res("a", "2025-06-18", TransportSSE))
	if n := testutil.CollectAndCount(m.protocolInfo); n != 2 {
		t.Fatalf("%d protocol_info series after forget and a new probe, want 2", n)
	}
}
