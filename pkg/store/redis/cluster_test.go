package redis_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/mcpmon/mcpmon/pkg/clock"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/msg"
	"github.com/mcpmon/mcpmon/pkg/store"
	"github.com/mcpmon/mcpmon/pkg/store/redis"
	"github.com/mcpmon/mcpmon/pkg/store/redis/redistest"
	"github.com/mcpmon/mcpmon/pkg/store/storetest"
	"github.com/mcpmon/mcpmon/pkg/testpeers"
)

// TestConformanceOnClusterOneSlot: a prefix with its own hash tag keeps
// every key in that slot, and the suite still passes.
func TestConformanceOnClusterOneSlot(t *testing.T) {
	url := testpeers.RedisClusterURL(t)
	storetest.Run(t, func(t *testing.T, clk *clock.Fake) store.Store {
		p := redistest.RandomPrefix()
		return open(t, url, redis.Options{Clock: clk, LeasesOnClock: true, Prefix: "{" + strings.TrimSuffix(p, ":") + "}:"})
	})
}

// clusterClient dials the test cluster directly, to look at where keys are.
func clusterClient(t *testing.T, url string) *goredis.ClusterClient {
	t.Helper()
	addrs, ok := redistest.ClusterAddrs(url)
	if !ok {
		t.Fatalf("%s is not a redis+cluster:// URL", url)
	}
	c := goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: addrs})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// keysPerPrimary counts the keys under prefix on each primary, with or
// without the prefix wrapped in a hash tag.
func keysPerPrimary(t *testing.T, c *goredis.ClusterClient, prefix string) map[string]int {
	t.Helper()
	ctx := t.Context()
	counts := map[string]int{}
	ch := make(chan [2]any, 16)
	err := c.ForEachMaster(ctx, func(ctx context.Context, node *goredis.Client) error {
		n := 0
		iter := node.Scan(ctx, 0, "*"+strings.TrimSuffix(prefix, ":")+"*", 1000).Iterator()
		for iter.Next(ctx) {
			n++
		}
		ch <- [2]any{node.Options().Addr, n}
		return iter.Err()
	})
	close(ch)
	if err != nil {
		t.Fatal(err)
	}
	for kv := range ch {
		counts[kv[0].(string)] = kv[1].(int)
	}
	return counts
}

// fill writes what a running fleet writes for n endpoints: the endpoint, a
// result in its window, a verdict, a tracker with an incident, an event and
// a ledger key.
func fill(t *testing.T, s *redis.Store, n int, clk clock.Clock) {
	t.Helper()
	ctx := t.Context()
	w := clk.Now().Truncate(time.Minute)
	for i := range n {
		ep := fmt.Sprintf("ep-%03d", i)
		if _, err := s.CreateEndpoint(ctx, model.Endpoint{ID: ep, URL: "https://" + ep + ".example/mcp", Schedule: "@every 1m"}); err != nil {
			t.Fatal(err)
		}
		r := msg.ProbeResult{EndpointID: ep, ProbeRunID: "run-" + ep, Slot: w, Region: "eu"}
		if _, err := s.AddWindowResult(ctx, w, r); err != nil {
			t.Fatal(err)
		}
		if err := s.PutLatestResult(ctx, r); err != nil {
			t.Fatal(err)
		}
		if _, err := s.RecordVerdict(ctx, msg.Verdict{EndpointID: ep, Window: w.Add(-time.Minute), WindowSecs: 60, State: msg.StateDown}); err != nil {
			t.Fatal(err)
		}
		inc := model.Incident{ID: msg.IncidentID(ep, w), EndpointID: ep, State: model.IncidentOpen, OpenedWindow: w}
		if err := s.SaveTracker(ctx, model.Tracker{EndpointID: ep, OpenIncidentID: inc.ID}, inc); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Claim(ctx, msg.LedgerKey(ep, inc.ID, "open", "hook"), "a", time.Minute); err != nil {
			t.Fatal(err)
		}
	}
}

// TestClusterSpreadsEndpoints: 100 endpoints' keys land on all three
// primaries, none holding more than half of them, and every read that
// spans endpoints still sees all 100.
func TestClusterSpreadsEndpoints(t *testing.T) {
	url := testpeers.RedisClusterURL(t)
	prefix := redistest.RandomPrefix()
	clk := clock.NewFake(time.Date(2026, 12, 1, 10, 0, 30, 0, time.UTC))
	s := open(t, url, redis.Options{Prefix: prefix, Clock: clk})
	fill(t, s, 100, clk)

	counts := keysPerPrimary(t, clusterClient(t, url), prefix)
	total := 0
	for _, n := range counts {
		total += n
	}
	if len(counts) != 3 {
		t.Fatalf("keys per primary %v: want three primaries", counts)
	}
	for addr, n := range counts {
		if n == 0 || n > total/2 {
			t.Errorf("primary %s holds %d of %d keys (all: %v)", addr, n, total, counts)
		}
	}
	t.Logf("keys per primary: %v", counts)

	ctx := t.Context()
	eps, err := s.ListEndpoints(ctx)
	if err != nil || len(eps) != 100 || eps[0].ID != "ep-000" || eps[99].ID != "ep-099" {
		t.Fatalf("ListEndpoints: %d endpoints, %v", len(eps), err)
	}
	wins, err := s.OpenWindows(ctx, clk.Now().Add(time.Hour))
	if err != nil || len(wins) != 100 {
		t.Fatalf("OpenWindows: %d, %v", len(wins), err)
	}
	page, err := s.ListEndpointsPage(ctx, model.DefaultTenant, "ep-049", 10)
	if err != nil || len(page.Endpoints) != 10 || page.Endpoints[0].ID != "ep-050" || page.Next != "ep-059" {
		t.Fatalf("page after ep-049: %d endpoints from %v, next %q, %v", len(page.Endpoints), page.Endpoints, page.Next, err)
	}
	incs, err := s.ListIncidents(ctx, store.IncidentFilter{Limit: 1000})
	if err != nil || len(incs) != 100 {
		t.Fatalf("ListIncidents: %d, %v", len(incs), err)
	}
	if n, err := s.CountOpenIncidents(ctx); err != nil || n != 100 {
		t.Fatalf("CountOpenIncidents = %d, %v", n, err)
	}
}

// TestClusterRefusesOneSlotData: a cluster whose data sits in the one-slot
// layout of the same prefix is not silently started empty beside it.
func TestClusterRefusesOneSlotData(t *testing.T) {
	url := testpeers.RedisClusterURL(t)
	prefix := redistest.RandomPrefix()
	old := open(t, url, redis.Options{Prefix: "{" + strings.TrimSuffix(prefix, ":") + "}:"})
	if _, err := old.CreateEndpoint(t.Context(), model.Endpoint{ID: "ep"}); err != nil {
		t.Fatal(err)
	}
	s, err := redis.New(t.Context(), url, redis.Options{Prefix: prefix})
	if err == nil {
		_ = s.Close()
		t.Fatal("New started the sharded layout beside one-slot data")
	}
	if !errors.Is(err, redis.ErrOneSlotData) {
		t.Fatalf("New = %v, want ErrOneSlotData", err)
	}
}

// TestClusterQuotaSettlesAStoppedCreate: a reservation left by a create
// that stopped before its endpoint was written holds a place only until it
// is a minute old; then the next create at the limit takes the place.
func TestClusterQuotaSettlesAStoppedCreate(t *testing.T) {
	url := testpeers.RedisClusterURL(t)
	prefix := redistest.RandomPrefix()
	clk := clock.NewFake(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC))
	s := open(t, url, redis.Options{Prefix: prefix, Clock: clk})
	ctx := t.Context()
	if _, err := s.CreateEndpointWithin(ctx, model.Endpoint{ID: "a", Schedule: "@every 1m"}, 2); err != nil {
		t.Fatal(err)
	}
	// What a create leaves when it stops between reserving and writing.
	quota := prefix + "{g}:tenant_quota:" + model.DefaultTenant
	if err := clusterClient(t, url).ZAdd(ctx, quota, goredis.Z{Score: float64(clk.Now().UnixMilli()), Member: "ghost"}).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateEndpointWithin(ctx, model.Endpoint{ID: "b", Schedule: "@every 1m"}, 2); !errors.Is(err, store.ErrQuota) {
		t.Fatalf("create beside a fresh reservation = %v, want ErrQuota", err)
	}
	clk.Advance(2 * time.Minute)
	if _, err := s.CreateEndpointWithin(ctx, model.Endpoint{ID: "b", Schedule: "@every 1m"}, 2); err != nil {
		t.Fatalf("create once the reservation is stale: %v", err)
	}
	if _, err := s.CreateEndpointWithin(ctx, model.Endpoint{ID: "c", Schedule: "@every 1m"}, 2); !errors.Is(err, store.ErrQuota) {
		t.Fatalf("third create within 2 = %v, want ErrQuota", err)
	}
}

// keyRecorder remembers the key (first argument) of every command sent.
type keyRecorder struct {
	mu   sync.Mutex
	keys []string
}

func (r *keyRecorder) note(cmds ...goredis.Cmder) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range cmds {
		if args := c.Args(); len(args) > 1 {
			r.keys = append(r.keys, fmt.Sprint(args[1]))
		}
	}
}

func (r *keyRecorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	k := r.keys
	r.keys = nil
	return k
}

func (r *keyRecorder) DialHook(next goredis.DialHook) goredis.DialHook { return next }

func (r *keyRecorder) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook {
	return func(ctx context.Context, c goredis.Cmder) error { r.note(c); return next(ctx, c) }
}

func (r *keyRecorder) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []goredis.Cmder) error { r.note(cmds...); return next(ctx, cmds) }
}

// TestClusterShardReadsTouchTheirSlots: on the sharded layout, listing the
// endpoints of some shards and reading their stamps send commands only to
// those shards' keys (their hash tags, so their slots), and still find
// every endpoint of them.
func TestClusterShardReadsTouchTheirSlots(t *testing.T) {
	url := testpeers.RedisClusterURL(t)
	clk := clock.NewFake(time.Date(2026, 12, 1, 10, 0, 30, 0, time.UTC))
	s := open(t, url, redis.Options{Prefix: redistest.RandomPrefix(), Clock: clk})
	fill(t, s, 40, clk)
	a, b := store.ShardOf("ep-000"), store.ShardOf("ep-001")
	if a == b {
		t.Fatal("ep-000 and ep-001 share a shard; pick others")
	}
	rec := &keyRecorder{}
	redis.ClientOf(s).AddHook(rec)
	ctx := t.Context()

	eps, err := s.ListEndpointsIn(ctx, []int{a, b})
	if err != nil {
		t.Fatal(err)
	}
	want := 0
	for i := range 40 {
		if sh := store.ShardOf(fmt.Sprintf("ep-%03d", i)); sh == a || sh == b {
			want++
		}
	}
	if len(eps) != want {
		t.Fatalf("ListEndpointsIn(%d, %d) = %d endpoints, want %d", a, b, len(eps), want)
	}
	if _, err := s.EndpointsStampsIn(ctx, []int{a, b}); err != nil {
		t.Fatal(err)
	}
	keys := rec.take()
	if len(keys) != 4 {
		t.Fatalf("sent commands for keys %v, want one HGETALL and one GET per shard", keys)
	}
	for _, k := range keys {
		if !strings.Contains(k, "{"+redis.ShardTag(a)+"}") && !strings.Contains(k, "{"+redis.ShardTag(b)+"}") {
			t.Fatalf("read key %s outside shards %d and %d", k, a, b)
		}
	}
}
