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
	if region == "" || !proberKind(kind) {
		return s.done("put object "+kind+"/"+id, s.rdb.HSet(ctx, s.objects(kind, id), id, doc).Err())
	}
	_, err := s.rdb.TxPipelined(ctx, func(p goredis.Pipeliner) error {
		p.HSet(ctx, s.objects(kind, id), id, doc)
		p.SAdd(ctx, s.objectRegions(ep), region)
		return nil
	})
	return s.done("put object "+kind+"/"+id, err)
}

// objectRegions is the set of regions that hold prober documents of
// endpoint id. DeleteObject leaves it as it is: a region listed without
// documents costs DeleteEndpoint two HDELs of absent fields.
func (s *Store) objectRegions(id string) string { return s.ke(id, "object_regions", id) }

func proberKind(kind string) bool {
	kinds := store.ProberObjectKinds()
	return slices.Contains(kinds[:], kind)
}

// objects is the hash holding document id of kind: a prober document
// lives in its endpoint's shard (DeleteEndpoint removes it in the same
// script), every other document in the global slot.
func (s *Store) objects(kind, id string) string {
	if proberKind(kind) {
		ep, _ := store.SplitProberObjectID(id)
		return s.ke(ep, "objects", kind)
	}
	return s.k("objects", kind)
}

// GetObject returns the document or ErrNotFound.
func (s *Store) GetObject(ctx context.Context, kind, id string) ([]byte, error) {
	doc, err := s.rdb.HGet(ctx, s.objects(kind, id), id).Bytes()
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
	shards := []int{0}
	if proberKind(kind) {
		shards = s.shards()
	}
	out := map[string][]byte{}
	cmds := make([]*goredis.MapStringStringCmd, len(shards))
	_, err := s.rdb.Pipelined(ctx, func(p goredis.Pipeliner) error {
		for i, sh := range shards {
			key := s.k("objects", kind)
			if proberKind(kind) {
				key = s.ks(sh, "objects", kind)
			}
			cmds[i] = p.HGetAll(ctx, key)
		}
		return nil
	})
	if err := s.done("list objects "+kind, err); err != nil {
		return nil, err
	}
	for _, c := range cmds {
		for id, doc := range c.Val() {
			out[id] = []byte(doc)
		}
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
		n, err = s.rdb.HDel(ctx, s.objects(kind, id), id).Result()
	}
	if err := s.done("delete object "+kind+"/"+id, err); err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("delete object %s/%s: %w", kind, id, model.ErrNotFound)
	}
	return nil
}
