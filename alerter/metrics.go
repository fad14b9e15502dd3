package alerter

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/mcpmon/mcpmon/alerter/notify"
	"github.com/mcpmon/mcpmon/pkg/alert"
	"github.com/mcpmon/mcpmon/pkg/metrics"
	"github.com/mcpmon/mcpmon/pkg/store"
)

// Metrics are the alerter's Prometheus metrics (names from the catalog).
type Metrics struct {
	IncidentsOpen  prometheus.Gauge
	Incidents      *prometheus.CounterVec // event: opened|resolved|acknowledged
	Alerts         *prometheus.CounterVec // sink, kind, outcome
	LedgerClaims   *prometheus.CounterVec // result: acquired|done|held
	VerdictToAlert prometheus.Observer    // on the process's pipeline-delay histogram
	// UnmarkedSeconds is the duplicate window as it happens: from the
	// sink accepting a notification to its ledger mark being written. A
	// process killed inside it sends the notification again.
	UnmarkedSeconds prometheus.Histogram
	// EventNotifications counts change-event notifications per sink,
	// event kind and outcome (events.go).
	EventNotifications *prometheus.CounterVec
	// SubscriberNotices counts status page subscriber notices by outcome
	// (subscribers.go); never by subscriber or page.
	SubscriberNotices *prometheus.CounterVec
	// GivenUp counts the notifications (incident or change event) given
	// up for a sink: failed permanently, or failing past the give-up age.
	GivenUp *prometheus.CounterVec // sink
	// AgentOnline is 1 per agent that polled within the offline timeout,
	// 0 per agent that did not (agents.go), by the agents' store records.
	AgentOnline *prometheus.GaugeVec // agent, location

	mu        sync.Mutex
	seenSinks map[string]bool
}

// NewMetrics registers the alerter's metrics on reg (nil: unregistered). The
// process's pipeline-delay histogram, shared with the aggregator, is passed
// in (nil: an unregistered one).
func NewMetrics(reg prometheus.Registerer, delay *metrics.PipelineDelay) *Metrics {
	if delay == nil {
		delay = metrics.NewPipelineDelay(nil)
	}
	f := promauto.With(reg)
	m := &Metrics{
		IncidentsOpen: f.NewGauge(prometheus.GaugeOpts{
			Namespace: "mcpmon", Name: "incidents_open",
			Help: "Incidents open or acknowledged, as of the alerter's last sweep.",
		}),
		Incidents: f.NewCounterVec(prometheus.CounterOpts{
			Namespace: "mcpmon", Name: "incidents_total",
			Help: "Incident lifecycle events recorded by this alerter.",
		}, []string{"event"}),
		Alerts: f.NewCounterVec(prometheus.CounterOpts{
			Namespace: "mcpmon", Name: "alerts_total",
			Help: "Notifications per sink and kind by outcome: sent, failed (past the retry budget; retried by the next drain), abandoned (failed permanently, e.g. refused by the receiver or the SSRF guard; not retried), suppressed (maintenance or no longer relevant), duplicate (already in the ledger).",
		}, []string{"sink", "kind", "outcome"}),
		LedgerClaims: f.NewCounterVec(prometheus.CounterOpts{
			Namespace: "mcpmon", Name: "ledger_claims_total",
			Help: "Ledger claims by result: acquired, done (already sent), held (another alerter holds it).",
		}, []string{"result"}),
		VerdictToAlert: delay.VerdictToAlert,
		UnmarkedSeconds: f.NewHistogram(prometheus.HistogramOpts{
			Namespace: "mcpmon", Name: "alert_unmarked_seconds",
			Help:    "Time from a sink accepting a notification to its ledger mark: the window in which a killed alerter sends it again.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
		}),
		EventNotifications: f.NewCounterVec(prometheus.CounterOpts{
			Namespace: "mcpmon", Name: "event_notifications_total",
			Help: "Change-event notifications per sink and event kind by outcome: sent, failed (retried by the next sweep), abandoned (failed permanently; not retried), duplicate (already in the ledger).",
		}, []string{"sink", "kind", "outcome"}),
		SubscriberNotices: f.NewCounterVec(prometheus.CounterOpts{
			Namespace: "mcpmon", Name: "subscriber_notices_total",
			Help: "Status page subscriber notices (an incident opened, updated or resolved) by outcome: sent, failed (retried by the next sweep), abandoned (failed permanently; not retried), duplicate (already in the ledger).",
		}, []string{"outcome"}),
		AgentOnline: f.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: "mcpmon", Name: "agent_online",
			Help: "1 when the agent polled the API within --agent-offline-after, else 0 (from the agents' records in the store).",
		}, []string{"agent", "location"}),
		GivenUp: f.NewCounterVec(prometheus.CounterOpts{
			Namespace: "mcpmon", Name: "deliveries_given_up_total",
			Help: "Notifications (incident or change event) given up for a sink, never to be retried: failed permanently, or still failing after --sink-give-up-after.",
		}, []string{"sink"}),
		seenSinks: map[string]bool{},
	}
	for _, e := range []string{"opened", "resolved", "acknowledged"} {
		m.Incidents.WithLabelValues(e)
	}
	for _, o := range []string{notify.OutcomeSent, notify.OutcomeFailed, notify.OutcomeAbandoned, notify.OutcomeDuplicate} {
		m.SubscriberNotices.WithLabelValues(o)
	}
	for _, s := range []store.ClaimState{store.ClaimAcquired, store.ClaimDone, store.ClaimHeld} {
		m.LedgerClaims.WithLabelValues(s.String())
	}
	return m
}

// sink pre-creates every kind/outcome series of a sink the first time it is
// seen, so a dashboard shows zero failures rather than no data.
func (m *Metrics) sink(name string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.seenSinks[name] {
		return
	}
	m.seenSinks[name] = true
	m.GivenUp.WithLabelValues(name)
	for _, k := range alert.Kinds() {
		for _, o := range []string{notify.OutcomeSent, notify.OutcomeFailed, notify.OutcomeAbandoned, notify.OutcomeSuppressed, notify.OutcomeDuplicate} {
			m.Alerts.WithLabelValues(name, string(k), o)
		}
	}
}

func (m *Metrics) alert(sink string, kind alert.Kind, outcome string) {
	m.sink(sink)
	m.Alerts.WithLabelValues(sink, string(kind), outcome).Inc()
}

func (m *Metrics) givenUp(sink string) {
	m.sink(sink)
	m.GivenUp.WithLabelValues(sink).Inc()
}
