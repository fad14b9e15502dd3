package daemon

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/msg"
	"github.com/mcpmon/mcpmon/pkg/testpeers"
	"github.com/mcpmon/mcpmon/pkg/testpeers/e2e"
)

// TestFleet runs every role as its own process — two API/schedulers, two
// probers in different regions, two aggregators, two alerters — on fauxqs and
// redis-server, kills one replica of each role with SIGKILL mid-incident,
// and still sees exactly one alert and one resolve.
func TestFleet(t *testing.T) {
	sqsEndpoint := testpeers.SQSEndpoint(t)
	redisURL := testpeers.RedisURL(t)
	if testing.Short() {
		t.Skip("builds and runs nine processes; skipped with -short")
	}
	prefix := fmt.Sprintf("fleet%d-", time.Now().UnixNano())
	rcv, hook := newReceiver(t)
	peers := e2e.Distributed{SQSEndpoint: sqsEndpoint, RedisURL: redisURL, Prefix: prefix, SecretsKey: testSecretsKey}
	f := testpeers.NewFleet(t, slices.Concat(os.Environ(), peers.Env(), []string{
		"MCPMON_WINDOW=2s", "MCPMON_GRACE=500ms", "MCPMON_ALLOW_PRIVATE_TARGETS=true",
		"MCPMON_WEBHOOK_URL=" + hook, "MCPMON_CLAIM_LEASE=5s", "MCPMON_VISIBILITY_TIMEOUT=4s",
		"MCPMON_LOG_LEVEL=debug",
		"MCPMON_AUTH=none", // every process listens on 127.0.0.1; API keys have their own tests
	}))
	f.Run("queues", "ensure")

	api1 := f.Start("api-1", "api")
	api2 := f.Start("api-2", "api")
	prober1 := f.Start("prober-eu", "prober", "--region", "eu")
	f.Start("prober-us", "prober", "--region", "us")
	agg1 := f.Start("aggregator-1", "aggregator")
	f.Start("aggregator-2", "aggregator")
	alert1 := f.Start("alerter-1", "alerter", "--replica-id", "alerter-1")
	f.Start("alerter-2", "alerter", "--replica-id", "alerter-2")

	srv := newMCPServer(t)
	id := register(t, api1.Addr, map[string]any{"name": "fleet", "url": srv.url(), "schedule": "@every 1s", "timeout": "1s"})
	eventually(t, 60*time.Second, "an up verdict", func() bool { return latestState(t, api2.Addr, id) == msg.StateUp })

	srv.stop()
	for _, p := range []*testpeers.Member{api1, prober1, agg1, alert1} {
		p.Kill()
	}
	open := rcv.wait(t, 90*time.Second)
	if open["state"] != "open" {
		t.Fatalf("first alert = %v, want open", open)
	}
	srv.start()
	resolve := rcv.wait(t, 90*time.Second)
	if resolve["state"] != "resolved" || resolve["incidentId"] != open["incidentId"] {
		t.Fatalf("second alert = %v, want the resolve of %v", resolve, open["incidentId"])
	}
	f.StopAll()
	got := rcv.all()
	var kinds []string
	for _, a := range got {
		kinds = append(kinds, fmt.Sprint(a["kind"]))
	}
	if len(got) != 2 {
		t.Fatalf("received %d alerts (%s), want exactly one open and one resolve", len(got), strings.Join(kinds, ", "))
	}
}
