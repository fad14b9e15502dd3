// One hash per incident, deliveries:<incident>, field kind:sink, value the
// JSON record. The merge (store.MergeDelivery) runs here in Go, shared with
// bolt, and is written back with a compare-and-set on the field's previous
// value; a lost race (two replicas recording the same kind and sink, which
// the ledger makes rare) re-reads and merges again.

package redis

import (
	"context"
	"errors"
	"fmt"

	goredis "github.com/redis/go-redis/v9"

	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/store"
)

// casDelivery: KEYS incidents, deliveries:<id>; ARGV incident id, field,
// expected value ("" for absent), new value. -1 no incident, 0 the field
// changed, 1 written.
var casDelivery = goredis.NewScript(`
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 0 then return -1 end
local cur = redis.call('HGET', KEYS[2], ARGV[2])
if (cur or '') ~= ARGV[3] then return 0 end
redis.call('HSET', KEYS[2], ARGV[2], ARGV[4])
return 1`)

// maxDeliveryCAS bounds the merge retries; each loser saw a new record, so
// running out means a writer storm, not a slow one.
const maxDeliveryCAS = 32

// RecordDelivery merges d into the incident's record, compare-and-set.
func (s *Store) RecordDelivery(ctx context.Context, incidentID string, d model.Delivery) error {
	if err := store.ValidDelivery(incidentID, d); err != nil {
		return fmt.Errorf("redis store: %w", err)
	}
	field := store.DeliveryField(d)
	op := "record delivery " + field + " of incident " + incidentID
	sh, ok, err := s.incidentShard(ctx, incidentID)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%s: %w", op, model.ErrNotFound)
	}
	key := s.ks(sh, "deliveries", incidentID)
	for range maxDeliveryCAS {
		raw, err := s.rdb.HGet(ctx, key, field).Result()
		if errors.Is(err, goredis.Nil) {
			raw, err = "", nil
		}
		if err := s.done(op, err); err != nil {
			return err
		}
		var cur model.Delivery
		if raw != "" {
			if cur, err = decode[model.Delivery]("delivery "+field, raw); err != nil {
				return err
			}
		}
		next, err := encode(store.MergeDelivery(cur, d))
		if err != nil {
			return err
		}
		n, err := casDelivery.Run(ctx, s.rdb, []string{s.ks(sh, "incidents"), key}, incidentID, field, raw, next).Int()
		if err := s.done(op, err); err != nil {
			return err
		}
		switch n {
		case -1:
			return fmt.Errorf("%s: %w", op, model.ErrNotFound)
		case 1:
			return nil
		}
	}
	return fmt.Errorf("%s: %w", op, store.ErrConflict)
}

// Deliveries returns the incident's records in store.SortDeliveries order.
func (s *Store) Deliveries(ctx context.Context, incidentID string) ([]model.Delivery, error) {
	sh, ok, err := s.incidentShard(ctx, incidentID)
	if err != nil {
		return nil, err
	}
	if !ok {
		return []model.Delivery{}, nil
	}
	all, err := s.rdb.HGetAll(ctx, s.ks(sh, "deliveries", incidentID)).Result()
	if err := s.done("deliveries of incident "+incidentID, err); err != nil {
		return nil, err
	}
	out := make([]model.Delivery, 0, len(all))
	for field, raw := range all {
		d, err := decode[model.Delivery]("delivery "+field, raw)
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	store.SortDeliveries(out)
	return out, nil
}
