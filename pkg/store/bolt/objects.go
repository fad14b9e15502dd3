// Objects: one nested bucket per kind under objects, id → document. A kind
// of store.TenantKinds also has, written in the transaction that writes
// the document, a nested bucket per kind under objectsByTenant (tenant 0 id
// → nil: the tenant's list and count), one under objectTenants (id →
// tenant: ownership and where to unlist on a move or delete) and the
// tenant's stamp in objectStamps (kind 0 tenant → uint64).

package bolt

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"go.etcd.io/bbolt"

	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/store"
)

var (
	bObjByTenant = []byte("objectsByTenant")
	bObjTenants  = []byte("objectTenants")
	bObjStamps   = []byte("objectStamps")
)

// indexObjects creates the tenant index of each tenant kind and, the first
// time (its nested bucket absent: a file written before the index), fills
// it from the documents already stored. A document whose tenant does not
// decode fails the open: it could otherwise never be listed, counted or
// deleted by its tenant.
func indexObjects(tx *bbolt.Tx) error {
	for _, top := range [][]byte{bObjByTenant, bObjTenants, bObjStamps} {
		if _, err := tx.CreateBucketIfNotExists(top); err != nil {
			return err
		}
	}
	for _, kind := range store.TenantKinds() {
		if tx.Bucket(bObjByTenant).Bucket([]byte(kind)) != nil {
			continue
		}
		byTenant, err := tx.Bucket(bObjByTenant).CreateBucket([]byte(kind))
		if err != nil {
			return err
		}
		owners, err := tx.Bucket(bObjTenants).CreateBucketIfNotExists([]byte(kind))
		if err != nil {
			return err
		}
		docs := tx.Bucket(bObjects).Bucket([]byte(kind))
		if docs == nil {
			continue
		}
		err = docs.ForEach(func(k, v []byte) error {
			tenant, err := store.ObjectTenant(v)
			if err != nil {
				return fmt.Errorf("index %s/%s by tenant: %w", kind, k, err)
			}
			if err := owners.Put(bytes.Clone(k), []byte(tenant)); err != nil {
				return err
			}
			return byTenant.Put(tenantKey(tenant, string(k)), nil)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// PutObject stores doc under kind/id (and indexes it by its tenant for a
// tenant kind).
func (s *Store) PutObject(ctx context.Context, kind, id string, doc []byte) error {
	return s.PutObjectWithin(ctx, kind, id, doc, 0)
}

// PutObjectWithin is PutObject refusing with ErrQuota a document new to its
// tenant when the tenant holds limit documents of kind. bbolt serialises
// write transactions, so the count and the write cannot interleave with
// another put.
func (s *Store) PutObjectWithin(ctx context.Context, kind, id string, doc []byte, limit int) error {
	if kind == "" || id == "" {
		return errors.New("bolt store: put object: kind and id are required")
	}
	tenant := ""
	if store.IsTenantKind(kind) {
		var err error
		if tenant, err = store.ObjectTenant(doc); err != nil {
			return fmt.Errorf("bolt store: put object %s/%s: %w", kind, id, err)
		}
	} else if limit > 0 {
		return fmt.Errorf("bolt store: put object %s/%s within a limit: %w", kind, id, store.ErrNotTenantKind)
	}
	return s.batch(ctx, func(tx *bbolt.Tx) error {
		b, err := tx.Bucket(bObjects).CreateBucketIfNotExists([]byte(kind))
		if err != nil {
			return err
		}
		if tenant != "" {
			if err := indexObject(tx, kind, id, tenant, limit); err != nil {
				return err
			}
		}
		return b.Put([]byte(id), bytes.Clone(doc))
	})
}

// SwapObject is PutObject while kind/id holds exactly old.
func (s *Store) SwapObject(ctx context.Context, kind, id string, old, doc []byte) error {
	if kind == "" || id == "" {
		return errors.New("bolt store: swap object: kind and id are required")
	}
	tenant := ""
	if store.IsTenantKind(kind) {
		var err error
		if tenant, err = store.ObjectTenant(doc); err != nil {
			return fmt.Errorf("bolt store: swap object %s/%s: %w", kind, id, err)
		}
	}
	return s.batch(ctx, func(tx *bbolt.Tx) error {
		var cur []byte
		if b := tx.Bucket(bObjects).Bucket([]byte(kind)); b != nil {
			cur = b.Get([]byte(id))
		}
		switch {
		case cur == nil:
			return refuse(fmt.Errorf("swap object %s/%s: %w", kind, id, model.ErrNotFound))
		case !bytes.Equal(cur, old):
			return refuse(fmt.Errorf("swap object %s/%s: changed since it was read: %w", kind, id, store.ErrConflict))
		}
		if tenant != "" {
			if err := indexObject(tx, kind, id, tenant, 0); err != nil {
				return err
			}
		}
		return tx.Bucket(bObjects).Bucket([]byte(kind)).Put([]byte(id), bytes.Clone(doc))
	})
}

// indexObject lists id in tenant's index of kind (unlisting it from the
// tenant that held it before), bumps the stamps of both and refuses with
// ErrQuota when id is new to tenant and tenant holds limit documents.
func indexObject(tx *bbolt.Tx, kind, id, tenant string, limit int) error {
	byTenant := tx.Bucket(bObjByTenant).Bucket([]byte(kind))
	owners := tx.Bucket(bObjTenants).Bucket([]byte(kind))
	old := owners.Get([]byte(id))
	if old == nil || string(old) != tenant {
		if limit > 0 && countPrefix(byTenant, tenantKey(tenant, ""), limit) >= limit {
			return fmt.Errorf("put object %s/%s: tenant %q has %d: %w", kind, id, tenant, limit, store.ErrQuota)
		}
	}
	if old != nil && string(old) != tenant {
		oldTenant := string(old)
		if err := byTenant.Delete(tenantKey(oldTenant, id)); err != nil {
			return err
		}
		if err := bumpStamp(tx, kind, oldTenant); err != nil {
			return err
		}
	}
	if err := owners.Put([]byte(id), []byte(tenant)); err != nil {
		return err
	}
	if err := byTenant.Put(tenantKey(tenant, id), nil); err != nil {
		return err
	}
	return bumpStamp(tx, kind, tenant)
}

// countPrefix counts b's keys with prefix, stopping at limit.
func countPrefix(b *bbolt.Bucket, prefix []byte, limit int) int {
	n := 0
	c := b.Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix) && (limit <= 0 || n < limit); k, _ = c.Next() {
		n++
	}
	return n
}

func stampKey(kind, tenant string) []byte { return tenantKey(kind, model.TenantOf(tenant)) }

// bumpStamp bumps the tenant's stamp of kind and the kind's
// store.AnyTenant stamp.
func bumpStamp(tx *bbolt.Tx, kind, tenant string) error {
	b := tx.Bucket(bObjStamps)
	for _, t := range []string{tenant, store.AnyTenant} {
		var n uint64
		if v := b.Get(stampKey(kind, t)); len(v) == 8 {
			n = binary.BigEndian.Uint64(v)
		}
		if err := b.Put(stampKey(kind, t), binary.BigEndian.AppendUint64(nil, n+1)); err != nil {
			return err
		}
	}
	return nil
}

// GetObject returns the document or ErrNotFound.
func (s *Store) GetObject(ctx context.Context, kind, id string) ([]byte, error) {
	var doc []byte
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		if b := tx.Bucket(bObjects).Bucket([]byte(kind)); b != nil {
			if v := b.Get([]byte(id)); v != nil {
				doc = bytes.Clone(v)
				return nil
			}
		}
		return fmt.Errorf("object %s/%s: %w", kind, id, model.ErrNotFound)
	})
	return doc, err
}

// GetObjectOf returns the tenant's document: one Get of the index key, and
// the document only when the tenant owns it.
func (s *Store) GetObjectOf(ctx context.Context, kind, tenant, id string) ([]byte, error) {
	if !store.IsTenantKind(kind) {
		return nil, fmt.Errorf("bolt store: get object %s/%s: %w", kind, id, store.ErrNotTenantKind)
	}
	var doc []byte
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		byTenant := tx.Bucket(bObjByTenant).Bucket([]byte(kind))
		if byTenant.Get(tenantKey(tenant, id)) != nil {
			if v := tx.Bucket(bObjects).Bucket([]byte(kind)).Get([]byte(id)); v != nil {
				doc = bytes.Clone(v)
				return nil
			}
		}
		return fmt.Errorf("object %s/%s: %w", kind, id, model.ErrNotFound)
	})
	return doc, err
}

// ListObjects returns every document of kind by ID (empty map if none).
func (s *Store) ListObjects(ctx context.Context, kind string) (map[string][]byte, error) {
	out := map[string][]byte{}
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		b := tx.Bucket(bObjects).Bucket([]byte(kind))
		if b == nil {
			return nil
		}
		return b.ForEach(func(k, v []byte) error {
			out[string(k)] = bytes.Clone(v)
			return nil
		})
	})
	return out, err
}

// ListObjectsOf returns the tenant's documents of kind, walking the
// tenant's index.
func (s *Store) ListObjectsOf(ctx context.Context, kind, tenant string) (map[string][]byte, error) {
	if !store.IsTenantKind(kind) {
		return nil, fmt.Errorf("bolt store: list objects %s: %w", kind, store.ErrNotTenantKind)
	}
	out := map[string][]byte{}
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		docs := tx.Bucket(bObjects).Bucket([]byte(kind))
		if docs == nil {
			return nil
		}
		prefix := tenantKey(tenant, "")
		c := tx.Bucket(bObjByTenant).Bucket([]byte(kind)).Cursor()
		for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
			if v := docs.Get(k[len(prefix):]); v != nil {
				out[string(k[len(prefix):])] = bytes.Clone(v)
			}
		}
		return nil
	})
	return out, err
}

// CountObjectsOf counts the tenant's index of kind.
func (s *Store) CountObjectsOf(ctx context.Context, kind, tenant string) (int, error) {
	if !store.IsTenantKind(kind) {
		return 0, fmt.Errorf("bolt store: count objects %s: %w", kind, store.ErrNotTenantKind)
	}
	var n int
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		n = countPrefix(tx.Bucket(bObjByTenant).Bucket([]byte(kind)), tenantKey(tenant, ""), 0)
		return nil
	})
	return n, err
}

// ObjectsStamp returns the tenant's stamp of kind (0 before any write).
func (s *Store) ObjectsStamp(ctx context.Context, kind, tenant string) (uint64, error) {
	if !store.IsTenantKind(kind) {
		return 0, fmt.Errorf("bolt store: objects stamp %s: %w", kind, store.ErrNotTenantKind)
	}
	var n uint64
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		if v := tx.Bucket(bObjStamps).Get(stampKey(kind, tenant)); len(v) == 8 {
			n = binary.BigEndian.Uint64(v)
		}
		return nil
	})
	return n, err
}

// DeleteObject removes the document (and its index entries); ErrNotFound
// if absent.
func (s *Store) DeleteObject(ctx context.Context, kind, id string) error {
	return s.update(ctx, func(tx *bbolt.Tx) error {
		b := tx.Bucket(bObjects).Bucket([]byte(kind))
		if b == nil || b.Get([]byte(id)) == nil {
			return fmt.Errorf("delete object %s/%s: %w", kind, id, model.ErrNotFound)
		}
		if store.IsTenantKind(kind) {
			owners := tx.Bucket(bObjTenants).Bucket([]byte(kind))
			if old := owners.Get([]byte(id)); old != nil {
				tenant := string(old)
				if err := tx.Bucket(bObjByTenant).Bucket([]byte(kind)).Delete(tenantKey(tenant, id)); err != nil {
					return err
				}
				if err := owners.Delete([]byte(id)); err != nil {
					return err
				}
				if err := bumpStamp(tx, kind, tenant); err != nil {
					return err
				}
			}
		}
		return b.Delete([]byte(id))
	})
}
