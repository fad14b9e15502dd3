package bolt

import (
	"bytes"
	"path/filepath"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"github.com/mcpmon/mcpmon/pkg/clock"
	"github.com/mcpmon/mcpmon/pkg/store/storetest"
)

// BenchmarkRollupBytesPerEndpointDay folds one endpoint's day of one-minute
// verdicts and reports the bytes (keys and values) its 24 hourly and one
// daily rollups take.
func BenchmarkRollupBytesPerEndpointDay(b *testing.B) {
	day := storetest.Start.Truncate(24 * time.Hour)
	var size int
	for b.Loop() {
		clk := clock.NewFake(day)
		s, err := Open(filepath.Join(b.TempDir(), "store.db"), Options{Clock: clk, SweepInterval: -1})
		if err != nil {
			b.Fatal(err)
		}
		for _, v := range storetest.RollupDay("ep", day) {
			clk.Set(v.Window.Add(70 * time.Second))
			if _, err := s.RecordVerdict(b.Context(), v); err != nil {
				b.Fatal(err)
			}
		}
		// The day's last hour is folded when the next hour's first
		// verdict comes (rollups.go): fold it here.
		err = s.db.Update(func(tx *bbolt.Tx) error { return foldUpTo(tx, "ep", day.Add(24*time.Hour), clk.Now()) })
		if err != nil {
			b.Fatal(err)
		}
		size = 0
		err = s.db.View(func(tx *bbolt.Tx) error {
			c := tx.Bucket(bRollups).Cursor()
			for k, v := c.Seek(idPrefix("ep")); k != nil && bytes.HasPrefix(k, idPrefix("ep")); k, v = c.Next() {
				size += len(k) + len(v)
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
		_ = s.Close()
	}
	b.ReportMetric(float64(size), "rollup-B/endpoint/day")
}
