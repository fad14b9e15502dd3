// Trackers, incidents and the indexes written in their transaction: by
// opened window (global, per endpoint and per tenant), each incident's
// tenant, open incidents, pending outboxes.

package bolt

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"go.etcd.io/bbolt"

	"github.com/mcpmon/mcpmon/pkg/jsonv"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/store"
)

// The per-tenant incident index: incByTenant (tenant 0 openedWindow id →
// nil) is a tenant's list in ListIncidents order, incTenants (id → tenant)
// answers GetIncidentOf without reading the record. putIncident writes
// both with the incident. They are not in allBuckets: indexIncidentTenants
// creates them and, the first time, fills them from the incidents already
// stored.
var (
	bIncByTenant = []byte("incByTenant")
	bIncTenants  = []byte("incTenants")
)

func indexIncidentTenants(tx *bbolt.Tx) error {
	if tx.Bucket(bIncByTenant) != nil {
		return nil
	}
	byTenant, err := tx.CreateBucket(bIncByTenant)
	if err != nil {
		return err
	}
	owners, err := tx.CreateBucketIfNotExists(bIncTenants)
	if err != nil {
		return err
	}
	return tx.Bucket(bIncidents).ForEach(func(k, v []byte) error {
		var inc model.Incident
		if err := jsonv.Unmarshal(v, &inc); err != nil {
			return fmt.Errorf("index incident %s by tenant: %w", k, err)
		}
		if err := owners.Put(bytes.Clone(k), []byte(model.TenantOf(inc.Tenant))); err != nil {
			return err
		}
		return byTenant.Put(incTenantKey(inc), nil)
	})
}

func incTenantKey(inc model.Incident) []byte {
	return append(tenantKey(inc.Tenant, ""), incIndexKey(inc)...)
}

// GetTracker returns the endpoint's tracker, or a zero Tracker (Version 0)
// for the endpoint if none was saved.
func (s *Store) GetTracker(ctx context.Context, endpointID string) (model.Tracker, error) {
	var t model.Tracker
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		var ok bool
		var err error
		t, ok, err = get[model.Tracker](tx.Bucket(bTrackers), []byte(endpointID))
		if err == nil && !ok {
			t = model.Tracker{EndpointID: endpointID}
		}
		return err
	})
	return t, err
}

// SaveTracker compare-and-sets the tracker and incidents in one transaction.
func (s *Store) SaveTracker(ctx context.Context, t model.Tracker, incidents ...model.Incident) error {
	if t.EndpointID == "" {
		return errors.New("bolt store: save tracker: EndpointID is required")
	}
	// A batched write (see batch): the aggregator's and alerter's
	// concurrent saves share a commit. fn may run twice, so it works on a
	// copy of t.
	return s.batch(ctx, func(tx *bbolt.Tx) error {
		t := t
		tb := tx.Bucket(bTrackers)
		cur, ok, err := get[model.Tracker](tb, []byte(t.EndpointID))
		if err != nil {
			return err
		}
		if (ok && cur.Version != t.Version) || (!ok && t.Version != 0) {
			return refuse(fmt.Errorf("save tracker %s: have version %d, stored %d: %w", t.EndpointID, t.Version, cur.Version, store.ErrConflict))
		}
		for _, inc := range incidents {
			if err := putIncident(tx, inc, true); err != nil {
				return err
			}
		}
		outboxes := tx.Bucket(bOutboxes)
		if t.Pending > 0 {
			err = outboxes.Put([]byte(t.EndpointID), nil)
		} else {
			err = outboxes.Delete([]byte(t.EndpointID))
		}
		if err != nil {
			return err
		}
		t.Version++
		return put(tb, []byte(t.EndpointID), t)
	})
}

// PendingOutboxes lists the endpoints whose tracker holds pending
// notifications, from the index SaveTracker keeps.
func (s *Store) PendingOutboxes(ctx context.Context) ([]string, error) {
	out := []string{}
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		return tx.Bucket(bOutboxes).ForEach(func(k, _ []byte) error {
			out = append(out, string(k))
			return nil
		})
	})
	return out, err
}

// CountOpenIncidents counts the open-incident index.
func (s *Store) CountOpenIncidents(ctx context.Context) (int, error) {
	var n int
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		n = tx.Bucket(bIncOpen).Stats().KeyN
		return nil
	})
	return n, err
}

// putIncident compare-and-sets inc (Version 0 = create when create is
// allowed) and maintains the opened-window and open-incident indexes and
// the incidents stamp.
func putIncident(tx *bbolt.Tx, inc model.Incident, create bool) error {
	if inc.ID == "" {
		return errors.New("bolt store: incident ID is required")
	}
	b := tx.Bucket(bIncidents)
	cur, ok, err := get[model.Incident](b, []byte(inc.ID))
	if err != nil {
		return err
	}
	switch {
	case !ok && (!create || inc.Version != 0):
		if !create {
			return fmt.Errorf("incident %s: %w", inc.ID, model.ErrNotFound)
		}
		return fmt.Errorf("incident %s: have version %d, not stored: %w", inc.ID, inc.Version, store.ErrConflict)
	case ok && cur.Version != inc.Version:
		return fmt.Errorf("incident %s: have version %d, stored %d: %w", inc.ID, inc.Version, cur.Version, store.ErrConflict)
	}
	idx, byEP, byTenant := tx.Bucket(bIncByOpened), tx.Bucket(bIncByEP), tx.Bucket(bIncByTenant)
	if ok {
		if err := idx.Delete(incIndexKey(cur)); err != nil {
			return err
		}
		if err := byEP.Delete(incEPKey(cur)); err != nil {
			return err
		}
		if err := byTenant.Delete(incTenantKey(cur)); err != nil {
			return err
		}
	}
	inc.Version++
	if err := idx.Put(incIndexKey(inc), nil); err != nil {
		return err
	}
	if err := byEP.Put(incEPKey(inc), nil); err != nil {
		return err
	}
	if err := byTenant.Put(incTenantKey(inc), nil); err != nil {
		return err
	}
	if err := tx.Bucket(bIncTenants).Put([]byte(inc.ID), []byte(model.TenantOf(inc.Tenant))); err != nil {
		return err
	}
	if inc.Unresolved() {
		err = tx.Bucket(bIncOpen).Put([]byte(inc.ID), nil)
	} else {
		err = tx.Bucket(bIncOpen).Delete([]byte(inc.ID))
	}
	if err != nil {
		return err
	}
	if _, err := b.NextSequence(); err != nil { // the incidents stamp
		return err
	}
	return put(b, []byte(inc.ID), inc)
}

func incIndexKey(inc model.Incident) []byte {
	return append(timeKey(inc.OpenedWindow), inc.ID...)
}

func incEPKey(inc model.Incident) []byte {
	return append(idPrefix(inc.EndpointID), incIndexKey(inc)...)
}

// GetIncident returns the incident or ErrNotFound.
func (s *Store) GetIncident(ctx context.Context, id string) (model.Incident, error) {
	return getOne[model.Incident](ctx, s, bIncidents, id, "incident "+id)
}

// GetIncidentOf returns the tenant's incident: the record is read only
// when incTenants names the tenant.
func (s *Store) GetIncidentOf(ctx context.Context, tenant, id string) (model.Incident, error) {
	var inc model.Incident
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		ok := false
		if owner := tx.Bucket(bIncTenants).Get([]byte(id)); owner != nil && string(owner) == model.TenantOf(tenant) {
			var err error
			if inc, ok, err = get[model.Incident](tx.Bucket(bIncidents), []byte(id)); err != nil {
				return err
			}
		}
		if !ok {
			return fmt.Errorf("incident %s: %w", id, model.ErrNotFound)
		}
		return nil
	})
	return inc, err
}

// IncidentsStamp returns the incidents bucket's sequence, which putIncident
// bumps in every transaction that writes an incident.
func (s *Store) IncidentsStamp(ctx context.Context) (uint64, error) {
	var n uint64
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		n = tx.Bucket(bIncidents).Sequence()
		return nil
	})
	return n, err
}

// UpdateIncident compare-and-sets an existing incident; ErrNotFound if absent.
func (s *Store) UpdateIncident(ctx context.Context, inc model.Incident) (model.Incident, error) {
	err := s.update(ctx, func(tx *bbolt.Tx) error { return putIncident(tx, inc, false) })
	if err != nil {
		return model.Incident{}, err
	}
	inc.Version++
	return inc, nil
}

// ListIncidents returns matching incidents ordered by OpenedWindow, newest
// first (ties by ID, descending). It walks the endpoint's index when the
// filter names one, else the tenant's when it names one, else the global
// index.
func (s *Store) ListIncidents(ctx context.Context, f store.IncidentFilter) ([]model.Incident, error) {
	out := []model.Incident{}
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		b := tx.Bucket(bIncidents)
		var prefix []byte
		c := tx.Bucket(bIncByOpened).Cursor()
		switch {
		case f.EndpointID != "":
			prefix = idPrefix(f.EndpointID)
			c = tx.Bucket(bIncByEP).Cursor()
		case f.Tenant != "":
			prefix = tenantKey(f.Tenant, "")
			c = tx.Bucket(bIncByTenant).Cursor()
		}
		// Start at the last key before the cursor (or the prefix's end):
		// a later page costs what it reads, not what earlier pages did.
		seek := append(append([]byte(nil), prefix...), bytes.Repeat([]byte{0xff}, 9)...)
		if f.After != nil {
			seek = append(append([]byte(nil), prefix...), incIndexKey(model.Incident{OpenedWindow: f.After.OpenedWindow, ID: f.After.ID})...)
		}
		k, _ := c.Seek(seek)
		if k == nil {
			k, _ = c.Last()
		} else {
			k, _ = c.Prev()
		}
		for ; k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Prev() {
			if len(k) < len(prefix)+8 {
				continue
			}
			inc, ok, err := get[model.Incident](b, k[len(prefix)+8:])
			if err != nil {
				return err
			}
			if !ok || !f.Match(inc) {
				continue
			}
			out = append(out, inc)
			if f.Full(len(out)) {
				break
			}
		}
		return nil
	})
	return out, err
}
