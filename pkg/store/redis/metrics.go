// What the ledger's waits for replicas (Options.LedgerReplicas) found,
// exported for Prometheus.

package redis

import "github.com/prometheus/client_golang/prometheus"

var (
	ledgerWaitsDesc = prometheus.NewDesc("mcpmon_store_ledger_waits_total",
		"Alert-ledger writes that waited for replicas (--redis-ledger-replicas).", nil, nil)
	ledgerShortDesc = prometheus.NewDesc("mcpmon_store_ledger_unreplicated_total",
		"Alert-ledger writes fewer replicas than --redis-ledger-replicas acknowledged in time: a failover of their primary could lose them and send an alert twice.", nil, nil)
)

// LedgerCollector reads a store's ledger wait counters at scrape time.
type LedgerCollector struct{ s *Store }

// NewLedgerCollector returns the collector of s's ledger waits.
func NewLedgerCollector(s *Store) LedgerCollector { return LedgerCollector{s} }

// Describe implements prometheus.Collector.
func (c LedgerCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- ledgerWaitsDesc
	ch <- ledgerShortDesc
}

// Collect implements prometheus.Collector.
func (c LedgerCollector) Collect(ch chan<- prometheus.Metric) {
	waits, short := c.s.LedgerWaits()
	ch <- prometheus.MustNewConstMetric(ledgerWaitsDesc, prometheus.CounterValue, float64(waits))
	ch <- prometheus.MustNewConstMetric(ledgerShortDesc, prometheus.CounterValue, float64(short))
}
