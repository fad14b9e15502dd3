package bolt

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"time"

	"go.etcd.io/bbolt"

	"github.com/mcpmon/mcpmon/pkg/store"
)

// CreateEndpoint stores a new endpoint with Version 1; ErrConflict if the ID
// exists. CreatedAt defaults to now, UpdatedAt is set to CreatedAt.
func (s *Store) CreateEndpoint(ctx context.Context, e store.Endpoint) (store.Endpoint, error) {
	e, err := store.FirstEndpointVersion(e, s.clk.Now())
	if err != nil {
		return store.Endpoint{}, fmt.Errorf("bolt store: %w", err)
	}
	err = s.update(ctx, func(tx *bbolt.Tx) error {
		b := tx.Bucket(bEndpoints)
		if b.Get([]byte(e.ID)) != nil {
			return fmt.Errorf("create endpoint %s: already exists: %w", e.ID, store.ErrConflict)
		}
		return put(b, []byte(e.ID), e)
	})
	if err != nil {
		return store.Endpoint{}, err
	}
	return e, nil
}

// UpdateEndpoint replaces the endpoint if e.Version matches the stored one.
func (s *Store) UpdateEndpoint(ctx context.Context, e store.Endpoint) (store.Endpoint, error) {
	err := s.update(ctx, func(tx *bbolt.Tx) error {
		b := tx.Bucket(bEndpoints)
		cur, ok, err := get[store.Endpoint](b, []byte(e.ID))
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("update endpoint %s: %w", e.ID, store.ErrNotFound)
		}
		if e, err = store.NextEndpointVersion(cur, e, s.clk.Now()); err != nil {
			return err
		}
		return put(b, []byte(e.ID), e)
	})
	if err != nil {
		return store.Endpoint{}, err
	}
	return e, nil
}

// GetEndpoint returns the endpoint or ErrNotFound.
func (s *Store) GetEndpoint(ctx context.Context, id string) (store.Endpoint, error) {
	return getOne[store.Endpoint](ctx, s, bEndpoints, id, "endpoint "+id)
}

// ListEndpoints returns every endpoint ordered by ID.
func (s *Store) ListEndpoints(ctx context.Context) ([]store.Endpoint, error) {
	out := []store.Endpoint{}
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		return tx.Bucket(bEndpoints).ForEach(func(k, v []byte) error {
			var e store.Endpoint
			if err := json.Unmarshal(v, &e); err != nil {
				return fmt.Errorf("decode endpoint %s: %w", k, err)
			}
			out = append(out, e)
			return nil
		})
	})
	return out, err
}

// DeleteEndpoint removes the endpoint with its latest probe result, its
// undecided windows and its tool catalog in one transaction; ErrNotFound if
// absent (the cleanup still runs, so a repeated delete removes what a probe
// in flight at the first one wrote back). Verdict history, the tracker,
// incidents and ledger keys stay: history ages out, incidents are the audit
// trail.
func (s *Store) DeleteEndpoint(ctx context.Context, id string) error {
	found := false
	err := s.update(ctx, func(tx *bbolt.Tx) error {
		b := tx.Bucket(bEndpoints)
		if found = b.Get([]byte(id)) != nil; found {
			if err := b.Delete([]byte(id)); err != nil {
				return err
			}
		}
		if err := tx.Bucket(bLatest).Delete([]byte(id)); err != nil {
			return err
		}
		if err := deleteRange(tx.Bucket(bWindows), id, time.Unix(0, math.MaxInt64)); err != nil {
			return err
		}
		for _, kind := range store.ProberObjectKinds() {
			if kb := tx.Bucket(bObjects).Bucket([]byte(kind)); kb != nil {
				if err := kb.Delete([]byte(id)); err != nil {
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
		return fmt.Errorf("delete endpoint %s: %w", id, store.ErrNotFound)
	}
	return nil
}
