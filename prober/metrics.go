package prober

import (
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mcpmon/mcpmon/pkg/msg"
)

// Metrics are the prober's Prometheus metrics (names from the metric
// catalog). An endpoint's series exist from its first probe (class "ok" in
// its region, both catalog severities, the probe's histogram and every
// phase, at zero); the other classes appear when they happen, which keeps
// 100k endpoints from costing 20 idle series each. Forget drops a deleted
// endpoint's series.
//
// Series per endpoint are the exposition's size: one histogram (the probe's
// total time, 17 series) and a mean per phase (a summary without quantiles,
// 2 series per phase): 44 series and 3.5 KB of exposition for an https
// endpoint. A histogram per phase cost 186 series and 16.5 KB: 157 MB and
// seconds of CPU per scrape at 10,000 endpoints (mcpmon-load --fleet)
// (TestExpositionPerEndpoint bounds it).
//
// They are also the prober's heap: client_golang's vectors keep an object
// graph per series (its labels, its own lock, the histogram's two halves),
// 9.7 KB and 209 heap objects per endpoint, which at 10,000 endpoints was
// most of the live heap the garbage collector walked. So Metrics is its own
// Collector: one flat record per endpoint (numbers in arrays, the labels
// once), turned into series only while a scrape collects them
// (BenchmarkMetricsHeap measures both).
type Metrics struct {
	mu  sync.Mutex
	eps map[string]*endpointSeries
}

// Descriptions of the families, in the label order of their series.
var (
	probesDesc = prometheus.NewDesc("mcpmon_probes_total",
		"Probes run, by endpoint, outcome class and the prober's region.", []string{"endpoint", "class", "region"}, nil)
	durationDesc = prometheus.NewDesc("mcpmon_probe_duration_seconds",
		"Duration of the whole probe (every phase, the total phase of a result).", []string{"endpoint"}, nil)
	phaseDesc = prometheus.NewDesc("mcpmon_probe_phase_seconds",
		"Duration of each probe phase (sum and count: the mean per phase; quantiles of the whole probe are mcpmon_probe_duration_seconds).", []string{"endpoint", "phase"}, nil)
	certExpiryDesc = prometheus.NewDesc("mcpmon_probe_cert_expiry_timestamp_seconds",
		"Earliest expiry of the endpoint's TLS certificate chain, Unix seconds.", []string{"endpoint"}, nil)
	credExpiryDesc = prometheus.NewDesc("mcpmon_probe_credential_expiry_timestamp_seconds",
		"Expiry (exp claim, read unverified) of the endpoint's configured JWT bearer token, Unix seconds.", []string{"endpoint"}, nil)
	protocolInfoDesc = prometheus.NewDesc("mcpmon_probe_protocol_info",
		"Negotiated protocol version and transport (always 1).", []string{"endpoint", "version", "transport"}, nil)
	catalogChangesDesc = prometheus.NewDesc("mcpmon_tool_catalog_changes_total",
		"Tool catalog drift events, by severity (breaking|info).", []string{"endpoint", "severity"}, nil)
	upDesc = prometheus.NewDesc("mcpmon_probe_up",
		"1 if the region's last probe's status was up or degraded, else 0.", []string{"endpoint", "region"}, nil)
)

// durationBuckets are mcpmon_probe_duration_seconds' upper bounds.
var durationBuckets = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}

// phases are the phases with a slot in endpointSeries.phase, in
// msg.Phases() order; a phase outside it (none today) goes to other.
var phases = msg.Phases()

// catalogSeverities are the severities created at zero with an endpoint.
var catalogSeverities = []string{"breaking", "info"}

// endpointSeries is one endpoint's state behind its series.
type endpointSeries struct {
	mu sync.Mutex
	// probed: the endpoint has been probed here, so its histogram, phases
	// and catalog counters exist (credentialExpiry alone does not).
	probed  bool
	probes  []classCount // per (class, region)
	up      []regionValue
	catalog []classCount // per severity (region unused)

	durCount   uint64
	durSum     float64
	durBuckets [nBuckets]uint64 // per bucket, not cumulative
	phase      [nPhases]sumCount
	other      map[string]*sumCount

	cert, cred       float64
	hasCert, hasCred bool
	proto            protocolLabels
}

// Lengths of durationBuckets and phases (NewMetrics checks them).
const (
	nBuckets = 15
	nPhases  = 10
)

type classCount struct {
	class, region string
	n             uint64
}

type regionValue struct {
	region string
	v      float64
}

type sumCount struct {
	sum float64
	n   uint64
}

type protocolLabels struct{ version, transport string }

// NewMetrics registers the prober's metrics with reg (none when nil).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	if len(durationBuckets) != nBuckets || len(phases) != nPhases {
		panic("prober: metrics arrays out of step with durationBuckets or msg.Phases")
	}
	m := &Metrics{eps: map[string]*endpointSeries{}}
	if reg != nil {
		reg.MustRegister(m)
	}
	return m
}

// series returns ep's record, creating it.
func (m *Metrics) series(ep string) *endpointSeries {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.eps[ep]
	if !ok {
		s = &endpointSeries{}
		m.eps[ep] = s
	}
	return s
}

// count adds n to the (class, region) entry of cs, creating it.
func count(cs []classCount, class, region string, n uint64) []classCount {
	for i := range cs {
		if cs[i].class == class && cs[i].region == region {
			cs[i].n += n
			return cs
		}
	}
	return append(cs, classCount{class: class, region: region, n: n})
}

func (m *Metrics) observe(res *msg.ProbeResult) {
	if m == nil {
		return
	}
	s := m.series(res.EndpointID)
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.probed {
		s.probed = true
		for _, sev := range catalogSeverities {
			s.catalog = count(s.catalog, sev, "", 0)
		}
	}
	// probes_total per region exists from the region's first probe, so its
	// first failure is a visible increase.
	s.probes = count(s.probes, ClassOK, res.Region, 0)
	s.probes = count(s.probes, res.Class, res.Region, 1)
	for p, v := range res.Phases {
		if i := slices.Index(phases, p); i >= 0 {
			s.phase[i].sum += v
			s.phase[i].n++
			continue
		}
		if s.other == nil {
			s.other = map[string]*sumCount{}
		}
		o := s.other[p]
		if o == nil {
			o = &sumCount{}
			s.other[p] = o
		}
		o.sum += v
		o.n++
	}
	if total, ok := res.Phases[msg.PhaseTotal]; ok {
		s.durCount++
		s.durSum += total
		for i, b := range durationBuckets {
			if total <= b {
				s.durBuckets[i]++
				break
			}
		}
	}
	if res.CertExpiry != nil {
		s.cert, s.hasCert = float64(res.CertExpiry.Unix()), true
	}
	if res.ProtocolVersion != "" {
		// One current series: a new version or transport replaces it.
		s.proto = protocolLabels{res.ProtocolVersion, res.Transport}
	}
	v := 0.0
	if res.Status != msg.StatusDown {
		v = 1
	}
	for i := range s.up {
		if s.up[i].region == res.Region {
			s.up[i].v = v
			return
		}
	}
	s.up = append(s.up, regionValue{region: res.Region, v: v})
}

// credentialExpiry sets the endpoint's credential expiry; a zero exp (no
// JWT credential configured any more) deletes the series.
func (m *Metrics) credentialExpiry(ep string, exp time.Time) {
	if m == nil {
		return
	}
	if exp.IsZero() {
		m.mu.Lock()
		s := m.eps[ep]
		m.mu.Unlock()
		if s != nil {
			s.mu.Lock()
			s.hasCred = false
			s.mu.Unlock()
		}
		return
	}
	s := m.series(ep)
	s.mu.Lock()
	s.cred, s.hasCred = float64(exp.Unix()), true
	s.mu.Unlock()
}

func (m *Metrics) catalogChanged(ep, severity string) {
	if m == nil {
		return
	}
	s := m.series(ep)
	s.mu.Lock()
	s.catalog = count(s.catalog, severity, "", 1)
	s.mu.Unlock()
}

// Forget deletes every series of a deleted endpoint.
func (m *Metrics) Forget(endpointID string) {
	if m == nil {
		return
	}
	m.mu.Lock()
	delete(m.eps, endpointID)
	m.mu.Unlock()
}

// SeriesEndpoints returns the endpoints that have series now (the prune
// loop asks, to forget those of deleted endpoints).
func (m *Metrics) SeriesEndpoints() []string {
	if m == nil {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Collect(maps.Keys(m.eps))
}

// Describe implements prometheus.Collector.
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{probesDesc, durationDesc, phaseDesc, certExpiryDesc, credExpiryDesc, protocolInfoDesc, catalogChangesDesc, upDesc} {
		ch <- d
	}
}

// Collect implements prometheus.Collector: each endpoint's series are
// built under that endpoint's lock only, so a scrape holds up no probe for
// longer than one endpoint's series take to build.
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	m.mu.Lock()
	ids := make([]string, 0, len(m.eps))
	all := make([]*endpointSeries, 0, len(m.eps))
	for id, s := range m.eps {
		ids = append(ids, id)
		all = append(all, s)
	}
	m.mu.Unlock()
	for i, s := range all {
		s.mu.Lock()
		s.collect(ids[i], ch)
		s.mu.Unlock()
	}
}

// collect sends the endpoint's series. Called with s.mu held.
func (s *endpointSeries) collect(ep string, ch chan<- prometheus.Metric) {
	for _, c := range s.probes {
		ch <- prometheus.MustNewConstMetric(probesDesc, prometheus.CounterValue, float64(c.n), ep, c.class, c.region)
	}
	for _, u := range s.up {
		ch <- prometheus.MustNewConstMetric(upDesc, prometheus.GaugeValue, u.v, ep, u.region)
	}
	if s.hasCert {
		ch <- prometheus.MustNewConstMetric(certExpiryDesc, prometheus.GaugeValue, s.cert, ep)
	}
	if s.hasCred {
		ch <- prometheus.MustNewConstMetric(credExpiryDesc, prometheus.GaugeValue, s.cred, ep)
	}
	if s.proto.version != "" {
		ch <- prometheus.MustNewConstMetric(protocolInfoDesc, prometheus.GaugeValue, 1, ep, s.proto.version, s.proto.transport)
	}
	for _, c := range s.catalog {
		ch <- prometheus.MustNewConstMetric(catalogChangesDesc, prometheus.CounterValue, float64(c.n), ep, c.class)
	}
	if !s.probed {
		return
	}
	buckets := make(map[float64]uint64, len(durationBuckets))
	var cum uint64
	for i, b := range durationBuckets {
		cum += s.durBuckets[i]
		buckets[b] = cum
	}
	ch <- prometheus.MustNewConstHistogram(durationDesc, s.durCount, s.durSum, buckets, ep)
	for i, p := range phases {
		ch <- prometheus.MustNewConstSummary(phaseDesc, s.phase[i].n, s.phase[i].sum, nil, ep, p)
	}
	for p, o := range s.other {
		ch <- prometheus.MustNewConstSummary(phaseDesc, o.n, o.sum, nil, ep, p)
	}
}
