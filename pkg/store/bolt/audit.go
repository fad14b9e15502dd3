// The audit log: bucket audit → one nested bucket per tenant, key
// time (8 bytes) + the tenant bucket's sequence (8 bytes) → entry JSON, so
// a cursor walks a tenant's log in (time, append) order. An append prunes
// its tenant's entries past the TTL in the same transaction; the sweeper
// prunes every tenant (one that stopped writing too).

package bolt

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"time"

	"go.etcd.io/bbolt"

	"github.com/mcpmon/mcpmon/pkg/store"
)

// bAudit is created on the first append, not with the other buckets, so a
// store file that never saw an API change has no audit bucket.
var bAudit = []byte("audit") // tenant → bucket(time seq → AuditEntry)

// AppendAudit stores e with a fresh ID and drops the tenant's expired
// entries; see store.Audit.
func (s *Store) AppendAudit(ctx context.Context, e store.AuditEntry) error {
	if err := store.ValidAuditEntry(e); err != nil {
		return fmt.Errorf("bolt store: %w", err)
	}
	e.Time = e.Time.UTC()
	return s.update(ctx, func(tx *bbolt.Tx) error {
		root, err := tx.CreateBucketIfNotExists(bAudit)
		if err != nil {
			return err
		}
		b, err := root.CreateBucketIfNotExists([]byte(e.Tenant))
		if err != nil {
			return err
		}
		seq, err := b.NextSequence()
		if err != nil {
			return err
		}
		e.ID = store.AuditID(e.Time, seq)
		key := make([]byte, 16)
		copy(key, timeKey(e.Time))
		binary.BigEndian.PutUint64(key[8:], seq)
		if err := put(b, key, e); err != nil {
			return fmt.Errorf("append audit entry of tenant %s: %w", e.Tenant, err)
		}
		_, err = pruneAudit(b, s.clk.Now().Add(-s.auditTTL))
		return err
	})
}

// ListAudit returns the tenant's entries newest first; see store.Audit.
func (s *Store) ListAudit(ctx context.Context, f store.AuditFilter) ([]store.AuditEntry, error) {
	out := []store.AuditEntry{}
	from, until := store.AuditWindow(f, s.clk.Now(), s.auditTTL)
	limit := store.AuditLimit(f)
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		root := tx.Bucket(bAudit)
		if root == nil {
			return nil
		}
		b := root.Bucket([]byte(f.Tenant))
		if b == nil {
			return nil
		}
		c := b.Cursor()
		var k, v []byte
		if until.IsZero() {
			k, v = c.Last()
		} else if k, _ = c.Seek(timeKey(until)); k == nil {
			k, v = c.Last()
		} else {
			k, v = c.Prev()
		}
		lo := timeKey(from)
		for ; k != nil && len(out) < limit && bytes.Compare(k[:8], lo) >= 0; k, v = c.Prev() {
			var e store.AuditEntry
			if err := json.Unmarshal(v, &e); err != nil {
				return fmt.Errorf("decode audit entry %x of tenant %s: %w", k, f.Tenant, err)
			}
			out = append(out, e)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("bolt store: list audit of tenant %s: %w", f.Tenant, err)
	}
	return out, nil
}

// pruneAudit deletes a tenant bucket's entries before cutoff and returns
// how many. The keys are time-ordered, so it reads only what it deletes.
func pruneAudit(b *bbolt.Bucket, cutoff time.Time) (int, error) {
	limit := timeKey(cutoff)
	var keys [][]byte
	c := b.Cursor()
	for k, _ := c.First(); k != nil && bytes.Compare(k[:8], limit) < 0; k, _ = c.Next() {
		keys = append(keys, bytes.Clone(k))
	}
	for _, k := range keys {
		if err := b.Delete(k); err != nil {
			return 0, err
		}
	}
	return len(keys), nil
}

// sweepAudit prunes every tenant's log (the sweeper's share of the audit
// retention).
func (s *Store) sweepAudit(tx *bbolt.Tx, now time.Time) (int, error) {
	root := tx.Bucket(bAudit)
	if root == nil {
		return 0, nil
	}
	var tenants [][]byte
	if err := root.ForEachBucket(func(k []byte) error {
		tenants = append(tenants, bytes.Clone(k))
		return nil
	}); err != nil {
		return 0, err
	}
	n := 0
	cutoff := now.Add(-s.auditTTL)
	for _, t := range tenants {
		m, err := pruneAudit(root.Bucket(t), cutoff)
		if err != nil {
			return n, err
		}
		n += m
	}
	return n, nil
}
