package daemon

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/config"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/msg"
	"github.com/mcpmon/mcpmon/prober"
)

var threeRegions = []string{"eu", "us", "ap"}

// regionFaults makes the target lose some regions: a real go-sdk MCP server
// on 127.0.0.1 that answers 503 to the probes of a failing region. Each
// in-process prober names its region in its client name (the User-Agent
// "mcpmon-<region>/<version>", set through Deps.proberOptions), so the
// fault is at the target, where a regional outage is: the probe, the
// classifier, the queues and the aggregator all run as in production.
type regionFaults struct {
	mu      sync.Mutex
	failing map[string]bool
	next    http.Handler
}

func (f *regionFaults) fail(regions ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, r := range regions {
		f.failing[r] = true
	}
}

func (f *regionFaults) heal() {
	f.mu.Lock()
	defer f.mu.Unlock()
	clear(f.failing)
}

func (f *regionFaults) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	region, _, _ := strings.Cut(strings.TrimPrefix(r.Header.Get("User-Agent"), "mcpmon-"), "/")
	f.mu.Lock()
	down := f.failing[region]
	f.mu.Unlock()
	if down {
		http.Error(w, "unavailable from "+region, http.StatusServiceUnavailable)
		return
	}
	f.next.ServeHTTP(w, r)
}

// regionalClientName is the Deps.proberOptions of the region tests.
func regionalClientName(region string, o *prober.Options) { o.ClientName = "mcpmon-" + region }

// lastVerdict is the endpoint's last verdict as the API shows it.
func lastVerdict(t *testing.T, addr, id string) msg.Verdict {
	t.Helper()
	vs := verdicts(t, addr, id)
	if len(vs) == 0 {
		return msg.Verdict{}
	}
	return vs[0]
}

// runThreeRegions is the three-region acceptance, on whatever processes
// start built (started with the Deps it is given), with the API at the
// address it returns: every region up; one region loses the target — one
// regional incident, one alert (warning, naming the region), no global
// alert; a second region loses it — one global alert; both recover — each
// incident resolves once.
func runThreeRegions(t *testing.T, start func(t *testing.T, hook string, deps Deps) (apiAddr string)) {
	faults := &regionFaults{failing: map[string]bool{}, next: sdkHandler("fixture", "1.0.0")}
	srv := newSwitchServer(t, faults)
	rcv, hook := newReceiver(t)
	addr := start(t, hook, Deps{Logger: testLogger(t), proberOptions: regionalClientName})
	id := register(t, addr, map[string]any{"name": "regions", "url": srv.url, "schedule": "@every 1s", "timeout": "1s"})

	allUp := func() bool {
		v := lastVerdict(t, addr, id)
		return v.State == msg.StateUp && len(v.RegionStates) == 3 &&
			v.RegionStates["eu"] == msg.StateUp && v.RegionStates["us"] == msg.StateUp && v.RegionStates["ap"] == msg.StateUp
	}
	eventually(t, 60*time.Second, "an up verdict with every region up", allUp)

	faults.fail("eu")
	open := rcv.wait(t, 60*time.Second)
	if open["kind"] != "open" || open["severity"] != "warning" || open["incidentKind"] != "regional" || fmt.Sprint(open["regions"]) != "[eu]" {
		t.Fatalf("first alert = %v, want a regional open (warning) naming eu", open)
	}
	// Several more windows with eu failing: still regional, and no other alert.
	seen := verdictCount(t, addr, id)
	eventually(t, 30*time.Second, "four more regional windows", func() bool {
		return regionalSince(t, addr, id, seen) >= 4
	})
	if got := rcv.all(); len(got) != 1 {
		t.Fatalf("alerts while one region fails: %v, want only the regional open", got)
	}

	faults.fail("us")
	global := rcv.wait(t, 60*time.Second)
	if global["kind"] != "open" || global["severity"] != "critical" || global["incidentKind"] != "global" || global["incidentId"] == open["incidentId"] {
		t.Fatalf("second alert = %v, want a global open (critical), another incident than %v", global, open["incidentId"])
	}

	faults.heal()
	resolved := map[any]int{}
	for range 2 {
		a := rcv.wait(t, 60*time.Second)
		if a["kind"] != "resolve" {
			t.Fatalf("alert after recovery = %v, want a resolve", a)
		}
		resolved[a["incidentId"]]++
	}
	if resolved[open["incidentId"]] != 1 || resolved[global["incidentId"]] != 1 {
		t.Fatalf("resolves %v, want one for each of %v and %v", resolved, open["incidentId"], global["incidentId"])
	}
	eventually(t, 30*time.Second, "every region up again", allUp)
	if got := rcv.all(); len(got) != 4 {
		t.Fatalf("%d alerts, want exactly four (regional open, global open, two resolves): %v", len(got), got)
	}
	var list struct {
		Incidents []struct {
			ID, Kind, Severity, State string
			Regions                   []string
		} `json:"incidents"`
	}
	if err := json.Unmarshal([]byte(get(t, addr, "/v1/incidents?endpoint="+id)), &list); err != nil {
		t.Fatal(err)
	}
	kinds := map[string]string{}
	for _, inc := range list.Incidents {
		kinds[inc.ID] = inc.Kind + "/" + inc.Severity + "/" + inc.State
	}
	if len(list.Incidents) != 2 || kinds[fmt.Sprint(open["incidentId"])] != "regional/warning/resolved" || kinds[fmt.Sprint(global["incidentId"])] != "global/critical/resolved" {
		t.Fatalf("incidents %+v, want the regional (warning) and the global (critical) one, both resolved", list.Incidents)
	}
}

func verdictCount(t *testing.T, addr, id string) int { return len(verdicts(t, addr, id)) }

// regionalSince counts the regional verdicts among those newer than the
// first seen ones (verdicts are listed newest first).
func regionalSince(t *testing.T, addr, id string, seen int) int {
	vs := verdicts(t, addr, id)
	n := 0
	for _, v := range vs[:max(len(vs)-seen, 0)] {
		if v.State == msg.StateRegional && slices.Equal(v.FailingRegions, []string{"eu"}) {
			n++
		}
	}
	return n
}

// TestThreeRegionsEmbedded: `mcpmon run --regions eu,us,ap` runs one
// prober per region in the process, on the embedded queue and store.
func TestThreeRegionsEmbedded(t *testing.T) {
	t.Parallel() // minutes of waiting on windows: overlapped with the other long end-to-end tests
	runThreeRegions(t, func(t *testing.T, hook string, deps Deps) string {
		o := fastOptions(t)
		o.Auth = config.AuthNone
		o.WebhookURL = model.SecretURL(hook)
		o.Regions = threeRegions
		d, err := Start(t.Context(), RoleAll, o, deps)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { d.Stop(); _ = d.Wait() })
		return d.Addr()
	})
}

// TestThreeRegionsFleet: the roles apart — an API/scheduler, a prober per
// region each consuming its own commands queue (<prefix>commands-<region>.fifo,
// made by `queues ensure` with MCPMON_REGIONS), an aggregator and an
// alerter — on fauxqs and redis-server.
func TestThreeRegionsFleet(t *testing.T) {
	t.Parallel() // minutes of waiting on windows: overlapped with the other long end-to-end tests
	runThreeRegions(t, func(t *testing.T, hook string, deps Deps) string {
		o := fastOptions(t)
		o.Auth = config.AuthNone
		o.WebhookURL = model.SecretURL(hook)
		o.Regions = threeRegions
		setupSQS(t, &o)
		setupRedis(t, &o)
		start := func(role Role, region string) *Daemon {
			t.Helper()
			ro := o
			ro.Region = region
			d, err := Start(t.Context(), role, ro, deps)
			if err != nil {
				t.Fatalf("start %s %s: %v", role, region, err)
			}
			t.Cleanup(func() { d.Stop(); _ = d.Wait() })
			return d
		}
		api := start(RoleAPI, "")
		for _, r := range threeRegions {
			start(RoleProber, r)
		}
		start(RoleAggregator, "")
		start(RoleAlerter, "")
		return api.Addr()
	})
}
