package bolt_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/clock"
	"github.com/mcpmon/mcpmon/pkg/store"
	"github.com/mcpmon/mcpmon/pkg/store/bolt"
	"github.com/mcpmon/mcpmon/pkg/store/storetest"
)

// TestSweepPrunesIdleTenantsAudit: the sweeper deletes audit entries past
// the TTL of a tenant that appends nothing more (an append prunes only its
// own tenant), and keeps young ones.
func TestSweepPrunesIdleTenantsAudit(t *testing.T) {
	ctx := t.Context()
	clk := clock.NewFake(storetest.Start)
	s, err := bolt.Open(filepath.Join(t.TempDir(), "store.db"), bolt.Options{Clock: clk, SweepInterval: -1, AuditTTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	entry := func(tenant string) store.AuditEntry {
		return store.AuditEntry{Time: clk.Now(), Tenant: tenant, Actor: store.AuditActor{KeyID: "k"}, Action: "create", ObjectKind: "endpoint", Status: 201}
	}
	for _, tenant := range []string{"idle", "idle", "busy"} {
		if err := s.AppendAudit(ctx, entry(tenant)); err != nil {
			t.Fatal(err)
		}
	}
	clk.Advance(30 * time.Minute)
	if err := s.AppendAudit(ctx, entry("busy")); err != nil {
		t.Fatal(err)
	}
	if n, err := s.Sweep(ctx); err != nil || n != 0 {
		t.Fatalf("sweep of young entries deleted %d, %v", n, err)
	}
	clk.Advance(31 * time.Minute)
	if n, err := s.Sweep(ctx); err != nil || n != 3 {
		t.Fatalf("sweep deleted %d, %v; want the 3 entries older than 1h", n, err)
	}
	got, err := s.ListAudit(ctx, store.AuditFilter{Tenant: "busy", Since: storetest.Start})
	if err != nil || len(got) != 1 {
		t.Fatalf("busy's log after the sweep = %v, %v; want its young entry", got, err)
	}
}
