package scheduler

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// Metrics are the scheduler's Prometheus metrics.
type Metrics struct {
	endpoints prometheus.Gauge
	commands  prometheus.Counter
	lag       prometheus.Histogram
}

// NewMetrics registers the scheduler's metrics with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	f := promauto.With(reg)
	return &Metrics{
		endpoints: f.NewGauge(prometheus.GaugeOpts{
			Namespace: "mcpmon", Subsystem: "scheduler", Name: "endpoints",
			Help: "Endpoints currently scheduled (registered and not paused).",
		}),
		commands: f.NewCounter(prometheus.CounterOpts{
			Namespace: "mcpmon", Subsystem: "scheduler", Name: "commands_total",
			Help: "Probe commands published to the commands queue.",
		}),
		lag: f.NewHistogram(prometheus.HistogramOpts{
			Namespace: "mcpmon", Subsystem: "scheduler", Name: "lag_seconds",
			Help:    "Delay from a command's scheduled slot to its publish being acknowledged.",
			Buckets: []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60},
		}),
	}
}
