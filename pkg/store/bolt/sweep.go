// The background sweeper: reclaims the space of expired ledger keys, of
// verdicts older than the history retention and of audit entries older than
// the audit TTL.

package bolt

import (
	"bytes"
	"context"
	"time"

	"go.etcd.io/bbolt"
)

func (s *Store) sweepLoop(every time.Duration) {
	defer close(s.stopped)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			if n, err := s.Sweep(context.Background()); err != nil {
				s.log.Warn("sweep failed; will retry", "err", err)
			} else if n > 0 {
				s.log.Debug("swept expired records", "count", n)
			}
		}
	}
}

// Sweep deletes ledger keys past their expiry, verdicts older than the
// history retention (an endpoint's once its oldest is a slack past it:
// trimHistory) and audit entries older than the audit TTL, and
// returns how many records it deleted. Expired records already read as
// absent; sweeping only reclaims space.
func (s *Store) Sweep(ctx context.Context) (int, error) {
	n := 0
	now := s.clk.Now()
	err := s.update(ctx, func(tx *bbolt.Tx) error {
		gc, ledger := tx.Bucket(bLedgerGC), tx.Bucket(bLedger)
		limit := timeKey(now)
		var keys [][]byte
		c := gc.Cursor()
		for k, _ := c.First(); k != nil && bytes.Compare(k[:8], limit) <= 0; k, _ = c.Next() {
			keys = append(keys, append([]byte(nil), k...))
		}
		for _, k := range keys {
			if err := gc.Delete(k); err != nil {
				return err
			}
			if err := ledger.Delete(k[8:]); err != nil {
				return err
			}
			n++
		}
		m, err := sweepVerdicts(tx, now, now.Add(-s.history), s.trimSlack) // verdicts.go
		n += m
		if err != nil {
			return err
		}
		m, err = s.sweepAudit(tx, now) // audit.go
		n += m
		if err != nil {
			return err
		}
		m, err = s.sweepEvents(tx, now) // events.go
		n += m
		return err
	})
	return n, err
}
