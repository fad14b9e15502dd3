package bolt

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"time"

	"go.etcd.io/bbolt"

	"github.com/mcpmon/mcpmon/pkg/jsonv"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/store"
)

// bEPByTenant is the per-tenant endpoint index: tenant 0 endpointID → nil,
// written in the transaction that writes the endpoint, so a tenant's list
// (and its quota count) walks its own keys only. It is not in allBuckets:
// indexTenants creates it and, the first time, fills it from the endpoints
// written before tenants (all of them DefaultTenant's).
var bEPByTenant = []byte("endpointsByTenant")

func indexTenants(tx *bbolt.Tx) error {
	if tx.Bucket(bEPByTenant) != nil {
		return nil
	}
	idx, err := tx.CreateBucket(bEPByTenant)
	if err != nil {
		return err
	}
	return tx.Bucket(bEndpoints).ForEach(func(k, v []byte) error {
		var e struct{ Tenant string }
		if err := jsonv.Unmarshal(v, &e); err != nil {
			return fmt.Errorf("index endpoint %s by tenant: %w", k, err)
		}
		return idx.Put(tenantKey(e.Tenant, string(k)), nil)
	})
}

// tenantKey is the index key of endpoint id in tenant; the 0 byte keeps
// tenant "a" from prefixing tenant "ab".
func tenantKey(tenant, id string) []byte {
	return append(append([]byte(model.TenantOf(tenant)), 0), id...)
}

// CreateEndpoint stores a new endpoint with Version 1; ErrConflict if the ID
// exists. CreatedAt defaults to now, UpdatedAt is set to CreatedAt.
func (s *Store) CreateEndpoint(ctx context.Context, e model.Endpoint) (model.Endpoint, error) {
	return s.CreateEndpointWithin(ctx, e, 0)
}

// CreateEndpointWithin is CreateEndpoint refusing with ErrQuota when e's
// tenant already has limit endpoints (limit <= 0: none). bbolt serialises
// write transactions, so the count and the write cannot interleave with
// another create.
func (s *Store) CreateEndpointWithin(ctx context.Context, e model.Endpoint, limit int) (model.Endpoint, error) {
	e, err := store.FirstEndpointVersion(e, s.clk.Now())
	if err != nil {
		return model.Endpoint{}, fmt.Errorf("bolt store: %w", err)
	}
	defer s.writingEndpoint()()
	err = s.update(ctx, func(tx *bbolt.Tx) error {
		b := tx.Bucket(bEndpoints)
		if b.Get([]byte(e.ID)) != nil {
			return fmt.Errorf("create endpoint %s: already exists: %w", e.ID, store.ErrConflict)
		}
		idx := tx.Bucket(bEPByTenant)
		if limit > 0 {
			n := 0
			prefix := tenantKey(e.Tenant, "")
			c := idx.Cursor()
			for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix) && n < limit; k, _ = c.Next() {
				n++
			}
			if n >= limit {
				return fmt.Errorf("create endpoint %s: tenant %q has %d endpoints: %w", e.ID, e.Tenant, limit, store.ErrQuota)
			}
		}
		if err := idx.Put(tenantKey(e.Tenant, e.ID), nil); err != nil {
			return err
		}
		if err := bumpStamps(tx, e.ID); err != nil {
			return err
		}
		return put(b, []byte(e.ID), e)
	})
	if err != nil {
		return model.Endpoint{}, err
	}
	return e, nil
}

// UpdateEndpoint replaces the endpoint if e.Version matches the stored one.
func (s *Store) UpdateEndpoint(ctx context.Context, e model.Endpoint) (model.Endpoint, error) {
	defer s.writingEndpoint()()
	err := s.update(ctx, func(tx *bbolt.Tx) error {
		b := tx.Bucket(bEndpoints)
		cur, ok, err := get[model.Endpoint](b, []byte(e.ID))
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("update endpoint %s: %w", e.ID, model.ErrNotFound)
		}
		if e, err = store.NextEndpointVersion(cur, e, s.clk.Now()); err != nil {
			return err
		}
		if err := bumpStamps(tx, e.ID); err != nil {
			return err
		}
		return put(b, []byte(e.ID), e)
	})
	if err != nil {
		return model.Endpoint{}, err
	}
	return e, nil
}

// EndpointsStamp returns a number that changes whenever an endpoint is
// created, updated or deleted (the endpoints bucket's sequence, bumped in
// each of those transactions), so a reader that lists every endpoint
// periodically can skip a listing while it stays the same.
func (s *Store) EndpointsStamp(ctx context.Context) (uint64, error) {
	var n uint64
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		n = tx.Bucket(bEndpoints).Sequence()
		return nil
	})
	return n, err
}

// bumpStamps moves the endpoints stamp (the endpoints bucket's sequence)
// and the stamp of id's shard, in the transaction that writes id.
func bumpStamps(tx *bbolt.Tx, id string) error {
	if _, err := tx.Bucket(bEndpoints).NextSequence(); err != nil {
		return err
	}
	b := tx.Bucket(bEPStamps)
	k := shardKey(store.ShardOf(id))
	var n uint64
	if v := b.Get(k); len(v) == 8 {
		n = binary.BigEndian.Uint64(v)
	}
	return b.Put(k, binary.BigEndian.AppendUint64(nil, n+1))
}

func shardKey(sh int) []byte { return binary.BigEndian.AppendUint16(nil, uint16(sh)) }

// EndpointsStampsIn returns each shard's count of endpoint writes, bumped
// in the transaction of every create, update and delete of one of its
// endpoints; 0 for a shard never written (or out of range).
func (s *Store) EndpointsStampsIn(ctx context.Context, shards []int) ([]uint64, error) {
	out := make([]uint64, len(shards))
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		b := tx.Bucket(bEPStamps)
		for i, sh := range shards {
			if sh < 0 || sh >= store.ShardCount {
				continue
			}
			if v := b.Get(shardKey(sh)); len(v) == 8 {
				out[i] = binary.BigEndian.Uint64(v)
			}
		}
		return nil
	})
	return out, err
}

// GetEndpoint returns the endpoint or ErrNotFound. An endpoint read since
// the last endpoint write is answered without a transaction (epGen).
func (s *Store) GetEndpoint(ctx context.Context, id string) (model.Endpoint, error) {
	if err := ctx.Err(); err != nil {
		return model.Endpoint{}, err
	}
	gen := s.endpointGen()
	if e, ok := s.eps.Current(id, gen); ok {
		return e, nil
	}
	var e model.Endpoint
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		var ok bool
		var err error
		if e, ok, err = s.endpointAt(tx.Bucket(bEndpoints), []byte(id), gen); err == nil && !ok {
			err = fmt.Errorf("endpoint %s: %w", id, model.ErrNotFound)
		}
		return err
	})
	return e, err
}

// endpointAt reads endpoint id from b (the endpoints bucket) through the
// store's decoder: a record unchanged since its last read is not decoded
// again. ok is false when there is none. Only the reads of one endpoint
// go through it (the per-probe reads); listings decode without it, so the
// scheduler's and the aggregator's full listings do not make an idle
// process keep a copy of every endpoint registered.
//
// gen is the store's endpoint generation loaded before the transaction
// began (endpointGen()); the decoder remembers it with the record.
func (s *Store) endpointAt(b *bbolt.Bucket, id []byte, gen uint64) (model.Endpoint, bool, error) {
	raw := b.Get(id)
	if raw == nil {
		s.eps.Forget(string(id))
		return model.Endpoint{}, false, nil
	}
	e, err := s.eps.DecodeAt(string(id), raw, gen)
	return e, err == nil, err
}

// writingEndpoint marks an endpoint write under way, and returns what
// ends it: moving the endpoint generation once the write's transaction
// has ended, committed or not. Every write to the endpoints bucket calls
// it (create, update, delete: the only three), or a read could be
// answered from a record the write replaced.
func (s *Store) writingEndpoint() (written func()) {
	s.epWriting.Add(1)
	return func() {
		s.epGen.Add(1)
		s.epWriting.Add(-1)
	}
}

// endpointGen is the generation a read of an endpoint goes by: the
// store's, or 0 (never current, EndpointDecoder.Current) while an
// endpoint write is under way. Without that, two reads overlapping a
// write could leave the decoder the record from before it at the
// generation the record after it was already served at, and a reader
// could read the newer version, then the older (a reader that saw the
// newer one either still finds a write under way, or finds the
// generation moved: the writer moves it before it stops counting).
// The count is loaded first for the same reason.
func (s *Store) endpointGen() uint64 {
	if s.epWriting.Load() > 0 {
		return 0
	}
	return s.epGen.Load()
}

// GetEndpointOf returns the tenant's endpoint: the record is read only
// when the tenant's index lists id.
func (s *Store) GetEndpointOf(ctx context.Context, tenant, id string) (model.Endpoint, error) {
	var e model.Endpoint
	gen := s.endpointGen()
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		ok := false
		if tx.Bucket(bEPByTenant).Get(tenantKey(tenant, id)) != nil {
			var err error
			if e, ok, err = s.endpointAt(tx.Bucket(bEndpoints), []byte(id), gen); err != nil {
				return err
			}
		}
		if !ok {
			return fmt.Errorf("endpoint %s: %w", id, model.ErrNotFound)
		}
		return nil
	})
	return e, err
}

// ListEndpoints returns every endpoint ordered by ID.
func (s *Store) ListEndpoints(ctx context.Context) ([]model.Endpoint, error) {
	return s.listEndpoints(ctx, func([]byte) bool { return true })
}

// ListEndpointsIn returns the endpoints of shards ordered by ID. The one
// file holds every shard in one bucket, so this walks every key and
// decodes only the records of the shards asked for.
func (s *Store) ListEndpointsIn(ctx context.Context, shards []int) ([]model.Endpoint, error) {
	want := store.ShardSet(shards)
	return s.listEndpoints(ctx, func(id []byte) bool { return want[store.ShardOf(string(id))] })
}

// listEndpoints decodes the endpoints whose ID keep accepts, by ID.
func (s *Store) listEndpoints(ctx context.Context, keep func(id []byte) bool) ([]model.Endpoint, error) {
	out := []model.Endpoint{}
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		return tx.Bucket(bEndpoints).ForEach(func(k, v []byte) error {
			if !keep(k) {
				return nil
			}
			var e model.Endpoint
			if err := jsonv.Unmarshal(v, &e); err != nil {
				return fmt.Errorf("decode endpoint %s: %w", k, err)
			}
			out = append(out, e)
			return nil
		})
	})
	return out, err
}

// ListEndpointsOf returns the tenant's endpoints ordered by ID, walking the
// tenant's index.
func (s *Store) ListEndpointsOf(ctx context.Context, tenant string) ([]model.Endpoint, error) {
	out := []model.Endpoint{}
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		b := tx.Bucket(bEndpoints)
		prefix := tenantKey(tenant, "")
		c := tx.Bucket(bEPByTenant).Cursor()
		for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
			e, ok, err := get[model.Endpoint](b, k[len(prefix):])
			if err != nil {
				return err
			}
			if ok {
				out = append(out, e)
			}
		}
		return nil
	})
	return out, err
}

// ListEndpointsPage returns the tenant's endpoints after the ID `after`,
// at most limit, with a Seek into the tenant's index: one read
// transaction of the page's size.
func (s *Store) ListEndpointsPage(ctx context.Context, tenant, after string, limit int) (store.EndpointPage, error) {
	page := store.EndpointPage{Endpoints: []model.Endpoint{}}
	if limit <= 0 {
		return page, nil
	}
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		b := tx.Bucket(bEndpoints)
		prefix := tenantKey(tenant, "")
		from := tenantKey(tenant, after)
		c := tx.Bucket(bEPByTenant).Cursor()
		k, _ := c.Seek(from)
		if after != "" && bytes.Equal(k, from) {
			k, _ = c.Next()
		}
		var last []byte
		for n := 0; k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
			if n == limit {
				page.Next = string(last)
				return nil
			}
			n++
			last = k[len(prefix):]
			e, ok, err := get[model.Endpoint](b, last)
			if err != nil {
				return err
			}
			if ok {
				page.Endpoints = append(page.Endpoints, e)
			}
		}
		return nil
	})
	return page, err
}

// DeleteEndpoint removes the endpoint with its latest probe result, its
// undecided windows and its tool catalog in one transaction; ErrNotFound if
// absent (the cleanup still runs, so a repeated delete removes what a probe
// in flight at the first one wrote back). Verdict history, the tracker,
// incidents and ledger keys stay: history ages out, incidents are the audit
// trail.
func (s *Store) DeleteEndpoint(ctx context.Context, id string) error {
	found := false
	defer s.writingEndpoint()()
	err := s.update(ctx, func(tx *bbolt.Tx) error {
		b := tx.Bucket(bEndpoints)
		cur, ok, err := get[model.Endpoint](b, []byte(id))
		if err != nil {
			return err
		}
		if found = ok; found {
			if err := tx.Bucket(bEPByTenant).Delete(tenantKey(cur.Tenant, id)); err != nil {
				return err
			}
			if err := b.Delete([]byte(id)); err != nil {
				return err
			}
			if err := bumpStamps(tx, id); err != nil {
				return err
			}
		}
		if err := tx.Bucket(bLatest).Delete([]byte(id)); err != nil {
			return err
		}
		if err := deleteWindows(tx, id, time.Unix(0, math.MaxInt64)); err != nil {
			return err
		}
		for _, kind := range store.ProberObjectKinds() {
			if kb := tx.Bucket(bObjects).Bucket([]byte(kind)); kb != nil {
				if err := deleteProberObjects(kb, id); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("delete endpoint %s: %w", id, err)
	}
	if !found {
		return fmt.Errorf("delete endpoint %s: %w", id, model.ErrNotFound)
	}
	s.eps.Forget(id)
	return nil
}

// deleteProberObjects removes id's document and every region's
// (store.ProberObjectID): the keys "<id>@<region>" sort together right
// after the prefix "<id>@", so the cost is the endpoint's regions, not the
// bucket.
func deleteProberObjects(kb *bbolt.Bucket, id string) error {
	if err := kb.Delete([]byte(id)); err != nil {
		return err
	}
	prefix := []byte(id + store.RegionSeparator)
	var keys [][]byte
	c := kb.Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		keys = append(keys, bytes.Clone(k))
	}
	for _, k := range keys { // not while iterating: a delete moves the cursor
		if err := kb.Delete(k); err != nil {
			return err
		}
	}
	return nil
}
