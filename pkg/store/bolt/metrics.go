// What the file's commits cost the disk, exported for Prometheus: whatever
// wrote them (the store, and the embedded queue sharing the file), a
// probe's durable state is so many commits and so many pages written. The
// failed commits are Store.CommitFailures (health.go), exported with the
// other backends' by the daemon.

package bolt

import (
	"github.com/prometheus/client_golang/prometheus"
	"go.etcd.io/bbolt"
)

var (
	commitsDesc = prometheus.NewDesc("mcpmon_store_commits_total",
		"Write transactions the embedded store's file committed (each two fdatasyncs).", nil, nil)
	pagesDesc = prometheus.NewDesc("mcpmon_store_pages_written_total",
		"Pages the embedded store's file wrote in its commits.", nil, nil)
)

// FileCollector reads the commit counters of the store's file at scrape
// time.
type FileCollector struct {
	db                  *bbolt.DB
	baseTxID, basePages uint64 // the counters when the collector was made
}

// FileCollector returns a collector of the store's file, counted from
// now: its commits and pages written.
func (s *Store) FileCollector() *FileCollector {
	c := &FileCollector{db: s.db}
	c.baseTxID, _ = c.txid()
	st := s.db.Stats()
	c.basePages = uint64(st.TxStats.GetWrite())
	return c
}

// txid is the ID of the file's last committed write transaction: bbolt
// numbers them one by one.
func (c *FileCollector) txid() (uint64, error) {
	var id uint64
	err := c.db.View(func(tx *bbolt.Tx) error {
		id = uint64(tx.ID())
		return nil
	})
	return id, err
}

// Describe implements prometheus.Collector.
func (c *FileCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- commitsDesc
	ch <- pagesDesc
}

// Collect implements prometheus.Collector.
func (c *FileCollector) Collect(ch chan<- prometheus.Metric) {
	commits, pages := c.Counts()
	ch <- prometheus.MustNewConstMetric(commitsDesc, prometheus.CounterValue, float64(commits))
	ch <- prometheus.MustNewConstMetric(pagesDesc, prometheus.CounterValue, float64(pages))
}

// Counts returns the commits and the pages written since the collector
// was made. After the file is closed the commits read 0.
func (c *FileCollector) Counts() (commits, pages uint64) {
	if id, err := c.txid(); err == nil && id >= c.baseTxID {
		commits = id - c.baseTxID
	}
	st := c.db.Stats()
	return commits, uint64(st.TxStats.GetWrite()) - c.basePages
}
