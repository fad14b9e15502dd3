// Objects: one hash per kind, objects:<kind>, field id, value the document.

package redis

import (
	"context"
	"errors"
	"fmt"

	goredis "github.com/redis/go-redis/v9"

	"github.com/mcpmon/mcpmon/pkg/store"
)

// PutObject stores doc under kind/id.
func (s *Store) PutObject(ctx context.Context, kind, id string, doc []byte) error {
	if kind == "" || id == "" {
		return errors.New("redis store: put object: kind and id are required")
	}
	return s.done("put object "+kind+"/"+id, s.rdb.HSet(ctx, s.k("objects", kind), id, doc).Err())
}

// GetObject returns the document or ErrNotFound.
func (s *Store) GetObject(ctx context.Context, kind, id string) ([]byte, error) {
	doc, err := s.rdb.HGet(ctx, s.k("objects", kind), id).Bytes()
	if errors.Is(err, goredis.Nil) {
		return nil, fmt.Errorf("object %s/%s: %w", kind, id, store.ErrNotFound)
	}
	if err := s.done("get object "+kind+"/"+id, err); err != nil {
		return nil, err
	}
	return doc, nil
}

// ListObjects returns every document of kind by ID (empty map if none).
func (s *Store) ListObjects(ctx context.Context, kind string) (map[string][]byte, error) {
	all, err := s.rdb.HGetAll(ctx, s.k("objects", kind)).Result()
	if err := s.done("list objects "+kind, err); err != nil {
		return nil, err
	}
	out := make(map[string][]byte, len(all))
	for id, doc := range all {
		out[id] = []byte(doc)
	}
	return out, nil
}

// DeleteObject removes the document; ErrNotFound if absent.
func (s *Store) DeleteObject(ctx context.Context, kind, id string) error {
	n, err := s.rdb.HDel(ctx, s.k("objects", kind), id).Result()
	if err := s.done("delete object "+kind+"/"+id, err); err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("delete object %s/%s: %w", kind, id, store.ErrNotFound)
	}
	return nil
}
