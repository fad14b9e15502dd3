package bolt_test

import (
	"path/filepath"
	"testing"

	"go.etcd.io/bbolt"

	"github.com/mcpmon/mcpmon/pkg/clock"
	"github.com/mcpmon/mcpmon/pkg/store"
	"github.com/mcpmon/mcpmon/pkg/store/bolt"
	"github.com/mcpmon/mcpmon/pkg/store/storetest"
)

// TestEndpointsFromBeforeTenantsJoinTheDefaultTenant: a store file written
// before the per-tenant index existed (its endpoints carry no tenant) gets
// the index at Open, every endpoint in the default tenant.
func TestEndpointsFromBeforeTenantsJoinTheDefaultTenant(t *testing.T) {
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
	err = db.Update(func(tx *bbolt.Tx) error {
		if err := tx.DeleteBucket([]byte("endpointsByTenant")); err != nil {
			return err
		}
		return tx.Bucket([]byte("endpoints")).Put([]byte("old"), []byte(`{"id":"old","name":"old","schedule":"@every 1m","version":1}`))
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	s = open(t, path, clock.NewFake(storetest.Start))
	eps, err := s.ListEndpointsOf(t.Context(), store.DefaultTenant)
	if err != nil || len(eps) != 1 || eps[0].ID != "old" {
		t.Fatalf("default tenant lists %+v, %v; want the endpoint from before tenants", eps, err)
	}
	if err := s.DeleteEndpoint(t.Context(), "old"); err != nil {
		t.Fatal(err)
	}
	if eps, _ := s.ListEndpointsOf(t.Context(), store.DefaultTenant); len(eps) != 0 {
		t.Fatalf("after delete the default tenant lists %+v", eps)
	}
}
