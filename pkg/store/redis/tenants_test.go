package redis_test

import (
	"errors"
	"testing"

	goredis "github.com/redis/go-redis/v9"

	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/store"
	"github.com/mcpmon/mcpmon/pkg/store/redis"
	"github.com/mcpmon/mcpmon/pkg/store/redis/redistest"
	"github.com/mcpmon/mcpmon/pkg/testpeers"
)

// TestEndpointsFromBeforeTenantsJoinTheDefaultTenant: endpoints written
// before the per-tenant index (or by a replica of an older version) are
// listed in the default tenant by IndexTenants, which New runs, and a second
// run finds nothing to do.
func TestEndpointsFromBeforeTenantsJoinTheDefaultTenant(t *testing.T) {
	url := testpeers.RedisURL(t)
	prefix := redistest.RandomPrefix()
	s := open(t, url, redis.Options{Prefix: prefix})
	ctx := t.Context()
	if _, err := s.CreateEndpoint(ctx, model.Endpoint{ID: "new", Tenant: "a", Schedule: "@every 1m"}); err != nil {
		t.Fatal(err)
	}
	opts, err := goredis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	rdb := goredis.NewClient(opts)
	defer rdb.Close()
	if err := rdb.HSet(ctx, prefix+"endpoints", "old", `{"id":"old","name":"old","schedule":"@every 1m","version":1}`).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.HSet(ctx, prefix+"endpoint_versions", "old", 1).Err(); err != nil {
		t.Fatal(err)
	}
	if eps, _ := s.ListEndpointsOf(ctx, model.DefaultTenant); len(eps) != 0 {
		t.Fatalf("before indexing the default tenant lists %+v", eps)
	}
	for _, want := range []int{1, 0} {
		n, err := s.IndexTenants(ctx)
		if err != nil || n != want {
			t.Fatalf("IndexTenants = %d, %v; want %d", n, err, want)
		}
	}
	eps, err := s.ListEndpointsOf(ctx, model.DefaultTenant)
	if err != nil || len(eps) != 1 || eps[0].ID != "old" {
		t.Fatalf("default tenant lists %+v, %v; want the endpoint from before tenants", eps, err)
	}
	if eps, _ := s.ListEndpointsOf(ctx, "a"); len(eps) != 1 || eps[0].ID != "new" {
		t.Fatalf("tenant a lists %+v", eps)
	}
	if err := s.DeleteEndpoint(ctx, "old"); err != nil {
		t.Fatal(err)
	}
	if n, _ := rdb.SCard(ctx, prefix+"tenant_endpoints:default").Result(); n != 0 {
		t.Fatalf("the default tenant's set holds %d after the delete", n)
	}
}

// TestEndpointPagesAfterAnUpgrade: endpoints written before the sorted
// per-tenant index (or by an older replica) are paged once IndexTenants,
// which New runs, has filled it; a second run finds nothing to do.
func TestEndpointPagesAfterAnUpgrade(t *testing.T) {
	url := testpeers.RedisURL(t)
	prefix := redistest.RandomPrefix()
	s := open(t, url, redis.Options{Prefix: prefix})
	ctx := t.Context()
	for _, id := range []string{"a1", "a2", "a3"} {
		if _, err := s.CreateEndpoint(ctx, model.Endpoint{ID: id, Tenant: "a", Schedule: "@every 1m"}); err != nil {
			t.Fatal(err)
		}
	}
	opts, err := goredis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	rdb := goredis.NewClient(opts)
	defer rdb.Close()
	// What a store of the previous version holds: no sorted set, no count.
	if err := rdb.Del(ctx, prefix+"tenant_endpoint_ids:a", prefix+"endpoint_ids_indexed").Err(); err != nil {
		t.Fatal(err)
	}
	if page, _ := s.ListEndpointsPage(ctx, "a", "", 10); len(page.Endpoints) != 0 {
		t.Fatalf("before indexing tenant a pages %+v", page)
	}
	for range 2 {
		if _, err := s.IndexTenants(ctx); err != nil {
			t.Fatal(err)
		}
	}
	page, err := s.ListEndpointsPage(ctx, "a", "a1", 10)
	if err != nil || len(page.Endpoints) != 2 || page.Endpoints[0].ID != "a2" || page.Next != "" {
		t.Fatalf("tenant a after a1 = %+v, %v; want a2, a3 and no cursor", page, err)
	}
	if n, _ := rdb.Get(ctx, prefix+"endpoint_ids_indexed").Int(); n != 3 {
		t.Fatalf("indexed count = %d, want 3", n)
	}
	if err := s.DeleteEndpoint(ctx, "a2"); err != nil {
		t.Fatal(err)
	}
	if n, _ := rdb.ZCard(ctx, prefix+"tenant_endpoint_ids:a").Result(); n != 2 {
		t.Fatalf("the sorted set holds %d after a delete, want 2", n)
	}
	if n, _ := rdb.Get(ctx, prefix+"endpoint_ids_indexed").Int(); n != 2 {
		t.Fatalf("indexed count = %d after a delete, want 2", n)
	}
}

// TestIncidentsAndWindowsFromBeforeTheIndexJoinIt: incidents and
// maintenance windows written before their tenant index (or by a replica
// of an older version) are listed under their own tenant by IndexOwners,
// which New runs; a second run finds nothing to do. Their tenant's
// foreign reads stay a plain not-found.
func TestIncidentsAndWindowsFromBeforeTheIndexJoinIt(t *testing.T) {
	url := testpeers.RedisURL(t)
	prefix := redistest.RandomPrefix()
	s := open(t, url, redis.Options{Prefix: prefix})
	ctx := t.Context()
	opts, err := goredis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	rdb := goredis.NewClient(opts)
	defer rdb.Close()
	for _, kv := range [][3]string{
		{"incidents", "old", `{"id":"old","endpointId":"e","state":"open","openedWindow":"2026-03-01T12:00:00Z","version":1}`},
		{"incidents", "new", `{"id":"new","endpointId":"e","tenant":"t","state":"open","openedWindow":"2026-03-01T12:01:00Z","version":1}`},
		{"objects:" + model.MaintenanceKind, "w-old", `{"id":"w-old"}`},
		{"objects:" + model.MaintenanceKind, "w-t", `{"id":"w-t","tenant":"t"}`},
	} {
		if err := rdb.HSet(ctx, prefix+kv[0], kv[1], kv[2]).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if incs, _ := s.ListIncidents(ctx, store.IncidentFilter{Tenant: "t"}); len(incs) != 0 {
		t.Fatalf("before indexing tenant t lists %+v", incs)
	}
	for _, want := range []int{4, 0} {
		n, err := s.IndexOwners(ctx)
		if err != nil || n != want {
			t.Fatalf("IndexOwners = %d, %v; want %d", n, err, want)
		}
	}
	for tenant, want := range map[string]string{model.DefaultTenant: "old", "t": "new"} {
		incs, err := s.ListIncidents(ctx, store.IncidentFilter{Tenant: tenant})
		if err != nil || len(incs) != 1 || incs[0].ID != want {
			t.Errorf("tenant %s's incidents = %+v, %v; want %s", tenant, incs, err, want)
		}
	}
	for tenant, want := range map[string]string{model.DefaultTenant: "w-old", "t": "w-t"} {
		docs, err := s.ListObjectsOf(ctx, model.MaintenanceKind, tenant)
		if err != nil || len(docs) != 1 || docs[want] == nil {
			t.Errorf("tenant %s's windows = %v, %v; want %s", tenant, docs, err, want)
		}
	}
	if _, err := s.GetObjectOf(ctx, model.MaintenanceKind, "t", "w-old"); !errors.Is(err, model.ErrNotFound) {
		t.Errorf("the default tenant's window read as tenant t: %v", err)
	}
}

// TestForeignRecordsAreNotRead: ownership is decided from the owners hash
// before the record: another tenant's undecodable record is a plain
// not-found, and the tenant's own lists never read it.
func TestForeignRecordsAreNotRead(t *testing.T) {
	url := testpeers.RedisURL(t)
	prefix := redistest.RandomPrefix()
	s := open(t, url, redis.Options{Prefix: prefix})
	ctx := t.Context()
	if _, err := s.CreateEndpoint(ctx, model.Endpoint{ID: "eb", Tenant: "b", Schedule: "@every 1m"}); err != nil {
		t.Fatal(err)
	}
	if err := s.SaveTracker(ctx, model.Tracker{EndpointID: "eb"}, model.Incident{ID: "ib", EndpointID: "eb", Tenant: "b", State: model.IncidentOpen}); err != nil {
		t.Fatal(err)
	}
	opts, err := goredis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	rdb := goredis.NewClient(opts)
	defer rdb.Close()
	if err := rdb.HSet(ctx, prefix+"endpoints", "eb", "{broken").Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.HSet(ctx, prefix+"incidents", "ib", "{broken").Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetEndpointOf(ctx, "a", "eb"); !errors.Is(err, model.ErrNotFound) {
		t.Errorf("tenant b's endpoint read as a: %v, want ErrNotFound without decoding it", err)
	}
	if _, err := s.GetEndpointOf(ctx, "b", "eb"); err == nil || errors.Is(err, model.ErrNotFound) {
		t.Errorf("tenant b's broken endpoint read as b: %v, want the decode error", err)
	}
	if _, err := s.GetIncidentOf(ctx, "a", "ib"); !errors.Is(err, model.ErrNotFound) {
		t.Errorf("tenant b's incident read as a: %v, want ErrNotFound without decoding it", err)
	}
	if incs, err := s.ListIncidents(ctx, store.IncidentFilter{Tenant: "a"}); err != nil || len(incs) != 0 {
		t.Errorf("tenant a's incidents = %v, %v; want none, without decoding tenant b's", incs, err)
	}
}
