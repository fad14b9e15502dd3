// Objects: one nested bucket per kind under objects, id → document.

package bolt

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"go.etcd.io/bbolt"

	"github.com/mcpmon/mcpmon/pkg/store"
)

// PutObject stores doc under kind/id.
func (s *Store) PutObject(ctx context.Context, kind, id string, doc []byte) error {
	if kind == "" || id == "" {
		return errors.New("bolt store: put object: kind and id are required")
	}
	return s.batch(ctx, func(tx *bbolt.Tx) error {
		b, err := tx.Bucket(bObjects).CreateBucketIfNotExists([]byte(kind))
		if err != nil {
			return err
		}
		return b.Put([]byte(id), append([]byte{}, doc...))
	})
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
		return fmt.Errorf("object %s/%s: %w", kind, id, store.ErrNotFound)
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

// DeleteObject removes the document; ErrNotFound if absent.
func (s *Store) DeleteObject(ctx context.Context, kind, id string) error {
	return s.update(ctx, func(tx *bbolt.Tx) error {
		b := tx.Bucket(bObjects).Bucket([]byte(kind))
		if b == nil || b.Get([]byte(id)) == nil {
			return fmt.Errorf("delete object %s/%s: %w", kind, id, store.ErrNotFound)
		}
		return b.Delete([]byte(id))
	})
}
