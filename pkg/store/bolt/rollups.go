// Rollups (buckets rollupHour and rollupDay, created on first use): one
// record per endpoint and bucket, keyed endpointID 0 bucketStart, folded by
// RecordVerdict in its own transaction (see pkg/store rollups.go for why).

package bolt

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"go.etcd.io/bbolt"

	"github.com/mcpmon/mcpmon/pkg/jsonv"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/msg"
)

var (
	bRollupHour = []byte("rollupHour") // endpointID 0 hour → rollupRecord
	bRollupDay  = []byte("rollupDay")  // endpointID 0 day → rollupRecord
)

// rollupRecord is a stored model.Rollup: the sketches in their binary
// encoding (model.EncodeSketch).
type rollupRecord struct {
	Up          int64  `json:"u,omitempty"`
	Degraded    int64  `json:"g,omitempty"`
	Regional    int64  `json:"r,omitempty"`
	Down        int64  `json:"d,omitempty"`
	NoData      int64  `json:"n,omitempty"`
	Maintenance int64  `json:"m,omitempty"`
	Verdicts    int64  `json:"v,omitempty"`
	Total       []byte `json:"t,omitempty"`
	Initialize  []byte `json:"i,omitempty"`
}

func (rec rollupRecord) rollup(start time.Time, size time.Duration) (model.Rollup, error) {
	total, err := model.DecodeSketch(rec.Total)
	if err != nil {
		return model.Rollup{}, err
	}
	initialize, err := model.DecodeSketch(rec.Initialize)
	if err != nil {
		return model.Rollup{}, err
	}
	return model.Rollup{
		Start: start, Size: size,
		Up: rec.Up, Degraded: rec.Degraded, Regional: rec.Regional, Down: rec.Down,
		NoData: rec.NoData, Maintenance: rec.Maintenance, Verdicts: rec.Verdicts,
		Total: total, Initialize: initialize,
	}, nil
}

func recordOf(r model.Rollup) rollupRecord {
	return rollupRecord{
		Up: r.Up, Degraded: r.Degraded, Regional: r.Regional, Down: r.Down,
		NoData: r.NoData, Maintenance: r.Maintenance, Verdicts: r.Verdicts,
		Total: model.EncodeSketch(r.Total), Initialize: model.EncodeSketch(r.Initialize),
	}
}

// foldRollups adds the applied verdict v to its hour and day buckets and
// drops the endpoint's buckets past their retention, inside RecordVerdict's
// transaction.
func foldRollups(tx *bbolt.Tx, v msg.Verdict, now time.Time) error {
	hour, day := model.RollupBuckets(v.Window)
	for _, b := range []struct {
		name  []byte
		size  time.Duration
		start time.Time
	}{{bRollupHour, model.Hourly, hour}, {bRollupDay, model.Daily, day}} {
		bk, err := tx.CreateBucketIfNotExists(b.name)
		if err != nil {
			return err
		}
		if err := deleteRange(bk, v.EndpointID, model.RollupOldest(b.size, now)); err != nil {
			return err
		}
		if !model.RollupKept(b.start, b.size, now) {
			continue // a verdict older than the retention (a replayed backlog)
		}
		key := idTimeKey(v.EndpointID, b.start)
		rec, _, err := get[rollupRecord](bk, key)
		if err != nil {
			return err
		}
		r, err := rec.rollup(b.start, b.size)
		if err != nil {
			return fmt.Errorf("rollup of %s at %s: %w", v.EndpointID, b.start.Format(time.RFC3339), err)
		}
		if err := model.FoldVerdict(&r, v); err != nil {
			return err
		}
		if err := put(bk, key, recordOf(r)); err != nil {
			return err
		}
	}
	return nil
}

// Rollups returns the endpoint's kept buckets of size with start in
// [from, to), oldest first; see store.Rollups.
func (s *Store) Rollups(ctx context.Context, endpointID string, size time.Duration, from, to time.Time) ([]model.Rollup, error) {
	name := bRollupHour
	switch size {
	case model.Hourly:
	case model.Daily:
		name = bRollupDay
	default:
		return nil, fmt.Errorf("bolt store: rollups of %s: unknown size %s", endpointID, size)
	}
	now := s.clk.Now()
	if oldest := model.RollupOldest(size, now); from.Before(oldest) {
		from = oldest
	}
	if newest := now.UTC().Truncate(size).Add(size); to.After(newest) {
		to = newest // as on Redis: no bucket after now's
	}
	out := []model.Rollup{}
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		bk := tx.Bucket(name)
		if bk == nil {
			return nil
		}
		prefix := idPrefix(endpointID)
		end := idTimeKey(endpointID, to)
		c := bk.Cursor()
		for k, raw := c.Seek(idTimeKey(endpointID, from)); k != nil && bytes.HasPrefix(k, prefix) && bytes.Compare(k, end) < 0; k, raw = c.Next() {
			if len(k) != len(prefix)+8 {
				continue
			}
			var rec rollupRecord
			if err := jsonv.Unmarshal(raw, &rec); err != nil {
				return fmt.Errorf("decode rollup of %s: %w", endpointID, err)
			}
			r, err := rec.rollup(keyTime(k[len(prefix):]), size)
			if err != nil {
				return fmt.Errorf("rollup of %s: %w", endpointID, err)
			}
			out = append(out, r)
		}
		return nil
	})
	return out, err
}
