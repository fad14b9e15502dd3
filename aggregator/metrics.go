package aggregator

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/mcpmon/mcpmon/pkg/metrics"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/msg"
)

// Metrics are the aggregator's Prometheus metrics (names from the catalog).
type Metrics struct {
	VerdictState     *prometheus.GaugeVec   // endpoint, state
	Verdicts         *prometheus.CounterVec // state
	ResultsDuplicate prometheus.Counter
	ResultsLate      prometheus.Counter
	// Events counts change events recorded, by kind: each change once,
	// however many results or replicas reported it.
	Events *prometheus.CounterVec
	// Members is the number of live aggregator replicas in this
	// replica's view (itself included); 0 without a view, when it decides
	// every window.
	Members prometheus.Gauge
	// Takeovers counts verdicts (no_data included) this replica applied
	// for an endpoint another replica owns: its owner missed the window's
	// decision time by the takeover margin (killed, stuck, or a backlog).
	Takeovers      prometheus.Counter
	probeToVerdict prometheus.Observer
}

// NewMetrics registers the aggregator's metrics on reg. The process's
// pipeline-delay histogram, shared with the alerter, is passed in (nil:
// an unregistered one).
func NewMetrics(reg prometheus.Registerer, delay *metrics.PipelineDelay) *Metrics {
	if delay == nil {
		delay = metrics.NewPipelineDelay(nil)
	}
	f := promauto.With(reg)
	m := &Metrics{
		VerdictState: f.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: "mcpmon", Name: "verdict_state",
			Help: "Current verdict state per endpoint: 1 for the state of the latest verdict, 0 for the others.",
		}, []string{"endpoint", "state"}),
		Verdicts: f.NewCounterVec(prometheus.CounterOpts{
			Namespace: "mcpmon", Name: "verdicts_total",
			Help: "Verdicts published, by state.",
		}, []string{"state"}),
		ResultsDuplicate: f.NewCounter(prometheus.CounterOpts{
			Namespace: "mcpmon", Name: "results_duplicate_total",
			Help: "Probe results received again (redelivery or re-send) and ignored.",
		}),
		ResultsLate: f.NewCounter(prometheus.CounterOpts{
			Namespace: "mcpmon", Name: "results_late_total",
			Help: "Probe results that arrived after their window was decided and were dropped.",
		}),
		Events: f.NewCounterVec(prometheus.CounterOpts{
			Namespace: "mcpmon", Name: "events_total",
			Help: "Change events recorded (catalog, version, certificate and credential expiry), by kind; each change once.",
		}, []string{"kind"}),
		Members: f.NewGauge(prometheus.GaugeOpts{
			Namespace: "mcpmon", Name: "aggregator_members",
			Help: "Live aggregator replicas in this replica's view, itself included (heartbeats in the store); 0 without a view, when it decides every window.",
		}),
		Takeovers: f.NewCounter(prometheus.CounterOpts{
			Namespace: "mcpmon", Name: "aggregator_takeovers_total",
			Help: "Verdicts applied for an endpoint another aggregator replica owns, after its decision time plus the takeover margin had passed.",
		}),
		probeToVerdict: delay.ProbeToVerdict,
	}
	for _, k := range model.EventKinds() {
		m.Events.WithLabelValues(k)
	}
	for _, s := range msg.States() {
		m.Verdicts.WithLabelValues(string(s))
	}
	return m
}

// setState sets the endpoint's current-state gauge, pre-creating every state
// the first time an endpoint is seen so dashboards see zeros, not gaps.
func (m *Metrics) setState(endpointID string, state msg.State) {
	for _, s := range msg.States() {
		v := 0.0
		if s == state {
			v = 1
		}
		m.VerdictState.WithLabelValues(endpointID, string(s)).Set(v)
	}
}

// Forget deletes every series of a deleted endpoint (its
// mcpmon_verdict_state series), so per-endpoint cardinality follows the
// registry instead of growing with endpoint churn. A verdict for the
// endpoint decided after Forget creates them again; the next prune removes
// them.
func (m *Metrics) Forget(endpointID string) {
	if m == nil {
		return
	}
	m.VerdictState.DeletePartialMatch(prometheus.Labels{"endpoint": endpointID})
}
