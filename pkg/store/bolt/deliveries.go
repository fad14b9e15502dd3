// Deliveries: one nested bucket per incident under deliveries, field
// kind:sink, value the JSON record merged by store.MergeDelivery.

package bolt

import (
	"context"
	"fmt"

	"go.etcd.io/bbolt"

	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/store"
)

// RecordDelivery merges d into the incident's record in one transaction.
func (s *Store) RecordDelivery(ctx context.Context, incidentID string, d model.Delivery) error {
	if err := store.ValidDelivery(incidentID, d); err != nil {
		return fmt.Errorf("bolt store: %w", err)
	}
	return s.update(ctx, func(tx *bbolt.Tx) error {
		if tx.Bucket(bIncidents).Get([]byte(incidentID)) == nil {
			return fmt.Errorf("record delivery for incident %s: %w", incidentID, model.ErrNotFound)
		}
		b, err := tx.Bucket(bDeliveries).CreateBucketIfNotExists([]byte(incidentID))
		if err != nil {
			return err
		}
		key := []byte(store.DeliveryField(d))
		cur, _, err := get[model.Delivery](b, key)
		if err != nil {
			return err
		}
		return put(b, key, store.MergeDelivery(cur, d))
	})
}

// Deliveries returns the incident's records in store.SortDeliveries order.
func (s *Store) Deliveries(ctx context.Context, incidentID string) ([]model.Delivery, error) {
	out := []model.Delivery{}
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		b := tx.Bucket(bDeliveries).Bucket([]byte(incidentID))
		if b == nil {
			return nil
		}
		return b.ForEach(func(k, _ []byte) error {
			d, _, err := get[model.Delivery](b, k)
			out = append(out, d)
			return err
		})
	})
	if err != nil {
		return nil, err
	}
	store.SortDeliveries(out)
	return out, nil
}
