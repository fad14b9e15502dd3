// The claim-before-effect ledger: one record per key, plus the ledgerGC
// index (expiry time, key) that Sweep walks.

package bolt

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.etcd.io/bbolt"

	"github.com/mcpmon/mcpmon/pkg/store"
)

type ledgerState string

const (
	ledgerClaimed ledgerState = "claimed"
	ledgerDone    ledgerState = "done"
)

type ledgerRecord struct {
	State ledgerState `json:"state"`
	Owner string      `json:"owner"`
	// Until is the lease deadline (claimed) or the expiry (done).
	Until time.Time `json:"until"`
	// GCAt is when the sweeper may delete the record: the expiry for done,
	// lease deadline + TTL for an abandoned claim.
	GCAt time.Time `json:"gcAt"`
}

func gcKey(at time.Time, key string) []byte { return append(timeKey(at), key...) }

func (s *Store) putLedger(tx *bbolt.Tx, key string, old *ledgerRecord, rec ledgerRecord) error {
	gc := tx.Bucket(bLedgerGC)
	if old != nil {
		if err := gc.Delete(gcKey(old.GCAt, key)); err != nil {
			return err
		}
	}
	if err := gc.Put(gcKey(rec.GCAt, key), nil); err != nil {
		return err
	}
	return put(tx.Bucket(bLedger), []byte(key), rec)
}

// Claim takes key for owner for lease. Absent keys, done keys past their
// TTL and claims past their lease are acquired; a live claim by the same
// owner is re-acquired (its lease renewed).
func (s *Store) Claim(ctx context.Context, key, owner string, lease time.Duration) (store.ClaimState, error) {
	if key == "" || owner == "" {
		return 0, errors.New("bolt store: claim: key and owner are required")
	}
	if lease <= 0 {
		lease = store.DefaultLease
	}
	var state store.ClaimState
	err := s.update(ctx, func(tx *bbolt.Tx) error {
		now := s.clk.Now()
		cur, ok, err := get[ledgerRecord](tx.Bucket(bLedger), []byte(key))
		if err != nil {
			return err
		}
		if ok && cur.Until.After(now) {
			switch {
			case cur.State == ledgerDone:
				state = store.ClaimDone
				return nil
			case cur.Owner != owner:
				state = store.ClaimHeld
				return nil
			}
		}
		var old *ledgerRecord
		if ok {
			old = &cur
		}
		state = store.ClaimAcquired
		until := now.Add(lease)
		return s.putLedger(tx, key, old, ledgerRecord{State: ledgerClaimed, Owner: owner, Until: until, GCAt: until.Add(s.ttl)})
	})
	if err != nil {
		return 0, err
	}
	return state, nil
}

// Complete marks owner's claim done for the TTL. Completing an already done
// key by the same owner is a no-op; ErrConflict if another owner holds or
// completed the key or it is not claimed. A claim past its lease that nobody
// took over can still be completed.
func (s *Store) Complete(ctx context.Context, key, owner string) error {
	return s.update(ctx, func(tx *bbolt.Tx) error {
		now := s.clk.Now()
		cur, ok, err := get[ledgerRecord](tx.Bucket(bLedger), []byte(key))
		if err != nil {
			return err
		}
		if !ok || cur.Owner != owner || (cur.State == ledgerDone && !cur.Until.After(now)) {
			return fmt.Errorf("complete ledger key %s for %s: claim lost: %w", key, owner, store.ErrConflict)
		}
		if cur.State == ledgerDone {
			return nil
		}
		exp := now.Add(s.ttl)
		return s.putLedger(tx, key, &cur, ledgerRecord{State: ledgerDone, Owner: owner, Until: exp, GCAt: exp})
	})
}

// Release drops owner's claim; a no-op when owner does not hold key (done
// keys are never released).
func (s *Store) Release(ctx context.Context, key, owner string) error {
	return s.update(ctx, func(tx *bbolt.Tx) error {
		cur, ok, err := get[ledgerRecord](tx.Bucket(bLedger), []byte(key))
		if err != nil || !ok || cur.State != ledgerClaimed || cur.Owner != owner {
			return err
		}
		if err := tx.Bucket(bLedgerGC).Delete(gcKey(cur.GCAt, key)); err != nil {
			return err
		}
		return tx.Bucket(bLedger).Delete([]byte(key))
	})
}
