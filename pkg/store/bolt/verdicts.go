// The last verdict per endpoint (bucket lastVerdict, which decides whether a
// window is still open) and the time-keyed verdict history (bucket verdicts).

package bolt

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"go.etcd.io/bbolt"

	"github.com/mcpmon/mcpmon/pkg/jsonv"
	"github.com/mcpmon/mcpmon/pkg/msg"
)

// RecordVerdict applies v if its window is after the endpoint's last
// verdict: it becomes the last verdict, joins the history (trimmed to the
// retention) and the results of its window — and of any earlier window of
// that endpoint, which can no longer be decided — are dropped, all in one
// transaction.
func (s *Store) RecordVerdict(ctx context.Context, v msg.Verdict) (bool, error) {
	applied := false
	now := s.clk.Now()
	// Batched (see batch): the aggregator decides endpoints concurrently,
	// and concurrent verdicts share one commit instead of an fsync each.
	err := s.batch(ctx, func(tx *bbolt.Tx) error {
		applied = false
		lb := tx.Bucket(bLastVerdict)
		last, ok, err := get[msg.Verdict](lb, []byte(v.EndpointID))
		if err != nil {
			return err
		}
		if ok && !v.Window.After(last.Window) {
			return nil
		}
		if err := put(lb, []byte(v.EndpointID), v); err != nil {
			return err
		}
		if err := put(tx.Bucket(bVerdicts), idTimeKey(v.EndpointID, v.Window), v); err != nil {
			return err
		}
		if err := deleteWindows(tx, v.EndpointID, v.Window.Add(1)); err != nil {
			return err
		}
		if err := deleteRange(tx.Bucket(bVerdicts), v.EndpointID, now.Add(-s.history)); err != nil {
			return err
		}
		if err := foldRollups(tx, v, now); err != nil { // rollups.go
			return err
		}
		applied = true
		return nil
	})
	return applied, err
}

// LastVerdict returns the endpoint's newest verdict or ErrNotFound.
func (s *Store) LastVerdict(ctx context.Context, endpointID string) (msg.Verdict, error) {
	return getOne[msg.Verdict](ctx, s, bLastVerdict, endpointID, "last verdict of "+endpointID)
}

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
			if len(k) != len(prefix)+8 {
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
