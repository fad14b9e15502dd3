// Objects: one hash per kind, objects:<kind>, field id, value the document.
// A prober document of a region (store.ProberObjectID "<endpoint>@<region>",
// a kind of store.ProberObjectKinds) also adds the region to the set
// object_regions:<endpoint>, in the same transaction: DeleteEndpoint reads
// it to find the endpoint's regional fields without scanning the hash. A
// document of a tenant kind (store.TenantKinds) is written and deleted by
// the scripts in tenants.go, which keep its tenant's index.

package redis

import (
	"context"
	"errors"
	"fmt"
	"slices"

	goredis "github.com/redis/go-redis/v9"

	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/store"
)

// PutObject stores doc under kind/id.
func (s *Store) PutObject(ctx context.Context, kind, id string, doc []byte) error {
	if kind == "" || id == "" {
		return errors.New("redis store: put object: kind and id are required")
	}
	if store.IsTenantKind(kind) {
		return s.PutObjectWithin(ctx, kind, id, doc, 0)
	}
	ep, region := store.SplitProberObjectID(id)
	if kinds := store.ProberObjectKinds(); region == "" || !slices.Contains(kinds[:], kind) {
		return s.done("put object "+kind+"/"+id, s.rdb.HSet(ctx, s.k("objects", kind), id, doc).Err())
	}
	_, err := s.rdb.TxPipelined(ctx, func(p goredis.Pipeliner) error {
		p.HSet(ctx, s.k("objects", kind), id, doc)
		p.SAdd(ctx, s.objectRegions(ep), region)
		return nil
	})
	return s.done("put object "+kind+"/"+id, err)
}

// objectRegions is the set of regions that hold prober documents of
// endpoint id. DeleteObject leaves it as it is: a region listed without
// documents costs DeleteEndpoint two HDELs of absent fields.
func (s *Store) objectRegions(id string) string { return s.k("object_regions", id) }

// GetObject returns the document or ErrNotFound.
func (s *Store) GetObject(ctx context.Context, kind, id string) ([]byte, error) {
	doc, err := s.rdb.HGet(ctx, s.k("objects", kind), id).Bytes()
	if errors.Is(err, goredis.Nil) {
		return nil, fmt.Errorf("object %s/%s: %w", kind, id, model.ErrNotFound)
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
	var n int64
	var err error
	if store.IsTenantKind(kind) {
		n, err = deleteTenantObject.Run(ctx, s.rdb, []string{s.k("objects", kind), s.objectOwners(kind)},
			id, s.tenantObjectsPrefix(kind), s.objectsStampPrefix(kind)).Int64()
	} else {
		n, err = s.rdb.HDel(ctx, s.k("objects", kind), id).Result()
	}
	if err := s.done("delete object "+kind+"/"+id, err); err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("delete object %s/%s: %w", kind, id, model.ErrNotFound)
	}
	return nil
}
