package notify

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mcpmon/mcpmon/pkg/clock"
	"github.com/mcpmon/mcpmon/pkg/store"
)

// Metrics are the pipeline's series. They are registered by the component
// that owns their names (the alerter's NewMetrics) and passed in.
type Metrics struct {
	LedgerClaims    *prometheus.CounterVec // result: acquired|done|held
	UnmarkedSeconds prometheus.Observer    // the duplicate window as it happens
}

func (m Metrics) claim(s store.ClaimState) { m.LedgerClaims.WithLabelValues(s.String()).Inc() }

// Config configures a Pipeline. Ledger, Owner, Lease and the retry bounds
// are required; the rest have defaults.
type Config struct {
	Ledger Ledger
	// Owner identifies this replica in ledger claims; Lease is how long a
	// claim holds off other replicas.
	Owner string
	Lease time.Duration
	// One dispatch: at most Attempts sink calls within Budget, backing off
	// from BackoffInitial to BackoffMax, each call bounded by SendTimeout.
	Attempts                   int
	Budget                     time.Duration
	BackoffInitial, BackoffMax time.Duration
	SendTimeout                time.Duration
	// Redelivery decides, across dispatches, when a failing notification
	// is given up for its sink.
	Redelivery Redelivery
	// Jitter places each redelivery wait inside its range (nil:
	// math/rand).
	Jitter func() float64
	Clock  clock.Clock                                      // nil: the wall clock
	Sleep  func(ctx context.Context, d time.Duration) error // nil: SleepCtx
	// Records, when set, adds the record stage: each dispatch is written
	// to its incident's delivery records (Notification.IncidentID).
	Records *Records
	// Redact renders a sink error for a record without its secrets.
	Redact  func(error) string
	Metrics Metrics
	Hook    Hook // nil: none
}

// Pipeline delivers notifications, one Delivery per sink.
type Pipeline struct{ stage Stage }

// New builds the pipeline, in the order a delivery goes through it:
//
//	record → ledger (claim → send → mark) → retry → sink
//
// and Deliver fans it out over the sinks. Each pipeline remembers the
// notifications it sent but could not mark done across a store outage.
func New(c Config) *Pipeline {
	if c.Clock == nil {
		c.Clock = clock.Real{}
	}
	if c.Sleep == nil {
		c.Sleep = SleepCtx
	}
	if c.Jitter == nil {
		c.Jitter = rand.Float64
	}
	if c.Hook == nil {
		c.Hook = func(string) error { return nil }
	}
	if c.Metrics.LedgerClaims == nil {
		c.Metrics.LedgerClaims = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ledger_claims_total"}, []string{"result"})
	}
	if c.Metrics.UnmarkedSeconds == nil {
		c.Metrics.UnmarkedSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "alert_unmarked_seconds"})
	}
	var s Stage = ledgerStage{
		ledger: c.Ledger, owner: c.Owner, lease: c.Lease, m: c.Metrics, clk: c.Clock, hook: c.Hook,
		redeliver: c.Redelivery, jitter: c.Jitter, unmarked: newKeySet(),
		next: retryStage{
			attempts: c.Attempts, budget: c.Budget, initial: c.BackoffInitial, limit: c.BackoffMax,
			sendTimeout: c.SendTimeout, clk: c.Clock, sleep: c.Sleep,
		},
	}
	if c.Records != nil {
		r := *c.Records
		if r.Log == nil {
			r.Log = slog.New(slog.DiscardHandler)
		}
		redact := c.Redact
		if redact == nil {
			redact = func(err error) string { return err.Error() }
		}
		s = recordStage{Records: r, redact: redact, next: s}
	}
	return &Pipeline{stage: s}
}

// Deliver sends every delivery's notification to its sink at once (Fanout)
// and returns when each is settled: Outcome, Err, Retry and GaveUp set.
func (p *Pipeline) Deliver(ctx context.Context, ds ...*Delivery) { Fanout(ctx, p.stage, ds) }
