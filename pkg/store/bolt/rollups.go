// Rollups (bucket rollups): one record per endpoint and hour or day, keyed
// so an endpoint's newest hour and newest day are neighbours (rollupKey),
// folded from the verdict history an hour at a time (foldUpTo) and read
// with the verdicts not folded yet added (Rollups).

package bolt

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"go.etcd.io/bbolt"

	"github.com/mcpmon/mcpmon/pkg/jsonv"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/msg"
)

var (
	bRollups = []byte("rollups") // rollupKey → rollupRecord

	// The layout before, one bucket per size (endpointID 0 start →
	// rollupRecord), moved by moveRollups.
	bOldRollupHour = []byte("rollupHour")
	bOldRollupDay  = []byte("rollupDay")
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

// rollupKey is the key of id's bucket of size starting at start, in
// bucket rollups: endpointID 0, then 'h' and the hour's time key, or 'i'
// and the day's time key inverted. Hours ascend and days descend, so the
// newest hour and the newest day — the two records a verdict folds into —
// are neighbours: one leaf per verdict, not one in each of two buckets.
func rollupKey(id string, size time.Duration, start time.Time) []byte {
	k := append(idPrefix(id), rollupTag(size))
	t := timeKey(start)
	if size == model.Daily {
		invert(t)
	}
	return append(k, t...)
}

// invert flips every bit of a time key in place, so keys that ascended
// descend.
func invert(t []byte) {
	for i := range t {
		t[i] ^= 0xff
	}
}

func rollupTag(size time.Duration) byte {
	if size == model.Daily {
		return 'i'
	}
	return 'h'
}

// rollupStart is the start of the bucket a rollups key of id's names.
func rollupStart(k []byte, id string) (time.Time, bool) {
	if len(k) != len(id)+10 {
		return time.Time{}, false
	}
	t := append([]byte(nil), k[len(id)+2:]...)
	if k[len(id)+1] == 'i' {
		invert(t)
	}
	return keyTime(t), true
}

// Rollups are folded from the verdict history, not verdict by verdict. An
// endpoint's verdicts from its fold mark on (foldKey, in bucket verdicts
// beside its last verdict) are not yet in its rollups: RecordVerdict folds
// them once a verdict of a later hour comes (foldUpTo), trimHistory before
// it deletes any, and Rollups adds them to what it returns. Folding each
// verdict rewrote the endpoint's hour and day records, a random leaf of
// bucket rollups and the branch above it, on every verdict; an hour's fold
// writes them once. The history is the log; the rollups are its fold.

// foldKey is the key of id's fold mark in bucket verdicts: after every
// time key of id and before its last verdict (lastKey), one byte long
// where a time is eight.
func foldKey(id string) []byte { return append(idPrefix(id), 0xfe) }

// foldMark returns the time from which id's verdicts are not folded yet,
// and whether it is stored. Unstored: just after the last verdict, for
// an endpoint recorded before marks (each verdict was folded as it came),
// or the zero time for one without a verdict.
func foldMark(vb *bbolt.Bucket, id string) (time.Time, bool, error) {
	if raw := vb.Get(foldKey(id)); raw != nil {
		if len(raw) != 8 {
			return time.Time{}, false, fmt.Errorf("fold mark of %s: %d bytes, want 8", id, len(raw))
		}
		return keyTime(raw), true, nil
	}
	last, ok, err := lastWindow(vb, id)
	if err != nil || !ok {
		return time.Time{}, false, err
	}
	return last.Add(1), false, nil
}

// unfolded returns id's verdicts with a window in [from, to), oldest
// first. A zero to: every one from from.
func unfolded(vb *bbolt.Bucket, id string, from, to time.Time) ([]msg.Verdict, error) {
	var out []msg.Verdict
	prefix := idPrefix(id)
	c := vb.Cursor()
	for k, raw := c.Seek(idTimeKey(id, from)); k != nil && bytes.HasPrefix(k, prefix); k, raw = c.Next() {
		if len(k) != len(prefix)+8 {
			break // past the history: the fold mark, then the last verdict
		}
		if !to.IsZero() && !keyTime(k[len(prefix):]).Before(to) {
			break
		}
		var v msg.Verdict
		if err := jsonv.Unmarshal(raw, &v); err != nil {
			return nil, fmt.Errorf("decode verdict %q: %w", k, err)
		}
		out = append(out, v)
	}
	return out, nil
}

// foldUpTo folds id's verdicts from its fold mark to upTo into its hour
// and day rollups, drops its rollups past their retention, and moves the
// mark to upTo. A mark already at or past upTo is only stored, if it was
// not (so the verdict about to be recorded is not taken for folded).
func foldUpTo(tx *bbolt.Tx, id string, upTo, now time.Time) error {
	vb, bk := tx.Bucket(bVerdicts), tx.Bucket(bRollups)
	mark, stored, err := foldMark(vb, id)
	if err != nil {
		return err
	}
	if mark.IsZero() { // no verdict yet: nothing to fold
		return vb.Put(foldKey(id), timeKey(upTo))
	}
	if !mark.Before(upTo) {
		if stored {
			return nil
		}
		return vb.Put(foldKey(id), timeKey(mark))
	}
	vs, err := unfolded(vb, id, mark, upTo)
	if err != nil {
		return err
	}
	if len(vs) > 0 {
		for _, size := range []time.Duration{model.Hourly, model.Daily} {
			if err := trimRollups(bk, id, size, model.RollupOldest(size, now)); err != nil {
				return err
			}
		}
		folded, err := foldInto(nil, vs, now, func(size time.Duration, start time.Time) (model.Rollup, error) {
			rec, _, err := get[rollupRecord](bk, rollupKey(id, size, start))
			if err != nil {
				return model.Rollup{}, err
			}
			return rec.rollup(start, size)
		})
		if err != nil {
			return fmt.Errorf("fold rollups of %s: %w", id, err)
		}
		for _, r := range folded {
			if err := put(bk, rollupKey(id, r.Size, r.Start), recordOf(r)); err != nil {
				return err
			}
		}
	}
	return vb.Put(foldKey(id), timeKey(upTo))
}

// foldInto folds vs into their hour and day buckets still kept at now,
// each bucket starting from base(size, start) the first time it is met,
// and returns the buckets touched. sizes: which sizes to fold (nil: both).
func foldInto(sizes []time.Duration, vs []msg.Verdict, now time.Time, base func(size time.Duration, start time.Time) (model.Rollup, error)) ([]model.Rollup, error) {
	if sizes == nil {
		sizes = []time.Duration{model.Hourly, model.Daily}
	}
	type bucketKey struct {
		size  time.Duration
		start int64
	}
	at := map[bucketKey]int{}
	var out []model.Rollup
	for _, v := range vs {
		hour, day := model.RollupBuckets(v.Window)
		for _, size := range sizes {
			start := hour
			if size == model.Daily {
				start = day
			}
			if !model.RollupKept(start, size, now) {
				continue // a verdict older than the retention (a replayed backlog)
			}
			k := bucketKey{size, start.UnixNano()}
			i, ok := at[k]
			if !ok {
				r, err := base(size, start)
				if err != nil {
					return nil, fmt.Errorf("rollup at %s: %w", start.Format(time.RFC3339), err)
				}
				i = len(out)
				at[k] = i
				out = append(out, r)
			}
			if err := model.FoldVerdict(&out[i], v); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// trimRollups deletes id's buckets of size starting before oldest: the
// first hours, or the last days.
func trimRollups(bk *bbolt.Bucket, id string, size time.Duration, oldest time.Time) error {
	prefix := append(idPrefix(id), rollupTag(size))
	var keys [][]byte
	c := bk.Cursor()
	if size == model.Daily {
		edge := rollupKey(id, size, oldest)
		k, _ := c.Seek(edge)
		if bytes.Equal(k, edge) {
			k, _ = c.Next()
		}
		for ; k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
			keys = append(keys, append([]byte(nil), k...))
		}
	} else {
		end := rollupKey(id, size, oldest)
		for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix) && bytes.Compare(k, end) < 0; k, _ = c.Next() {
			keys = append(keys, append([]byte(nil), k...))
		}
	}
	for _, k := range keys {
		if err := bk.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

// Rollups returns the endpoint's kept buckets of size with start in
// [from, to), oldest first; see store.Rollups.
func (s *Store) Rollups(ctx context.Context, endpointID string, size time.Duration, from, to time.Time) ([]model.Rollup, error) {
	switch size {
	case model.Hourly, model.Daily:
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
	if !from.Before(to) {
		return out, nil
	}
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		c := tx.Bucket(bRollups).Cursor()
		// Keys ascend with time for hours and descend for days: walk from
		// the smaller key of the range to the larger.
		lo, hi := rollupKey(endpointID, size, from), rollupKey(endpointID, size, to)
		inRange := func(k []byte) bool { return bytes.Compare(k, hi) < 0 }
		if size == model.Daily {
			lo, hi = hi, lo
			inRange = func(k []byte) bool { return bytes.Compare(k, hi) <= 0 }
		}
		for k, raw := c.Seek(lo); k != nil && inRange(k); k, raw = c.Next() {
			start, ok := rollupStart(k, endpointID)
			if !ok || !start.Before(to) || start.Before(from) {
				continue
			}
			var rec rollupRecord
			if err := jsonv.Unmarshal(raw, &rec); err != nil {
				return fmt.Errorf("decode rollup of %s: %w", endpointID, err)
			}
			r, err := rec.rollup(start, size)
			if err != nil {
				return fmt.Errorf("rollup of %s: %w", endpointID, err)
			}
			out = append(out, r)
		}
		// The verdicts not folded yet (foldUpTo), added to their buckets;
		// then all in time order (days were read newest first).
		vb := tx.Bucket(bVerdicts)
		mark, _, err := foldMark(vb, endpointID)
		if err != nil {
			return err
		}
		if mark.IsZero() {
			return nil // no verdict yet
		}
		vs, err := unfolded(vb, endpointID, mark, time.Time{})
		if err != nil {
			return err
		}
		stored := map[int64]int{}
		for i, r := range out {
			stored[r.Start.UnixNano()] = i
		}
		added, err := foldInto([]time.Duration{size}, vs, now, func(size time.Duration, start time.Time) (model.Rollup, error) {
			if i, ok := stored[start.UnixNano()]; ok {
				return out[i], nil
			}
			return rollupRecord{}.rollup(start, size) // as the fold starts a bucket
		})
		if err != nil {
			return fmt.Errorf("rollups of %s: %w", endpointID, err)
		}
		for _, r := range added {
			if r.Start.Before(from) || !r.Start.Before(to) {
				continue
			}
			if i, ok := stored[r.Start.UnixNano()]; ok {
				out[i] = r
			} else {
				out = append(out, r)
			}
		}
		slices.SortFunc(out, func(a, b model.Rollup) int { return a.Start.Compare(b.Start) })
		return nil
	})
	return out, err
}

// moveChunk is how many records moveRollups moves per transaction.
var moveChunk = 20000

// moveRollups moves the rollups of files from before bucket rollups (one
// bucket per size) to it, moveChunk records per transaction: each
// transaction puts its records under their new keys and deletes the old
// ones, so a crash leaves every record in exactly one place and the next
// Open goes on from there. A year of rollups at 10,000 endpoints is
// millions of records, more than one transaction should hold; progress is
// logged per transaction. The old buckets are dropped once empty.
func moveRollups(db *bbolt.DB, log *slog.Logger) error {
	for _, old := range []struct {
		name []byte
		size time.Duration
	}{{bOldRollupHour, model.Hourly}, {bOldRollupDay, model.Daily}} {
		total, moved := 0, 0
		if err := db.View(func(tx *bbolt.Tx) error {
			if b := tx.Bucket(old.name); b != nil {
				total = b.Stats().KeyN
			}
			return nil
		}); err != nil {
			return err
		}
		for {
			done := false
			err := db.Update(func(tx *bbolt.Tx) error {
				ob := tx.Bucket(old.name)
				if ob == nil {
					done = true
					return nil
				}
				nb := tx.Bucket(bRollups)
				var keys [][]byte
				c := ob.Cursor()
				for k, v := c.First(); k != nil && len(keys) < moveChunk; k, v = c.Next() {
					keys = append(keys, append([]byte(nil), k...))
					id, start, rest, ok := splitOldKey(k)
					if !ok || len(rest) != 0 {
						continue // not a rollup key: dropped with the bucket
					}
					if err := nb.Put(rollupKey(id, old.size, start), append([]byte(nil), v...)); err != nil {
						return err
					}
				}
				if len(keys) == 0 {
					done = true
					return tx.DeleteBucket(old.name)
				}
				for _, k := range keys {
					if err := ob.Delete(k); err != nil {
						return err
					}
				}
				moved += len(keys)
				return nil
			})
			if err != nil {
				return fmt.Errorf("move %s rollups to bucket rollups (%d of %d moved; reopen to go on): %w", old.name, moved, total, err)
			}
			if done {
				break
			}
			log.Info("moving rollups to one bucket", "from", string(old.name), "moved", moved, "of", total)
		}
	}
	return nil
}
