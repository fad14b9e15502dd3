package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/clock"
	"github.com/mcpmon/mcpmon/pkg/store"
)

func auditEntry(tenant string, at time.Time, action, objectID string) store.AuditEntry {
	return store.AuditEntry{
		Time: at, Tenant: tenant, Actor: store.AuditActor{KeyID: "k1", Name: "ci"},
		Action: action, ObjectKind: "endpoint", ObjectID: objectID, RequestID: "req-" + objectID,
		Status: 200, Summary: "fields: name",
	}
}

func auditObjects(es []store.AuditEntry) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.ObjectID
	}
	return out
}

func sameStrings(t *testing.T, what string, got, want []string) {
	t.Helper()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("%s = %v, want %v", what, got, want)
	}
}

// testAuditOrder: newest first, entries of the same instant in reverse
// append order, IDs unique and ordered like the log, tenants separate, the
// limit honoured, and the entry read back as written.
func testAuditOrder(t *testing.T, s store.Store, clk *clock.Fake) {
	ctx := t.Context()
	got, err := s.ListAudit(ctx, store.AuditFilter{Tenant: "acme"})
	emptyList(t, "ListAudit", got, err)

	t0 := clk.Now()
	must(t, s.AppendAudit(ctx, auditEntry("acme", t0, "create", "a")))
	must(t, s.AppendAudit(ctx, auditEntry("acme", t0.Add(2*time.Second), "update", "c")))
	must(t, s.AppendAudit(ctx, auditEntry("acme", t0.Add(time.Second), "update", "b1")))
	must(t, s.AppendAudit(ctx, auditEntry("acme", t0.Add(time.Second), "update", "b2"))) // same instant, later append
	must(t, s.AppendAudit(ctx, auditEntry("other", t0.Add(3*time.Second), "delete", "x")))

	all, err := s.ListAudit(ctx, store.AuditFilter{Tenant: "acme"})
	must(t, err)
	sameStrings(t, "acme's log", auditObjects(all), []string{"c", "b2", "b1", "a"})
	seen := map[string]bool{}
	for i, e := range all {
		if e.ID == "" || seen[e.ID] {
			t.Fatalf("entry %d has ID %q: want unique non-empty IDs", i, e.ID)
		}
		seen[e.ID] = true
		if i > 0 && e.ID >= all[i-1].ID {
			t.Fatalf("IDs %q then %q: want them descending like the log", all[i-1].ID, e.ID)
		}
	}
	want := auditEntry("acme", t0.Add(2*time.Second), "update", "c")
	want.ID = all[0].ID
	sameJSON(t, all[0], want)

	other, err := s.ListAudit(ctx, store.AuditFilter{Tenant: "other"})
	must(t, err)
	sameStrings(t, "other's log", auditObjects(other), []string{"x"})
	none, err := s.ListAudit(ctx, store.AuditFilter{Tenant: "nobody"})
	emptyList(t, "ListAudit of a tenant without entries", none, err)

	two, err := s.ListAudit(ctx, store.AuditFilter{Tenant: "acme", Limit: 2})
	must(t, err)
	sameStrings(t, "limit 2", auditObjects(two), []string{"c", "b2"})

	if err := s.AppendAudit(ctx, store.AuditEntry{Time: t0, Action: "create"}); err == nil {
		t.Fatal("AppendAudit without a tenant succeeded")
	}
}

// testAuditRange: Since is inclusive, Until exclusive.
func testAuditRange(t *testing.T, s store.Store, clk *clock.Fake) {
	ctx := t.Context()
	t0 := clk.Now()
	for i := range 5 {
		must(t, s.AppendAudit(ctx, auditEntry("acme", t0.Add(time.Duration(i)*time.Minute), "update", fmt.Sprint(i))))
	}
	clk.Advance(10 * time.Minute)
	tests := []struct {
		name         string
		since, until time.Time
		limit        int
		want         []string
	}{
		{"all", time.Time{}, time.Time{}, 0, []string{"4", "3", "2", "1", "0"}},
		{"since inclusive", t0.Add(2 * time.Minute), time.Time{}, 0, []string{"4", "3", "2"}},
		{"until exclusive", time.Time{}, t0.Add(2 * time.Minute), 0, []string{"1", "0"}},
		{"both", t0.Add(time.Minute), t0.Add(3 * time.Minute), 0, []string{"2", "1"}},
		{"both with a limit", t0.Add(time.Minute), t0.Add(4 * time.Minute), 2, []string{"3", "2"}},
		{"until before everything", time.Time{}, t0, 0, []string{}},
		{"since after everything", t0.Add(5 * time.Minute), time.Time{}, 0, []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.ListAudit(ctx, store.AuditFilter{Tenant: "acme", Since: tt.since, Until: tt.until, Limit: tt.limit})
			must(t, err)
			sameStrings(t, "entries", auditObjects(got), tt.want)
		})
	}
}

// testAuditRetention: an entry older than the audit TTL is no longer
// listed, whether or not anything was appended since, and an append past
// the TTL keeps the young entries.
func testAuditRetention(t *testing.T, s store.Store, clk *clock.Fake) {
	ctx := t.Context()
	t0 := clk.Now()
	must(t, s.AppendAudit(ctx, auditEntry("acme", t0, "create", "old")))
	must(t, s.AppendAudit(ctx, auditEntry("idle", t0, "create", "idle-old")))
	clk.Advance(time.Hour)
	must(t, s.AppendAudit(ctx, auditEntry("acme", clk.Now(), "update", "young")))

	clk.Set(t0.Add(store.DefaultAuditTTL)) // exactly the TTL: still kept
	got, err := s.ListAudit(ctx, store.AuditFilter{Tenant: "acme"})
	must(t, err)
	sameStrings(t, "at the TTL", auditObjects(got), []string{"young", "old"})

	clk.Set(t0.Add(store.DefaultAuditTTL + time.Second))
	got, err = s.ListAudit(ctx, store.AuditFilter{Tenant: "acme"})
	must(t, err)
	sameStrings(t, "past the TTL, before any append", auditObjects(got), []string{"young"})
	idle, err := s.ListAudit(ctx, store.AuditFilter{Tenant: "idle"})
	emptyList(t, "an idle tenant's log past the TTL", idle, err)

	must(t, s.AppendAudit(ctx, auditEntry("acme", clk.Now(), "delete", "newest")))
	got, err = s.ListAudit(ctx, store.AuditFilter{Tenant: "acme", Since: t0})
	must(t, err)
	sameStrings(t, "past the TTL, after an append", auditObjects(got), []string{"newest", "young"})

	clk.Set(t0.Add(time.Hour + store.DefaultAuditTTL + time.Second))
	got, err = s.ListAudit(ctx, store.AuditFilter{Tenant: "acme"})
	must(t, err)
	sameStrings(t, "the young one past its TTL", auditObjects(got), []string{"newest"})
}
