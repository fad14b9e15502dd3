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

// TestFleetThreeRegions runs the roles as separate processes on fauxqs and
// redis-server with --regions eu,us,ap: `queues ensure` makes a commands
// queue per region, the API/scheduler fans slots out, a prober per region
// consumes its own. A region loses the target the way a real region can be
// cut off from a server — its prober is restarted unable to reach it (the
// SSRF guard back on: every probe is blocked_target, down) — first in eu
// (one regional incident, alerted once, no global alert), then in us too
// (one global incident, alerted once); restarted able to reach it, both
// resolve.
func TestFleetThreeRegions(t *testing.T) {
	t.Parallel() // minutes of waiting on windows: overlapped with the other long end-to-end tests
	sqsEndpoint := testpeers.SQSEndpoint(t)
	redisURL := testpeers.RedisURL(t)
	if testing.Short() {
		t.Skip("builds and runs six processes; skipped with -short")
	}
	prefix := fmt.Sprintf("regions%d-", time.Now().UnixNano())
	rcv, hook := newReceiver(t)
	peers := e2e.Distributed{SQSEndpoint: sqsEndpoint, RedisURL: redisURL, Prefix: prefix, SecretsKey: testSecretsKey}
	f := testpeers.NewFleet(t, slices.Concat(os.Environ(), peers.Env(), []string{
		"MCPMON_WINDOW=2s", "MCPMON_GRACE=500ms", "MCPMON_ALLOW_PRIVATE_TARGETS=true",
		"MCPMON_WEBHOOK_URL=" + hook, "MCPMON_VISIBILITY_TIMEOUT=4s",
		"MCPMON_REGIONS=eu,us,ap",
		"MCPMON_LOG_LEVEL=debug",
		"MCPMON_AUTH=none",
	}))
	out := f.Run("queues", "ensure")
	for _, r := range threeRegions {
		if !strings.Contains(out, prefix+"commands-"+r+".fifo") {
			t.Fatalf("queues ensure did not make the commands queue of %s:\n%s", r, out)
		}
	}

	api := f.Start("api", "api")
	probers := map[string]*testpeers.Member{}
	for _, r := range threeRegions {
		probers[r] = f.Start("prober-"+r, "prober", "--region", r)
	}
	f.Start("aggregator", "aggregator")
	f.Start("alerter", "alerter", "--replica-id", "alerter-1")

	srv := newMCPServer(t)
	id := register(t, api.Addr, map[string]any{"name": "fleet-regions", "url": srv.url(), "schedule": "@every 1s", "timeout": "1s"})
	allUp := func() bool {
		v := lastVerdict(t, api.Addr, id)
		return v.State == msg.StateUp && len(v.RegionStates) == 3 &&
			v.RegionStates["eu"] == msg.StateUp && v.RegionStates["us"] == msg.StateUp && v.RegionStates["ap"] == msg.StateUp
	}
	eventually(t, 60*time.Second, "an up verdict with every region up", allUp)

	// restart replaces region r's prober: cut off from the target or not.
	restart := func(r string, cutOff bool) {
		probers[r].Kill()
		args := []string{"prober", "--region", r}
		if cutOff {
			args = append(args, "--allow-private-targets=false")
		}
		probers[r] = f.Start("prober-"+r+map[bool]string{true: "-cut-off", false: "-healed"}[cutOff], args...)
	}

	restart("eu", true)
	open := rcv.wait(t, 90*time.Second)
	if open["kind"] != "open" || open["severity"] != "warning" || open["incidentKind"] != "regional" || fmt.Sprint(open["regions"]) != "[eu]" {
		t.Fatalf("first alert = %v, want a regional open (warning) naming eu", open)
	}
	seen := verdictCount(t, api.Addr, id)
	eventually(t, 30*time.Second, "four more regional windows", func() bool { return regionalSince(t, api.Addr, id, seen) >= 4 })
	if got := rcv.all(); len(got) != 1 {
		t.Fatalf("alerts while one region is cut off: %v, want only the regional open", got)
	}

	restart("us", true)
	global := rcv.wait(t, 90*time.Second)
	if global["kind"] != "open" || global["severity"] != "critical" || global["incidentKind"] != "global" {
		t.Fatalf("second alert = %v, want the global open (critical)", global)
	}

	restart("eu", false)
	restart("us", false)
	resolved := map[any]int{}
	for range 2 {
		a := rcv.wait(t, 90*time.Second)
		if a["kind"] != "resolve" {
			t.Fatalf("alert after recovery = %v, want a resolve", a)
		}
		resolved[a["incidentId"]]++
	}
	if resolved[open["incidentId"]] != 1 || resolved[global["incidentId"]] != 1 {
		t.Fatalf("resolves %v, want one each for %v and %v", resolved, open["incidentId"], global["incidentId"])
	}
	f.StopAll()
	if got := rcv.all(); len(got) != 4 {
		t.Fatalf("%d alerts, want exactly four (regional open, global open, two resolves): %v", len(got), got)
	}
}
