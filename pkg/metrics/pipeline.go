package metrics

import "github.com/prometheus/client_golang/prometheus"

// Stages of mcpmon_pipeline_delay_seconds.
const (
	StageProbeToVerdict = "probe_to_verdict" // first probe of a window → its verdict (aggregator)
	StageVerdictToAlert = "verdict_to_alert" // a verdict's emission → the alert it caused (alerter)
)

// PipelineDelay is mcpmon_pipeline_delay_seconds: one histogram with a
// stage label that the aggregator and the alerter of a process both observe.
// The process builds it once and hands it to each (registering it twice
// would panic, and neither component owns it).
type PipelineDelay struct {
	ProbeToVerdict prometheus.Observer
	VerdictToAlert prometheus.Observer
}

// NewPipelineDelay registers the histogram on reg (nil: unregistered, for
// tests and components used on their own) with both stages pre-created.
func NewPipelineDelay(reg prometheus.Registerer) *PipelineDelay {
	h := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: "mcpmon", Name: "pipeline_delay_seconds",
		Help:    "Delay from the first probe of a window to its verdict (probe_to_verdict) and from a verdict's emission to the alert it caused (verdict_to_alert).",
		Buckets: []float64{0.5, 1, 2, 5, 10, 20, 30, 60, 90, 120, 180, 300, 600},
	}, []string{"stage"})
	if reg != nil {
		reg.MustRegister(h)
	}
	return &PipelineDelay{
		ProbeToVerdict: h.WithLabelValues(StageProbeToVerdict),
		VerdictToAlert: h.WithLabelValues(StageVerdictToAlert),
	}
}
