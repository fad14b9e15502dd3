package api

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/mcpmon/mcpmon/pkg/model"
)

// AgentMetrics are the per-agent series of the polls and results one API
// replica served. An agent polls one replica at a time, so a deployment's
// value is the max (last seen, skew) or sum (results) over replicas.
// Labels are the agent key's ID and location: the series are bounded by
// the live agent keys (--max-agents-per-tenant per tenant); a revoked
// agent's series are dropped by the replica that revoked it, and by the
// others when they restart.
type AgentMetrics struct {
	lastSeen *prometheus.GaugeVec   // agent, location
	skew     *prometheus.GaugeVec   // agent, location
	results  *prometheus.CounterVec // agent, location
}

func newAgentMetrics(reg prometheus.Registerer) *AgentMetrics {
	f := promauto.With(reg)
	labels := []string{"agent", "location"}
	return &AgentMetrics{
		lastSeen: f.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: "mcpmon", Name: "agent_last_seen_timestamp_seconds",
			Help: "Unix time of the agent's last poll (GET /v1/agent/commands) on this API replica.",
		}, labels),
		skew: f.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: "mcpmon", Name: "agent_clock_skew_seconds",
			Help: "The agent's clock minus this replica's at its last poll that sent its time.",
		}, labels),
		results: f.NewCounterVec(prometheus.CounterOpts{
			Namespace: "mcpmon", Name: "agent_results_total",
			Help: "Probe results the agent posted to this API replica and it published.",
		}, labels),
	}
}

func (m *AgentMetrics) polled(id string, s model.AgentSeen) {
	if m == nil {
		return
	}
	m.lastSeen.WithLabelValues(id, s.Location).Set(float64(s.LastSeen.UnixMilli()) / 1e3)
	if s.ClockSkew != nil {
		m.skew.WithLabelValues(id, s.Location).Set(s.ClockSkew.Seconds())
	}
	m.results.WithLabelValues(id, s.Location) // present from the first poll: rate() sees the first result
}

func (m *AgentMetrics) posted(id, location string, n int) {
	if m == nil {
		return
	}
	m.results.WithLabelValues(id, location).Add(float64(n))
}

func (m *AgentMetrics) forget(id, location string) {
	if m == nil {
		return
	}
	for _, v := range []*prometheus.MetricVec{m.lastSeen.MetricVec, m.skew.MetricVec, m.results.MetricVec} {
		v.DeleteLabelValues(id, location)
	}
}
