package prober

import (
	"fmt"
	"maps"
	"runtime"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/mcpmon/mcpmon/pkg/msg"
)

// vecMetrics is the prober's metrics as client_golang's vectors keep them
// (the implementation before Metrics became its own Collector): the peer
// the collector's exposition must equal and its heap is measured against.
type vecMetrics struct {
	probes         *prometheus.CounterVec
	duration       *prometheus.HistogramVec
	phase          *prometheus.SummaryVec
	certExpiry     *prometheus.GaugeVec
	credExpiry     *prometheus.GaugeVec
	protocolInfo   *prometheus.GaugeVec
	catalogChanges *prometheus.CounterVec
	up             *prometheus.GaugeVec
	seen           map[string]bool
	info           map[string]protocolLabels
}

func newVecMetrics(reg prometheus.Registerer) *vecMetrics {
	f := promauto.With(reg)
	return &vecMetrics{
		probes: f.NewCounterVec(prometheus.CounterOpts{Name: "mcpmon_probes_total",
			Help: "Probes run, by endpoint, outcome class and the prober's region."}, []string{"endpoint", "class", "region"}),
		duration: f.NewHistogramVec(prometheus.HistogramOpts{Name: "mcpmon_probe_duration_seconds",
			Help: "Duration of the whole probe (every phase, the total phase of a result).", Buckets: durationBuckets}, []string{"endpoint"}),
		phase: f.NewSummaryVec(prometheus.SummaryOpts{Name: "mcpmon_probe_phase_seconds",
			Help: "Duration of each probe phase (sum and count: the mean per phase; quantiles of the whole probe are mcpmon_probe_duration_seconds)."}, []string{"endpoint", "phase"}),
		certExpiry: f.NewGaugeVec(prometheus.GaugeOpts{Name: "mcpmon_probe_cert_expiry_timestamp_seconds",
			Help: "Earliest expiry of the endpoint's TLS certificate chain, Unix seconds."}, []string{"endpoint"}),
		credExpiry: f.NewGaugeVec(prometheus.GaugeOpts{Name: "mcpmon_probe_credential_expiry_timestamp_seconds",
			Help: "Expiry (exp claim, read unverified) of the endpoint's configured JWT bearer token, Unix seconds."}, []string{"endpoint"}),
		protocolInfo: f.NewGaugeVec(prometheus.GaugeOpts{Name: "mcpmon_probe_protocol_info",
			Help: "Negotiated protocol version and transport (always 1)."}, []string{"endpoint", "version", "transport"}),
		catalogChanges: f.NewCounterVec(prometheus.CounterOpts{Name: "mcpmon_tool_catalog_changes_total",
			Help: "Tool catalog drift events, by severity (breaking|info)."}, []string{"endpoint", "severity"}),
		up: f.NewGaugeVec(prometheus.GaugeOpts{Name: "mcpmon_probe_up",
			Help: "1 if the region's last probe's status was up or degraded, else 0."}, []string{"endpoint", "region"}),
		seen: map[string]bool{}, info: map[string]protocolLabels{},
	}
}

func (m *vecMetrics) observe(res *msg.ProbeResult) {
	ep := res.EndpointID
	m.probes.WithLabelValues(ep, ClassOK, res.Region)
	if !m.seen[ep] {
		m.seen[ep] = true
		m.catalogChanges.WithLabelValues(ep, "breaking")
		m.catalogChanges.WithLabelValues(ep, "info")
		m.duration.WithLabelValues(ep)
		for _, p := range msg.Phases() {
			m.phase.WithLabelValues(ep, p)
		}
	}
	m.probes.WithLabelValues(ep, res.Class, res.Region).Inc()
	for p, s := range res.Phases {
		m.phase.WithLabelValues(ep, p).Observe(s)
	}
	if total, ok := res.Phases[msg.PhaseTotal]; ok {
		m.duration.WithLabelValues(ep).Observe(total)
	}
	if res.CertExpiry != nil {
		m.certExpiry.WithLabelValues(ep).Set(float64(res.CertExpiry.Unix()))
	}
	if res.ProtocolVersion != "" {
		now := protocolLabels{res.ProtocolVersion, res.Transport}
		if old, had := m.info[ep]; had && old != now {
			m.protocolInfo.DeleteLabelValues(ep, old.version, old.transport)
		}
		m.info[ep] = now
		m.protocolInfo.WithLabelValues(ep, now.version, now.transport).Set(1)
	}
	v := 0.0
	if res.Status != msg.StatusDown {
		v = 1
	}
	m.up.WithLabelValues(ep, res.Region).Set(v)
}

func (m *vecMetrics) credentialExpiry(ep string, exp time.Time) {
	if exp.IsZero() {
		m.credExpiry.DeleteLabelValues(ep)
		return
	}
	m.credExpiry.WithLabelValues(ep).Set(float64(exp.Unix()))
}

func (m *vecMetrics) forget(ep string) {
	l := prometheus.Labels{"endpoint": ep}
	for _, v := range []interface{ DeletePartialMatch(prometheus.Labels) int }{m.probes, m.duration, m.phase, m.certExpiry, m.credExpiry, m.protocolInfo, m.catalogChanges, m.up} {
		v.DeletePartialMatch(l)
	}
	delete(m.seen, ep)
	delete(m.info, ep)
}

// metricsScript drives both implementations through the same history:
// several endpoints and regions, failures, durations across the buckets
// (and past the last), a protocol change, catalog drift, a credential
// expiry set and removed, a forgotten endpoint probed again.
func metricsScript(observe func(*msg.ProbeResult), cred func(string, time.Time), catalog func(string, string), forget func(string)) {
	expiry := time.Date(2027, 3, 1, 0, 0, 0, 0, time.UTC)
	for i := range 40 {
		ep := fmt.Sprintf("ep%d", i%7)
		region := []string{"eu", "us"}[i%2]
		res := &msg.ProbeResult{EndpointID: ep, Region: region, Class: ClassOK, Status: msg.StatusUp,
			ProtocolVersion: "2025-06-18", Transport: TransportStreamableHTTP, Phases: map[string]float64{}}
		if i%5 == 0 {
			res.Class, res.Status = ClassTimeout, msg.StatusDown
		}
		if i > 20 && ep == "ep1" {
			res.ProtocolVersion, res.Transport = Version20251125, TransportSSE
		}
		if i%3 == 0 {
			res.CertExpiry = &expiry
		}
		for j, p := range msg.Phases() {
			if (i+j)%4 != 0 {
				res.Phases[p] = float64(i*j) * 0.0007
			}
		}
		res.Phases[msg.PhaseTotal] = []float64{0.0003, 0.004, 0.7, 31, 2.5}[i%5]
		switch i {
		case 3:
			cred(ep, expiry)
		case 17:
			cred("ep3", time.Time{})
		case 9:
			catalog(ep, "breaking")
		case 25:
			forget("ep4")
		}
		observe(res)
	}
	catalog("ep2", "info")
}

// The collector exports exactly what client_golang's vectors export for
// the same history: names, help, types, labels, values, buckets.
func TestMetricsMatchClientGolangVectors(t *testing.T) {
	regC, regV := newRegistry(), newRegistry()
	c, v := NewMetrics(regC), newVecMetrics(regV)
	metricsScript(c.observe, c.credentialExpiry, c.catalogChanged, c.Forget)
	metricsScript(v.observe, v.credentialExpiry, func(ep, sev string) { v.catalogChanges.WithLabelValues(ep, sev).Inc() }, v.forget)
	got, want := gatherText(t, regC), gatherText(t, regV)
	if got != want {
		t.Fatalf("collector exposition differs from client_golang's vectors:\n--- collector\n%s\n--- vectors\n%s", got, want)
	}
	if seriesCount(t, c, "mcpmon_probe_credential_expiry_timestamp_seconds") != 0 {
		// ep3's expiry was set at i=3 and removed at i=17.
		t.Fatal("a removed credential expiry is still exported")
	}
}

// BenchmarkMetricsHeap: the live heap of one endpoint's series, the
// collector beside client_golang's vectors (the peer), 10,000 endpoints
// each probed once as an https endpoint is.
func BenchmarkMetricsHeap(b *testing.B) {
	const n = 10000
	expiry := time.Date(2027, 3, 1, 0, 0, 0, 0, time.UTC)
	results := make([]msg.ProbeResult, n)
	for i := range results {
		results[i] = msg.ProbeResult{EndpointID: fmt.Sprintf("k%015d", i), Class: ClassOK, Status: msg.StatusUp, Region: "eu",
			ProtocolVersion: Version20251125, Transport: TransportStreamableHTTP, CertExpiry: &expiry, Phases: map[string]float64{}}
		for _, p := range msg.Phases() {
			results[i].Phases[p] = 0.004
		}
	}
	measure := func(build func() any) (bytes, objects float64) {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		keep := build()
		runtime.GC()
		runtime.ReadMemStats(&after)
		runtime.KeepAlive(keep)
		return float64(after.HeapAlloc-before.HeapAlloc) / n, float64(after.HeapObjects-before.HeapObjects) / n
	}
	var cb, co, vb, vo float64
	for b.Loop() {
		cb, co = measure(func() any {
			m := NewMetrics(nil)
			for i := range results {
				m.observe(&results[i])
			}
			return m
		})
		vb, vo = measure(func() any {
			m := newVecMetrics(nil)
			for i := range results {
				m.observe(&results[i])
			}
			return m
		})
	}
	b.ReportMetric(cb, "B/endpoint")
	b.ReportMetric(co, "objects/endpoint")
	b.ReportMetric(vb, "vec-B/endpoint")
	b.ReportMetric(vo, "vec-objects/endpoint")
	b.ReportMetric(cb/vb, "heap-ratio")
}

// TestSeriesEndpointsAreTheExposedOnes: the endpoints Metrics lists for the
// prune loop are exactly the "endpoint" label values of its exposition, so
// the loop asking it (instead of gathering the registry) misses none.
func TestSeriesEndpointsAreTheExposedOnes(t *testing.T) {
	reg := newRegistry()
	c := NewMetrics(reg)
	metricsScript(c.observe, c.credentialExpiry, c.catalogChanged, c.Forget)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	exposed := map[string]bool{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "endpoint" {
					exposed[l.GetValue()] = true
				}
			}
		}
	}
	listed := map[string]bool{}
	for _, id := range c.SeriesEndpoints() {
		listed[id] = true
	}
	if len(exposed) == 0 || !maps.Equal(listed, exposed) {
		t.Fatalf("SeriesEndpoints = %v, exposition has series of %v", listed, exposed)
	}
}
