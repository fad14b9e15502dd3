package queue

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// Metrics counts queue traffic for every stage queue; label `queue` is the
// configured queue name (commands|results|verdicts). Build it once per
// registry with NewMetrics and hand the same value to every Publisher and
// Consume call (ConsumerMetrics and PublisherMetrics are the same type).
type Metrics struct {
	sends      *prometheus.CounterVec
	duplicates *prometheus.CounterVec
	receives   *prometheus.CounterVec
	deletes    *prometheus.CounterVec
	handoffs   *prometheus.CounterVec
	messages   *prometheus.GaugeVec
	oldestAge  *prometheus.GaugeVec
}

// ConsumerMetrics is what ConsumerOptions takes: the shared queue Metrics.
type ConsumerMetrics = Metrics

// PublisherMetrics is what PublisherOptions takes: the shared queue Metrics.
type PublisherMetrics = Metrics

// Message-count kinds for mcpmon_queue_messages.
const (
	KindVisible  = "visible"
	KindInflight = "inflight"
	KindDLQ      = "dlq"
)

// NewMetrics registers the queue metrics on reg, with the stage queues'
// label values pre-created.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	f := promauto.With(reg)
	m := &Metrics{
		sends: f.NewCounterVec(prometheus.CounterOpts{
			Namespace: "mcpmon", Name: "queue_sends_total",
			Help: "Messages accepted by the queue (duplicates included).",
		}, []string{"queue"}),
		duplicates: f.NewCounterVec(prometheus.CounterOpts{
			Namespace: "mcpmon", Name: "queue_duplicates_total",
			Help: "Sends the queue recognised as duplicates within the dedup window (embedded queue only; SQS does not say).",
		}, []string{"queue"}),
		receives: f.NewCounterVec(prometheus.CounterOpts{
			Namespace: "mcpmon", Name: "queue_receives_total",
			Help: "Messages received from the queue, redeliveries included.",
		}, []string{"queue"}),
		deletes: f.NewCounterVec(prometheus.CounterOpts{
			Namespace: "mcpmon", Name: "queue_deletes_total",
			Help: "Messages acknowledged (deleted) after handling.",
		}, []string{"queue"}),
		handoffs: f.NewCounterVec(prometheus.CounterOpts{
			Namespace: "mcpmon", Name: "queue_handoffs_total",
			Help: "Messages handed straight to the stage's handler in the same process instead of sent (results on the embedded queue in a process that also aggregates).",
		}, []string{"queue"}),
		messages: f.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: "mcpmon", Name: "queue_messages",
			Help: "Approximate messages in the queue by kind (visible, inflight, dlq).",
		}, []string{"queue", "kind"}),
		oldestAge: f.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: "mcpmon", Name: "queue_oldest_message_age_seconds",
			Help: "Age of the oldest message in the queue.",
		}, []string{"queue"}),
	}
	for _, c := range StageConfigs() {
		m.init(c.Name)
	}
	return m
}

func (m *Metrics) init(q string) {
	m.sends.WithLabelValues(q)
	m.duplicates.WithLabelValues(q)
	m.receives.WithLabelValues(q)
	m.deletes.WithLabelValues(q)
	m.handoffs.WithLabelValues(q)
	for _, k := range []string{KindVisible, KindInflight, KindDLQ} {
		m.messages.WithLabelValues(q, k)
	}
	m.oldestAge.WithLabelValues(q)
}

func (m *Metrics) sent(q string, n, dup int) {
	if m == nil {
		return
	}
	m.sends.WithLabelValues(q).Add(float64(n))
	m.duplicates.WithLabelValues(q).Add(float64(dup))
}

func (m *Metrics) received(q string, n int) {
	if m != nil && n > 0 {
		m.receives.WithLabelValues(q).Add(float64(n))
	}
}

func (m *Metrics) deleted(q string, n int) {
	if m != nil && n > 0 {
		m.deletes.WithLabelValues(q).Add(float64(n))
	}
}

func (m *Metrics) handedOff(q string) {
	if m != nil {
		m.handoffs.WithLabelValues(q).Inc()
	}
}

// DepthSource is one stage queue and its dead-letter queue for WatchDepth;
// DLQ may be nil.
type DepthSource struct {
	Name  string
	Queue StatsReader
	DLQ   StatsReader
}

// UpdateDepth reads src's stats once into mcpmon_queue_messages and
// mcpmon_queue_oldest_message_age_seconds.
func (m *Metrics) UpdateDepth(ctx context.Context, src DepthSource) error {
	s, err := src.Queue.Stats(ctx)
	if err != nil {
		return err
	}
	m.messages.WithLabelValues(src.Name, KindVisible).Set(float64(s.Visible))
	m.messages.WithLabelValues(src.Name, KindInflight).Set(float64(s.InFlight))
	m.oldestAge.WithLabelValues(src.Name).Set(s.OldestMessageAge.Seconds())
	if src.DLQ != nil {
		d, err := src.DLQ.Stats(ctx)
		if err != nil {
			return err
		}
		m.messages.WithLabelValues(src.Name, KindDLQ).Set(float64(d.Visible + d.InFlight))
	}
	return nil
}

// WatchDepth refreshes the depth gauges of srcs every interval until ctx is
// done. On SQS each refresh costs one GetQueueAttributes call per queue, so
// keep the interval in tens of seconds there.
func (m *Metrics) WatchDepth(ctx context.Context, interval time.Duration, logger *slog.Logger, srcs ...DepthSource) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		for _, s := range srcs {
			if err := m.UpdateDepth(ctx, s); err != nil && ctx.Err() == nil {
				logger.Warn("queue depth unavailable", "queue", s.Name, "err", err)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
