// The verdicts of each endpoint, in bucket verdicts: the time-keyed history
// (endpointID 0 window), right after it the fold mark (endpointID 0 0xfe,
// foldKey: from when the history is not yet in the rollups, rollups.go),
// and last the last verdict (endpointID 0 0xff, lastKey), which decides
// whether a window is still open and outlives the history's retention.
// The newest verdict, the fold mark and the last verdict are neighbours,
// so recording a verdict rewrites one leaf, not one in each of two
// buckets.

package bolt

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"go.etcd.io/bbolt"

	"github.com/mcpmon/mcpmon/pkg/jsonv"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/msg"
)

// RecordVerdict applies v if its window is after the endpoint's last
// verdict: it becomes the last verdict and joins the history (trimmed to
// the retention in steps: trimHistory), the hours before its own are
// folded into the rollups (foldUpTo), and the results of its window — and
// of any earlier window of that endpoint, which can no longer be decided —
// are dropped, all in one transaction.
func (s *Store) RecordVerdict(ctx context.Context, v msg.Verdict) (bool, error) {
	applied := false
	now := s.clk.Now()
	// Batched (see batch): the aggregator decides endpoints concurrently,
	// and concurrent verdicts share one commit instead of an fsync each.
	err := s.batch(ctx, func(tx *bbolt.Tx) error {
		applied = false
		vb := tx.Bucket(bVerdicts)
		last, ok, err := lastWindow(vb, v.EndpointID)
		if err != nil {
			return err
		}
		if ok && !v.Window.After(last) {
			return nil
		}
		// The verdicts of the hours before this one's go into the rollups
		// now (rollups.go): none of theirs can come after this one.
		if err := foldUpTo(tx, v.EndpointID, v.Window.UTC().Truncate(model.Hourly), now); err != nil {
			return err
		}
		// The same bytes under both keys: encoded once.
		raw, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("encode verdict of %s: %w", v.EndpointID, err)
		}
		if err := vb.Put(lastKey(v.EndpointID), raw); err != nil {
			return err
		}
		if err := vb.Put(idTimeKey(v.EndpointID, v.Window), raw); err != nil {
			return err
		}
		if err := deleteWindows(tx, v.EndpointID, v.Window.Add(1)); err != nil {
			return err
		}
		if _, err := trimHistory(tx, v.EndpointID, now, now.Add(-s.history), s.trimSlack); err != nil {
			return err
		}
		applied = true
		return nil
	})
	return applied, err
}

// historySlack is how far past the retention, as a fraction of it, an
// endpoint's oldest verdict may get before the history is trimmed (a 32nd:
// 5¼ hours of a week).
const historySlack = 32

// trimHistory deletes id's verdicts from before cutoff, but only once the
// oldest is slack older than that, and then every one before cutoff at
// once; it returns how many it deleted. An endpoint's oldest verdicts are
// a leaf of their own: trimming one per verdict, as a full history did,
// rewrote that leaf (and the branch above it) on every verdict; in
// slack-sized steps it is a few leaves every few hours. Readers never see
// the extra: they stop at the retention (ListVerdictsBefore).
func trimHistory(tx *bbolt.Tx, id string, now, cutoff time.Time, slack time.Duration) (int, error) {
	b := tx.Bucket(bVerdicts)
	prefix := idPrefix(id)
	k, _ := b.Cursor().Seek(prefix)
	if k == nil || len(k) != len(prefix)+8 || !bytes.HasPrefix(k, prefix) {
		return 0, nil // no history: the endpoint's first key is its fold mark or last verdict, or another endpoint's
	}
	if !keyTime(k[len(prefix):]).Before(cutoff.Add(-slack)) {
		return 0, nil
	}
	// What is trimmed must be in the rollups first (rollups.go).
	if err := foldUpTo(tx, id, cutoff, now); err != nil {
		return 0, err
	}
	return deleteRange(b, id, cutoff)
}

// sweepVerdicts trims every endpoint's history as RecordVerdict does
// (trimHistory), for the endpoints no verdict comes for any more, and
// returns how many verdicts it deleted. One seek per endpoint: a week of
// one-minute verdicts is 10,080 keys an endpoint, and the walk of every
// key this replaced read them all in the sweep's write transaction.
func sweepVerdicts(tx *bbolt.Tx, now, cutoff time.Time, slack time.Duration) (int, error) {
	vb := tx.Bucket(bVerdicts)
	var ids []string
	c := vb.Cursor()
	for k, _ := c.First(); k != nil; {
		i := bytes.IndexByte(k, 0)
		if i < 0 { // no key of this bucket lacks the 0 after its endpoint ID
			k, _ = c.Next()
			continue
		}
		if isHistoryKey(k) && keyTime(k[i+1:]).Before(cutoff.Add(-slack)) {
			ids = append(ids, string(k[:i]))
		}
		// The endpoint's keys all start with its ID and a 0 byte: the
		// next endpoint's first key is the first at or after ID 0x01.
		k, _ = c.Seek(append(k[:i:i], 1))
	}
	n := 0
	for _, id := range ids {
		m, err := trimHistory(tx, id, now, cutoff, slack)
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// LastVerdict returns the endpoint's newest verdict or ErrNotFound.
func (s *Store) LastVerdict(ctx context.Context, endpointID string) (msg.Verdict, error) {
	var v msg.Verdict
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		var ok bool
		var err error
		v, ok, err = get[msg.Verdict](tx.Bucket(bVerdicts), lastKey(endpointID))
		if err == nil && !ok {
			err = fmt.Errorf("last verdict of %s: %w", endpointID, model.ErrNotFound)
		}
		return err
	})
	return v, err
}

// lastKey is the key of id's last verdict in bucket verdicts: after every
// time key of id (0xff is no time's first byte before the year 2262), and
// one byte long where a time is eight, so neither is read as the other.
func lastKey(id string) []byte { return append(idPrefix(id), 0xff) }

// lastWindow is the window of id's last verdict. Only the window decides
// whether a result or a verdict comes too late, and it is the record's
// third member: it is read without parsing the rest (jsonv.Field).
func lastWindow(vb *bbolt.Bucket, id string) (time.Time, bool, error) {
	raw := vb.Get(lastKey(id))
	if raw == nil {
		return time.Time{}, false, nil
	}
	var w time.Time
	if _, err := jsonv.Field(raw, "window", &w); err != nil {
		return time.Time{}, false, fmt.Errorf("decode last verdict of %s: %w", id, err)
	}
	return w, true, nil
}

// isHistoryKey reports whether k, a key of bucket verdicts, is a history
// record (endpointID 0 window) rather than the fold mark or the last
// verdict.
func isHistoryKey(k []byte) bool {
	i := bytes.IndexByte(k, 0)
	return i >= 0 && len(k) == i+9
}

// mergeLastVerdicts moves files written when last verdicts had a bucket of
// their own (lastVerdict, endpointID → Verdict) to their lastKey in
// verdicts, and drops the old bucket; in Open's transaction.
func mergeLastVerdicts(tx *bbolt.Tx) error {
	old := tx.Bucket(bOldLastVerdict)
	if old == nil {
		return nil
	}
	vb := tx.Bucket(bVerdicts)
	err := old.ForEach(func(k, v []byte) error {
		return vb.Put(lastKey(string(k)), append([]byte(nil), v...))
	})
	if err != nil {
		return err
	}
	return tx.DeleteBucket(bOldLastVerdict)
}

// bOldLastVerdict is the last verdicts' bucket of files from before, moved
// by mergeLastVerdicts.
var bOldLastVerdict = []byte("lastVerdict")

// ListVerdicts returns up to limit verdicts (all if limit <= 0), newest
// first, within the retention.
func (s *Store) ListVerdicts(ctx context.Context, endpointID string, limit int) ([]msg.Verdict, error) {
	return s.ListVerdictsBefore(ctx, endpointID, time.Time{}, limit)
}

// ListVerdictsBefore is ListVerdicts from the newest verdict whose window
// is before `before` (zero: the newest), with a Seek to it.
func (s *Store) ListVerdictsBefore(ctx context.Context, endpointID string, before time.Time, limit int) ([]msg.Verdict, error) {
	out := []msg.Verdict{}
	cutoff := s.clk.Now().Add(-s.history)
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		prefix := idPrefix(endpointID)
		c := tx.Bucket(bVerdicts).Cursor()
		seek := append(append([]byte(nil), prefix...), bytes.Repeat([]byte{0xff}, 9)...)
		if !before.IsZero() {
			seek = idTimeKey(endpointID, before) // the first key not before it
		}
		k, v := c.Seek(seek)
		if k == nil {
			k, v = c.Last()
		} else {
			k, v = c.Prev()
		}
		for ; k != nil && bytes.HasPrefix(k, prefix); k, v = c.Prev() {
			if len(k) != len(prefix)+8 { // the last verdict (lastKey)
				continue
			}
			if keyTime(k[len(prefix):]).Before(cutoff) {
				break
			}
			var vd msg.Verdict
			if err := jsonv.Unmarshal(v, &vd); err != nil {
				return fmt.Errorf("decode verdict of %s: %w", endpointID, err)
			}
			out = append(out, vd)
			if limit > 0 && len(out) >= limit {
				break
			}
		}
		return nil
	})
	return out, err
}
