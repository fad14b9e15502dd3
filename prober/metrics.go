package prober

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/mcpmon/mcpmon/pkg/msg"
)

// Metrics are the prober's Prometheus metrics (names from the metric
// catalog). Label values for an endpoint are pre-created the first time it is
// probed (class "ok", both catalog severities, every phase); the other classes
// appear when they happen, which keeps 100k endpoints from costing 20 idle
// series each. Forget drops a deleted endpoint's series.
//
// Series per endpoint are the exposition's size: one histogram (the probe's
// total time, 17 series) and a mean per phase (a summary without quantiles,
// 2 series per phase): 44 series and 3.5 KB of exposition for an https
// endpoint. A histogram per phase cost 186 series and 16.5 KB: 157 MB and
// seconds of CPU per scrape at 10,000 endpoints (mcpmon-load --fleet) (TestExpositionPerEndpoint
// bounds it).
type Metrics struct {
	probes         *prometheus.CounterVec
	duration       *prometheus.HistogramVec
	phase          *prometheus.SummaryVec
	certExpiry     *prometheus.GaugeVec
	credExpiry     *prometheus.GaugeVec
	protocolInfo   *prometheus.GaugeVec
	catalogChanges *prometheus.CounterVec
	up             *prometheus.GaugeVec

	mu   sync.Mutex
	seen map[string]bool
	// info is each endpoint's current protocol_info labels, so a change
	// deletes exactly the old series: DeletePartialMatch scans every
	// series of the vector, which at 10,000 endpoints was a third of the
	// pipeline's CPU.
	info map[string]protocolLabels
}

type protocolLabels struct{ version, transport string }

// NewMetrics registers the prober's metrics with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	f := promauto.With(reg)
	return &Metrics{
		probes: f.NewCounterVec(prometheus.CounterOpts{
			Namespace: "mcpmon", Name: "probes_total", Help: "Probes run, by endpoint, outcome class and the prober's region.",
		}, []string{"endpoint", "class", "region"}),
		duration: f.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "mcpmon", Name: "probe_duration_seconds", Help: "Duration of the whole probe (every phase, the total phase of a result).",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"endpoint"}),
		// No objectives: _sum and _count only, for the mean of each phase.
		phase: f.NewSummaryVec(prometheus.SummaryOpts{
			Namespace: "mcpmon", Name: "probe_phase_seconds", Help: "Duration of each probe phase (sum and count: the mean per phase; quantiles of the whole probe are mcpmon_probe_duration_seconds).",
		}, []string{"endpoint", "phase"}),
		certExpiry: f.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: "mcpmon", Name: "probe_cert_expiry_timestamp_seconds", Help: "Earliest expiry of the endpoint's TLS certificate chain, Unix seconds.",
		}, []string{"endpoint"}),
		credExpiry: f.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: "mcpmon", Name: "probe_credential_expiry_timestamp_seconds",
			Help: "Expiry (exp claim, read unverified) of the endpoint's configured JWT bearer token, Unix seconds.",
		}, []string{"endpoint"}),
		protocolInfo: f.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: "mcpmon", Name: "probe_protocol_info", Help: "Negotiated protocol version and transport (always 1).",
		}, []string{"endpoint", "version", "transport"}),
		catalogChanges: f.NewCounterVec(prometheus.CounterOpts{
			Namespace: "mcpmon", Name: "tool_catalog_changes_total", Help: "Tool catalog drift events, by severity (breaking|info).",
		}, []string{"endpoint", "severity"}),
		up: f.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: "mcpmon", Name: "probe_up", Help: "1 if the region's last probe's status was up or degraded, else 0.",
		}, []string{"endpoint", "region"}),
		seen: map[string]bool{},
	}
}

// precreate makes the endpoint's series exist at zero from its first probe
// in region (probes_total per region, so a region's first failure is a
// visible increase).
func (m *Metrics) precreate(ep, region string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.probes.WithLabelValues(ep, ClassOK, region)
	if m.seen[ep] {
		return
	}
	m.seen[ep] = true
	m.catalogChanges.WithLabelValues(ep, "breaking")
	m.catalogChanges.WithLabelValues(ep, "info")
	m.duration.WithLabelValues(ep)
	for _, p := range msg.Phases() {
		m.phase.WithLabelValues(ep, p)
	}
}

func (m *Metrics) observe(res *msg.ProbeResult) {
	if m == nil {
		return
	}
	ep := res.EndpointID
	m.precreate(ep, res.Region)
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
		m.mu.Lock()
		old, had := m.info[ep]
		if m.info == nil {
			m.info = map[string]protocolLabels{}
		}
		m.info[ep] = now
		if had && old != now {
			m.protocolInfo.DeleteLabelValues(ep, old.version, old.transport)
		}
		m.protocolInfo.WithLabelValues(ep, now.version, now.transport).Set(1)
		m.mu.Unlock()
	}
	v := 0.0
	if res.Status != msg.StatusDown {
		v = 1
	}
	m.up.WithLabelValues(ep, res.Region).Set(v)
}

// credentialExpiry sets the endpoint's credential expiry; a zero exp (no
// JWT credential configured any more) deletes the series.
func (m *Metrics) credentialExpiry(ep string, exp time.Time) {
	if m == nil {
		return
	}
	if exp.IsZero() {
		m.credExpiry.DeleteLabelValues(ep)
		return
	}
	m.credExpiry.WithLabelValues(ep).Set(float64(exp.Unix()))
}

func (m *Metrics) catalogChanged(ep, severity string) {
	if m == nil {
		return
	}
	m.catalogChanges.WithLabelValues(ep, severity).Inc()
}

// Forget deletes every series of a deleted endpoint.
func (m *Metrics) Forget(endpointID string) {
	if m == nil {
		return
	}
	l := prometheus.Labels{"endpoint": endpointID}
	m.probes.DeletePartialMatch(l)
	m.duration.DeletePartialMatch(l)
	m.phase.DeletePartialMatch(l)
	m.certExpiry.DeletePartialMatch(l)
	m.credExpiry.DeletePartialMatch(l)
	m.protocolInfo.DeletePartialMatch(l)
	m.catalogChanges.DeletePartialMatch(l)
	m.up.DeletePartialMatch(l)
	m.mu.Lock()
	delete(m.seen, endpointID)
	delete(m.info, endpointID)
	m.mu.Unlock()
}
