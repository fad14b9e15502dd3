package aggregator

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/mcpmon/mcpmon/pkg/msg"
)

// Pipeline-delay stages. The aggregator observes probe_to_verdict; the
// alerter observes verdict_to_alert on the same histogram.
const (
	StageProbeToVerdict = "probe_to_verdict"
	StageVerdictToAlert = "verdict_to_alert"
)

// Metrics are the aggregator's Prometheus metrics (names from the catalog).
type Metrics struct {
	VerdictState     *prometheus.GaugeVec   // endpoint, state
	Verdicts         *prometheus.CounterVec // state
	ResultsDuplicate prometheus.Counter
	ResultsLate      prometheus.Counter
	PipelineDelay    *prometheus.HistogramVec // stage
	probeToVerdict   prometheus.Observer
}

// NewMetrics registers the aggregator's metrics on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
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
		PipelineDelay: PipelineDelay(reg),
	}
	for _, s := range msg.States {
		m.Verdicts.WithLabelValues(string(s))
	}
	m.probeToVerdict = m.PipelineDelay.WithLabelValues(StageProbeToVerdict)
	return m
}

// PipelineDelay returns mcpmon_pipeline_delay_seconds registered on reg,
// reusing the collector when another component (the alerter, in the same
// process) registered it first: both observe one histogram with a stage
// label, as the catalog asks.
func PipelineDelay(reg prometheus.Registerer) *prometheus.HistogramVec {
	h := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: "mcpmon", Name: "pipeline_delay_seconds",
		Help:    "Delay from the first probe of a window to its verdict (probe_to_verdict) and from a verdict's emission to the alert it caused (verdict_to_alert).",
		Buckets: []float64{0.5, 1, 2, 5, 10, 20, 30, 60, 90, 120, 180, 300, 600},
	}, []string{"stage"})
	if reg == nil {
		return h
	}
	if err := reg.Register(h); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(*prometheus.HistogramVec); ok {
				return existing
			}
		}
		panic(err)
	}
	h.WithLabelValues(StageProbeToVerdict)
	h.WithLabelValues(StageVerdictToAlert)
	return h
}

// setState sets the endpoint's current-state gauge, pre-creating every state
// the first time an endpoint is seen so dashboards see zeros, not gaps.
func (m *Metrics) setState(endpointID string, state msg.State) {
	for _, s := range msg.States {
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
