package redis_test

import (
	"testing"

	goredis "github.com/redis/go-redis/v9"

	"github.com/mcpmon/mcpmon/pkg/store"
	"github.com/mcpmon/mcpmon/pkg/store/redis"
	"github.com/mcpmon/mcpmon/pkg/testpeers"
)

// TestEndpointsFromBeforeTenantsJoinTheDefaultTenant: endpoints written
// before the per-tenant index (or by a replica of an older version) are
// listed in the default tenant by IndexTenants, which New runs, and a second
// run finds nothing to do.
func TestEndpointsFromBeforeTenantsJoinTheDefaultTenant(t *testing.T) {
	url := testpeers.RedisURL(t)
	prefix := randomPrefix()
	s := open(t, url, redis.Options{Prefix: prefix})
	ctx := t.Context()
	if _, err := s.CreateEndpoint(ctx, store.Endpoint{ID: "new", Tenant: "a", Schedule: "@every 1m"}); err != nil {
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
	if eps, _ := s.ListEndpointsOf(ctx, store.DefaultTenant); len(eps) != 0 {
		t.Fatalf("before indexing the default tenant lists %+v", eps)
	}
	for _, want := range []int{1, 0} {
		n, err := s.IndexTenants(ctx)
		if err != nil || n != want {
			t.Fatalf("IndexTenants = %d, %v; want %d", n, err, want)
		}
	}
	eps, err := s.ListEndpointsOf(ctx, store.DefaultTenant)
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
