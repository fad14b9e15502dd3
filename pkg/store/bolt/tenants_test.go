package bolt_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"go.etcd.io/bbolt"

	"github.com/mcpmon/mcpmon/pkg/clock"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/store"
	"github.com/mcpmon/mcpmon/pkg/store/bolt"
	"github.com/mcpmon/mcpmon/pkg/store/storetest"
)

// TestEndpointsFromBeforeTenantsJoinTheDefaultTenant: a store file written
// before the per-tenant index existed (its endpoints carry no tenant) gets
// the index at Open, every endpoint in the default tenant.
func TestEndpointsFromBeforeTenantsJoinTheDefaultTenant(t *testing.T) {
	path := oldFile(t, func(tx *bbolt.Tx) error {
		if err := tx.DeleteBucket([]byte("endpointsByTenant")); err != nil {
			return err
		}
		return tx.Bucket([]byte("endpoints")).Put([]byte("old"), []byte(`{"id":"old","name":"old","schedule":"@every 1m","version":1}`))
	})

	s := open(t, path, clock.NewFake(storetest.Start))
	eps, err := s.ListEndpointsOf(t.Context(), model.DefaultTenant)
	if err != nil || len(eps) != 1 || eps[0].ID != "old" {
		t.Fatalf("default tenant lists %+v, %v; want the endpoint from before tenants", eps, err)
	}
	if err := s.DeleteEndpoint(t.Context(), "old"); err != nil {
		t.Fatal(err)
	}
	if eps, _ := s.ListEndpointsOf(t.Context(), model.DefaultTenant); len(eps) != 0 {
		t.Fatalf("after delete the default tenant lists %+v", eps)
	}
}

// TestForeignRecordsAreNotRead: the owned reads decide ownership from the
// tenant index before touching a record. Records that do not decode are
// reported as such to their own tenant and are a plain ErrNotFound to any
// other (so they were never decoded), and a tenant's lists succeed beside
// another tenant's undecodable records (so they were never read).
func TestForeignRecordsAreNotRead(t *testing.T) {
	ctx := t.Context()
	s := open(t, filepath.Join(t.TempDir(), "store.db"), clock.NewFake(storetest.Start))
	if _, err := s.CreateEndpoint(ctx, model.Endpoint{ID: "eb", Tenant: "b", Schedule: "@every 1m"}); err != nil {
		t.Fatal(err)
	}
	inc := model.Incident{ID: "ib", EndpointID: "eb", Tenant: "b", State: model.IncidentOpen, OpenedWindow: storetest.Start}
	if err := s.SaveTracker(ctx, model.Tracker{EndpointID: "eb"}, inc); err != nil {
		t.Fatal(err)
	}
	if err := s.PutObject(ctx, store.KindMaintenance, "wb", []byte(`{"tenant":"b"}`)); err != nil {
		t.Fatal(err)
	}
	if err := s.PutObject(ctx, store.KindMaintenance, "wa", []byte(`{"tenant":"a"}`)); err != nil {
		t.Fatal(err)
	}
	err := s.DB().Update(func(tx *bbolt.Tx) error {
		if err := tx.Bucket([]byte("endpoints")).Put([]byte("eb"), []byte("{broken")); err != nil {
			return err
		}
		if err := tx.Bucket([]byte("incidents")).Put([]byte("ib"), []byte("{broken")); err != nil {
			return err
		}
		return tx.Bucket([]byte("objects")).Bucket([]byte(store.KindMaintenance)).Put([]byte("wb"), []byte("{broken"))
	})
	if err != nil {
		t.Fatal(err)
	}

	for _, c := range []struct {
		name string
		read func(tenant string) error
	}{
		{"endpoint", func(tenant string) error { _, err := s.GetEndpointOf(ctx, tenant, "eb"); return err }},
		{"incident", func(tenant string) error { _, err := s.GetIncidentOf(ctx, tenant, "ib"); return err }},
		{"window", func(tenant string) error {
			doc, err := s.GetObjectOf(ctx, store.KindMaintenance, tenant, "wb")
			if err == nil && string(doc) == "{broken" {
				err = errors.New("read the broken document")
			}
			return err
		}},
	} {
		if err := c.read("a"); !errors.Is(err, model.ErrNotFound) {
			t.Errorf("%s of tenant b read as tenant a: err = %v, want ErrNotFound without reading it", c.name, err)
		}
		if err := c.read("b"); err == nil || errors.Is(err, model.ErrNotFound) {
			t.Errorf("%s read by its own tenant: err = %v, want the decode error (the record is broken)", c.name, err)
		}
	}
	if docs, err := s.ListObjectsOf(ctx, store.KindMaintenance, "a"); err != nil || len(docs) != 1 {
		t.Errorf("tenant a's windows = %v, %v", docs, err)
	}
	if incs, err := s.ListIncidents(ctx, store.IncidentFilter{Tenant: "a"}); err != nil || len(incs) != 0 {
		t.Errorf("tenant a's incidents = %v, %v; want none, without decoding tenant b's", incs, err)
	}
	if eps, err := s.ListEndpointsOf(ctx, "a"); err != nil || len(eps) != 0 {
		t.Errorf("tenant a's endpoints = %v, %v", eps, err)
	}
}

// TestIncidentsAndWindowsFromBeforeTheIndexAreIndexedAtOpen: a file
// written before the tenant indexes of incidents and maintenance windows
// existed gets them at Open, each record under its own tenant.
func TestIncidentsAndWindowsFromBeforeTheIndexAreIndexedAtOpen(t *testing.T) {
	path := oldFile(t, func(tx *bbolt.Tx) error {
		for _, b := range []string{"incByTenant", "incTenants", "objectsByTenant", "objectTenants", "objectStamps"} {
			if err := tx.DeleteBucket([]byte(b)); err != nil {
				return fmt.Errorf("%s: %w", b, err)
			}
		}
		if err := tx.Bucket([]byte("incidents")).Put([]byte("old"), []byte(`{"id":"old","endpointId":"e","state":"open","openedWindow":"2026-03-01T12:00:00Z","version":1}`)); err != nil {
			return err
		}
		if err := tx.Bucket([]byte("incidents")).Put([]byte("new"), []byte(`{"id":"new","endpointId":"e","tenant":"t","state":"open","openedWindow":"2026-03-01T12:01:00Z","version":1}`)); err != nil {
			return err
		}
		mb, err := tx.Bucket([]byte("objects")).CreateBucketIfNotExists([]byte(store.KindMaintenance))
		if err != nil {
			return err
		}
		if err := mb.Put([]byte("w-old"), []byte(`{"id":"w-old"}`)); err != nil {
			return err
		}
		return mb.Put([]byte("w-t"), []byte(`{"id":"w-t","tenant":"t"}`))
	})

	ctx := t.Context()
	s := open(t, path, clock.NewFake(storetest.Start))
	for tenant, want := range map[string]string{model.DefaultTenant: "old", "t": "new"} {
		incs, err := s.ListIncidents(ctx, store.IncidentFilter{Tenant: tenant})
		if err != nil || len(incs) != 1 || incs[0].ID != want {
			t.Errorf("tenant %s's incidents = %+v, %v; want %s", tenant, incs, err, want)
		}
		if _, err := s.GetIncidentOf(ctx, tenant, want); err != nil {
			t.Errorf("GetIncidentOf(%s, %s): %v", tenant, want, err)
		}
	}
	for tenant, want := range map[string]string{model.DefaultTenant: "w-old", "t": "w-t"} {
		docs, err := s.ListObjectsOf(ctx, store.KindMaintenance, tenant)
		if err != nil || len(docs) != 1 || docs[want] == nil {
			t.Errorf("tenant %s's windows = %v, %v; want %s", tenant, docs, err, want)
		}
	}
}

// oldFile makes a store file as an older release left it: a new file, then
// old(tx) removes or writes what that release did not have or had.
func oldFile(t *testing.T, old func(tx *bbolt.Tx) error) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "store.db")
	s, err := bolt.Open(path, bolt.Options{Clock: clock.NewFake(storetest.Start)})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := bbolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(old); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// bucketsGone closes s, the store on path, and fails t for each of names
// still a bucket of the file: the layouts an Open moved away from.
func bucketsGone(t *testing.T, s *bolt.Store, path string, names ...string) {
	t.Helper()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := bbolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	_ = db.View(func(tx *bbolt.Tx) error {
		for _, name := range names {
			if tx.Bucket([]byte(name)) != nil {
				t.Errorf("bucket %s still there", name)
			}
		}
		return nil
	})
}
