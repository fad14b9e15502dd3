package redis_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/clock"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/msg"
	"github.com/mcpmon/mcpmon/pkg/store"
	"github.com/mcpmon/mcpmon/pkg/store/redis"
	"github.com/mcpmon/mcpmon/pkg/store/redis/redistest"
	"github.com/mcpmon/mcpmon/pkg/testpeers"
)

// fillEverything writes every record kind of a running deployment on top
// of fill's: tenant endpoints, documents of the global and the prober
// kinds, deliveries, events, rollups (RecordVerdict folds them), audit.
func fillEverything(t *testing.T, s *redis.Store, n int, clk clock.Clock) {
	t.Helper()
	ctx := t.Context()
	fill(t, s, n, clk)
	w := clk.Now().Truncate(time.Minute)
	for i := range 5 {
		ep := fmt.Sprintf("acme-%d", i)
		if _, err := s.CreateEndpoint(ctx, model.Endpoint{ID: ep, Tenant: "acme", URL: "https://" + ep + ".example/mcp", Schedule: "@every 1m"}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range n {
		ep := fmt.Sprintf("ep-%03d", i)
		if err := s.PutObject(ctx, store.KindCatalog, store.ProberObjectID(ep, "eu"), []byte(`{"tools":[]}`)); err != nil {
			t.Fatal(err)
		}
		inc := msg.IncidentID(ep, w)
		if err := s.RecordDelivery(ctx, inc, model.Delivery{Kind: "open", Sink: "hook", Outcome: model.DeliveryDelivered, Attempts: 1}); err != nil {
			t.Fatal(err)
		}
		ev := model.ChangeEvent{EndpointID: ep, Kind: "catalog_info", Fingerprint: model.EventFingerprint(ep, "catalog_info", "a", "b"),
			ObservedAt: w, Message: "changed", Before: "a", After: "b"}
		if _, err := s.AppendEvents(ctx, ev); err != nil {
			t.Fatal(err)
		}
	}
	m := model.Maintenance{ID: "m1", Tenant: "acme", Start: w, End: w.Add(time.Hour)}
	doc, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.PutObject(ctx, store.KindMaintenance, "m1", doc); err != nil {
		t.Fatal(err)
	}
	if err := s.AppendAudit(ctx, store.AuditEntry{Tenant: "acme", Time: w, Action: "create", ObjectKind: "endpoint", ObjectID: "acme-0"}); err != nil {
		t.Fatal(err)
	}
}

// TestMigrateOneSlotToCluster copies a single Redis's deployment into the
// sharded layout of the real cluster: interrupted after its first batch
// and resumed, the count check passes per kind and the sharded store reads
// back every record kind; a second run is a no-op that checks again; a
// dry run writes nothing; a target another deployment wrote is refused;
// a record lost in the target fails the count check, naming its kind.
func TestMigrateOneSlotToCluster(t *testing.T) {
	from := testpeers.RedisURL(t)
	to := testpeers.RedisClusterURL(t)
	ctx := t.Context()
	clk := clock.NewFake(time.Date(2026, 12, 1, 10, 0, 30, 0, time.UTC))
	fromPrefix, toPrefix := redistest.RandomPrefix(), redistest.RandomPrefix()
	// As a running mcpmon left it: with its deployment marker, which the
	// target takes over.
	src := open(t, from, redis.Options{Prefix: fromPrefix, Clock: clk, WatchDeployment: true})
	const n = 40
	fillEverything(t, src, n, clk)
	t.Cleanup(func() { redistest.Flush(t, to, toPrefix) })

	// A dry run counts and writes nothing.
	rep, err := redis.Migrate(ctx, from, to, redis.MigrateOptions{FromPrefix: fromPrefix, ToPrefix: toPrefix, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Keys == 0 || len(rep.Counts) == 0 {
		t.Fatalf("dry run counted %d keys, %d kinds", rep.Keys, len(rep.Counts))
	}
	for addr, n := range keysPerPrimary(t, clusterClient(t, to), toPrefix) {
		if n != 0 {
			t.Fatalf("a dry run wrote %d keys to %s", n, addr)
		}
	}

	// Interrupted after its first batch.
	cctx, cancel := context.WithCancel(ctx)
	batches := 0
	_, err = redis.Migrate(cctx, from, to, redis.MigrateOptions{FromPrefix: fromPrefix, ToPrefix: toPrefix, Batch: 20, Progress: func(redis.MigrateProgress) {
		batches++
		cancel()
	}})
	cancel()
	if !errors.Is(err, context.Canceled) || batches != 1 {
		t.Fatalf("interrupted run: %v after %d batches, want context.Canceled after 1", err, batches)
	}
	rep, err = redis.Migrate(ctx, from, to, redis.MigrateOptions{FromPrefix: fromPrefix, ToPrefix: toPrefix, Batch: 20})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Resumed {
		t.Fatal("the second run did not resume the checkpoint")
	}
	want := map[string]int64{"endpoints": n + 5, "windows": n, "verdicts": n, "incidents": n, "ledger": n, "deliveries": n, "events": n, "objects:catalog": n, "objects:maintenance": 1, "audit": 1}
	got := map[string]redis.KindCount{}
	for _, c := range rep.Counts {
		got[c.Kind] = c
	}
	for kind, w := range want {
		if c := got[kind]; c.Source != w || c.Target != w {
			t.Errorf("count of %s = %+v, want %d on both sides", kind, c, w)
		}
	}

	dst := open(t, to, redis.Options{Prefix: toPrefix, Clock: clk})
	// The deployment moved: a process started on the target a day later
	// holds the source's marker, so the store's creation time stays put.
	later := open(t, to, redis.Options{Prefix: toPrefix, Clock: clock.NewFake(clk.Now().Add(24 * time.Hour)), WatchDeployment: true})
	if err := later.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	if got, want := later.Created(), src.Created(); want.IsZero() || !got.Equal(want) {
		t.Fatalf("target's deployment created %v after migrate, want the source's %v", got, want)
	}
	eps, err := dst.ListEndpoints(ctx)
	if err != nil || len(eps) != n+5 {
		t.Fatalf("ListEndpoints after migrate: %d, %v", len(eps), err)
	}
	acme, err := dst.ListEndpointsOf(ctx, "acme")
	if err != nil || len(acme) != 5 {
		t.Fatalf("acme's endpoints after migrate: %d, %v", len(acme), err)
	}
	// The tenant quota counts the copied endpoints.
	if _, err := dst.CreateEndpointWithin(ctx, model.Endpoint{ID: "acme-new", Tenant: "acme", URL: "https://x.example/mcp"}, 5); !errors.Is(err, store.ErrQuota) {
		t.Fatalf("create past acme's quota of 5 after migrate: %v, want ErrQuota", err)
	}
	refs, err := dst.OpenWindows(ctx, clk.Now().Add(time.Hour))
	if err != nil || len(refs) != n {
		t.Fatalf("OpenWindows after migrate: %d, %v", len(refs), err)
	}
	w := clk.Now().Truncate(time.Minute)
	for _, i := range []int{0, 17, n - 1} {
		ep := fmt.Sprintf("ep-%03d", i)
		if vs, err := dst.ListVerdicts(ctx, ep, 0); err != nil || len(vs) != 1 {
			t.Fatalf("verdicts of %s after migrate: %v, %v", ep, vs, err)
		}
		inc, err := dst.GetIncident(ctx, msg.IncidentID(ep, w))
		if err != nil || inc.EndpointID != ep {
			t.Fatalf("incident of %s after migrate: %+v, %v", ep, inc, err)
		}
		if ds, err := dst.Deliveries(ctx, inc.ID); err != nil || len(ds) != 1 {
			t.Fatalf("deliveries of %s after migrate: %v, %v", inc.ID, ds, err)
		}
		if st, err := dst.Claim(ctx, msg.LedgerKey(ep, inc.ID, "open", "hook"), "b", time.Minute); err != nil || st != store.ClaimHeld {
			t.Fatalf("ledger key of %s after migrate: %v, %v; want held by its owner", ep, st, err)
		}
		if _, err := dst.GetObject(ctx, store.KindCatalog, store.ProberObjectID(ep, "eu")); err != nil {
			t.Fatalf("catalog of %s after migrate: %v", ep, err)
		}
		if evs, err := dst.ListEvents(ctx, ep, store.EventFilter{}); err != nil || len(evs) != 1 {
			t.Fatalf("events of %s after migrate: %v, %v", ep, evs, err)
		}
	}
	if ms, err := dst.ListObjectsOf(ctx, store.KindMaintenance, "acme"); err != nil || len(ms) != 1 {
		t.Fatalf("acme's maintenance after migrate: %v, %v", ms, err)
	}
	if es, err := dst.ListAudit(ctx, store.AuditFilter{Tenant: "acme"}); err != nil || len(es) != 1 {
		t.Fatalf("acme's audit after migrate: %v, %v", es, err)
	}

	// Again: nothing left to copy, the counts still agree.
	rep, err = redis.Migrate(ctx, from, to, redis.MigrateOptions{FromPrefix: fromPrefix, ToPrefix: toPrefix})
	if err != nil || !rep.Resumed || rep.Keys != 0 {
		t.Fatalf("re-run after the end: %+v, %v; want resumed, no keys copied", rep, err)
	}

	// Another deployment's source is refused: it would mix two fleets.
	other := redistest.RandomPrefix()
	o := open(t, from, redis.Options{Prefix: other, Clock: clk})
	fill(t, o, 1, clk)
	if _, err := redis.Migrate(ctx, from, to, redis.MigrateOptions{FromPrefix: other, ToPrefix: toPrefix}); !errors.Is(err, redis.ErrTargetInUse) {
		t.Fatalf("migrate another source into the same target: %v, want ErrTargetInUse", err)
	}

	// A record lost in the target fails the check, naming its kind.
	if err := dst.DeleteObject(ctx, store.KindMaintenance, "m1"); err != nil {
		t.Fatal(err)
	}
	_, err = redis.Migrate(ctx, from, to, redis.MigrateOptions{FromPrefix: fromPrefix, ToPrefix: toPrefix})
	if !errors.Is(err, redis.ErrCountMismatch) || !strings.Contains(err.Error(), "objects:maintenance") {
		t.Fatalf("migrate check with a record lost: %v, want ErrCountMismatch naming objects:maintenance", err)
	}
}

// TestMigrateRefusesAnUnshardedTarget: a single node cannot hold the
// sharded layout.
func TestMigrateRefusesAnUnshardedTarget(t *testing.T) {
	url := testpeers.RedisURL(t)
	_, err := redis.Migrate(t.Context(), url, url, redis.MigrateOptions{FromPrefix: redistest.RandomPrefix(), ToPrefix: redistest.RandomPrefix()})
	if !errors.Is(err, redis.ErrNotSharded) {
		t.Fatalf("migrate to a single node: %v, want ErrNotSharded", err)
	}
}

// TestMigrateOneSlotClusterInPlace: a cluster's one-slot data ("{p}:") is
// moved to the sharded layout of the same prefix on the same cluster, and
// the sharded store, which refused to start beside the old data, starts
// once the migration finished.
func TestMigrateOneSlotClusterInPlace(t *testing.T) {
	url := testpeers.RedisClusterURL(t)
	ctx := t.Context()
	clk := clock.NewFake(time.Date(2026, 12, 1, 10, 0, 30, 0, time.UTC))
	prefix := redistest.RandomPrefix()
	oneSlot := "{" + strings.TrimSuffix(prefix, ":") + "}:"
	old := open(t, url, redis.Options{Prefix: oneSlot, Clock: clk, WatchDeployment: true})
	fill(t, old, 20, clk)
	t.Cleanup(func() { redistest.Flush(t, url, prefix) })
	// Refused as a serving process would be: it leaves no deployment
	// marker behind, which the migration would take for another
	// deployment's data.
	if _, err := redis.New(ctx, url, redis.Options{Prefix: prefix, WatchDeployment: true}); !errors.Is(err, redis.ErrOneSlotData) {
		t.Fatalf("sharded store beside one-slot data: %v, want ErrOneSlotData", err)
	}
	if _, err := redis.Migrate(ctx, url, url, redis.MigrateOptions{FromPrefix: oneSlot, ToPrefix: prefix}); err != nil {
		t.Fatal(err)
	}
	s := open(t, url, redis.Options{Prefix: prefix, Clock: clk, WatchDeployment: true})
	if err := s.Ping(ctx); err != nil {
		t.Fatalf("Ping of the sharded store after the migration: %v", err)
	}
	if eps, err := s.ListEndpoints(ctx); err != nil || len(eps) != 20 {
		t.Fatalf("endpoints after the migration in place: %d, %v", len(eps), err)
	}
}
