package aggregator

import (
	"maps"
	"slices"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/mcpmon/mcpmon/pkg/metrics"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/msg"
)

// Metrics are the aggregator's Prometheus metrics (names from the catalog).
type Metrics struct {
	VerdictState     *VerdictStates         // endpoint, state
	Verdicts         *prometheus.CounterVec // state
	ResultsDuplicate prometheus.Counter
	ResultsLate      prometheus.Counter
	// Events counts change events recorded, by kind: each change once,
	// however many results or replicas reported it.
	Events *prometheus.CounterVec
	// EventsFlapping counts flapping markers started, by kind: an
	// endpoint past its event budget (store.DecideEventAppend), whose
	// further changes of that kind are counted on the marker, not recorded.
	EventsFlapping *prometheus.CounterVec
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
		VerdictState: &VerdictStates{states: map[string]msg.State{}},
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
		EventsFlapping: f.NewCounterVec(prometheus.CounterOpts{
			Namespace: "mcpmon", Name: "events_flapping_total",
			Help: "Flapping markers started, by kind: an endpoint past its change-event budget (20 an hour, 100 a day), whose further changes of the kind are counted on the marker instead of recorded and notified one by one.",
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
	if reg != nil {
		reg.MustRegister(m.VerdictState)
	}
	for _, k := range model.EventKinds() {
		m.Events.WithLabelValues(k)
		m.EventsFlapping.WithLabelValues(k)
	}
	for _, s := range msg.States() {
		m.Verdicts.WithLabelValues(string(s))
	}
	return m
}

// setState sets the endpoint's current-state gauge; every state is
// exported from the endpoint's first verdict, so dashboards see zeros, not
// gaps.
func (m *Metrics) setState(endpointID string, state msg.State) {
	m.VerdictState.Set(endpointID, state)
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
	m.VerdictState.forget(endpointID)
}

// verdictStateDesc describes mcpmon_verdict_state.
var verdictStateDesc = prometheus.NewDesc("mcpmon_verdict_state",
	"Current verdict state per endpoint: 1 for the state of the latest verdict, 0 for the others.", []string{"endpoint", "state"}, nil)

// VerdictStates is mcpmon_verdict_state: each endpoint's latest state,
// one map entry per endpoint, its series (one per state) built only while
// a scrape collects them. A gauge vector kept five series objects per
// endpoint on the heap the garbage collector walks (the prober's Metrics
// says why that matters at 10,000 endpoints).
type VerdictStates struct {
	mu     sync.Mutex
	states map[string]msg.State
}

// Set records the endpoint's latest state.
func (v *VerdictStates) Set(endpointID string, state msg.State) {
	v.mu.Lock()
	v.states[endpointID] = state
	v.mu.Unlock()
}

// Get returns the endpoint's latest state, if it has one.
func (v *VerdictStates) Get(endpointID string) (msg.State, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	s, ok := v.states[endpointID]
	return s, ok
}

// SeriesEndpoints returns the endpoints that have series now (the prune
// loop asks, to forget those of deleted endpoints).
func (m *Metrics) SeriesEndpoints() []string {
	if m == nil {
		return nil
	}
	v := m.VerdictState
	v.mu.Lock()
	defer v.mu.Unlock()
	return slices.Collect(maps.Keys(v.states))
}

func (v *VerdictStates) forget(endpointID string) {
	v.mu.Lock()
	delete(v.states, endpointID)
	v.mu.Unlock()
}

// Describe implements prometheus.Collector.
func (v *VerdictStates) Describe(ch chan<- *prometheus.Desc) { ch <- verdictStateDesc }

// Collect implements prometheus.Collector.
func (v *VerdictStates) Collect(ch chan<- prometheus.Metric) {
	v.mu.Lock()
	snap := make(map[string]msg.State, len(v.states))
	for id, s := range v.states {
		snap[id] = s
	}
	v.mu.Unlock()
	for id, cur := range snap {
		for _, s := range msg.States() {
			val := 0.0
			if s == cur {
				val = 1
			}
			ch <- prometheus.MustNewConstMetric(verdictStateDesc, prometheus.GaugeValue, val, id, string(s))
		}
	}
}
