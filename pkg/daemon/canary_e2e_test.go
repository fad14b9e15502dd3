package daemon

import (
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
	"github.com/mcpmon/mcpmon/pkg/testpeers"
)

// lossyNetwork stands between the probers and what they reach: while a
// region's link is cut, every connection from that region (its prober's
// User-Agent names it, see regionalClientName; "" is every prober) is
// closed without an HTTP answer, as a dead uplink looks to the prober. The
// canary and the MCP fixtures sit behind the same one, so they fail
// together, and the probe, the classifier, the canary, the queues and the
// aggregator all run as in production.
type lossyNetwork struct {
	mu  sync.Mutex
	cut map[string]bool
}

func (n *lossyNetwork) set(region string, cut bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.cut[region] = cut
}

func (n *lossyNetwork) cutFor(r *http.Request) bool {
	region, _, _ := strings.Cut(strings.TrimPrefix(r.Header.Get("User-Agent"), "mcpmon-"), "/")
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.cut[""] || n.cut[region]
}

// wrap serves next unless the request's region is cut off.
func (n *lossyNetwork) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.cutFor(r) {
			if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
				_ = conn.Close()
			}
			return
		}
		next.ServeHTTP(w, r)
	})
}

// canaryOK is a canary's answer; any answer would do.
var canaryOK = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })

// blindWorld is a running `mcpmon run` whose probers reach an MCP
// fixture and one canary through the same lossy network.
type blindWorld struct {
	net        *lossyNetwork
	fixtureURL string
	rcv        *receiver
	addr       string
}

// startBlindWorld starts it with fastOptions, the canary checked every
// second, and the adjustments of mut.
func startBlindWorld(t *testing.T, deps Deps, mut func(o *config.Options)) blindWorld {
	t.Helper()
	w := blindWorld{net: &lossyNetwork{cut: map[string]bool{}}}
	w.fixtureURL = newSwitchServer(t, w.net.wrap(sdkHandler("fixture", "1.0.0"))).url
	canary := newSwitchServer(t, w.net.wrap(canaryOK))
	var hook string
	w.rcv, hook = newReceiver(t)
	o := fastOptions(t)
	o.Auth = config.AuthNone
	o.WebhookURL = model.SecretURL(hook)
	o.CanaryURLs = []string{canary.url}
	o.CanaryInterval = time.Second
	o.CanaryTimeout = 500 * time.Millisecond
	o.RateLimit = 0 // the tests read every endpoint's verdicts, often
	mut(&o)
	deps.Logger = testLogger(t)
	d, err := Start(t.Context(), RoleAll, o, deps)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Stop(); _ = d.Wait() })
	w.addr = d.Addr()
	return w
}

// verdictsAfter lists the verdicts of id newer than after (by window).
func verdictsAfter(t *testing.T, addr, id string, after time.Time) []msg.Verdict {
	var out []msg.Verdict
	for _, v := range verdicts(t, addr, id) {
		if v.Window.After(after) {
			out = append(out, v)
		}
	}
	return out
}

// TestBlindProberPagesNobody is the storm acceptance for blindness: n
// endpoints (12 under `make test`, 50 under `make test-large`) whose network fails together with the canary give no owner
// notification, one operator notice that mcpmon is blind, and no_data
// windows; with the network back, one "recovered" and the verdicts resume.
func TestBlindProberPagesNobody(t *testing.T) {
	t.Parallel() // waits on windows: overlapped with the other long end-to-end tests
	// A storm's worth of endpoints on a shared two-core machine: five-second slots
	// and windows keep the probers ahead of their schedule.
	w := startBlindWorld(t, Deps{}, func(o *config.Options) { o.Window, o.Grace = 5*time.Second, time.Second })
	net, rcv, addr := w.net, w.rcv, w.addr

	n := testpeers.Size(12, 50)
	ids := make([]string, n)
	for i := range ids {
		ids[i] = register(t, addr, map[string]any{"name": fmt.Sprintf("storm-%d", i), "url": fmt.Sprintf("%s?n=%d", w.fixtureURL, i),
			"schedule": "@every 5s", "timeout": "1s"})
	}
	// upAfter: every endpoint has an up window after t0.
	upAfter := func(t0 time.Time) func() bool {
		return func() bool {
			for _, id := range ids {
				if !slices.ContainsFunc(verdictsAfter(t, addr, id, t0), func(v msg.Verdict) bool { return v.State == msg.StateUp }) {
					return false
				}
			}
			return true
		}
	}
	eventuallyEvery(t, 500*time.Millisecond, 90*time.Second, "every endpoint up", upAfter(time.Time{}))

	cutAt := time.Now().UTC()
	net.set("", true)
	blind := rcv.wait(t, 60*time.Second)
	if blind["kind"] != "open" || blind["incidentKind"] != "prober_blind" || !strings.Contains(fmt.Sprint(blind["reason"]), "mcpmon is blind in region local since") {
		t.Fatalf("first notification = %v, want the operator's blind notice", blind)
	}
	// Several windows decided while blind: each endpoint's are no_data,
	// and the ones with results say why.
	eventuallyEvery(t, 500*time.Millisecond, 60*time.Second, "five blind no_data windows of every endpoint", func() bool {
		for _, id := range ids {
			blindWindows := 0
			for _, v := range verdictsAfter(t, addr, id, cutAt) {
				if v.State == msg.StateNoData && v.Class == "prober_blind" && strings.Contains(v.Reason, "was blind") {
					blindWindows++
				}
			}
			if blindWindows < 5 {
				return false
			}
		}
		return true
	})
	for _, id := range ids {
		for _, v := range verdictsAfter(t, addr, id, cutAt) {
			if v.State != msg.StateNoData && v.State != msg.StateUp {
				t.Fatalf("endpoint %s has a %s window %s after the network was cut: %+v", id, v.State, v.Window, v)
			}
		}
	}

	healAt := time.Now().UTC()
	net.set("", false)
	back := rcv.wait(t, 60*time.Second)
	if back["kind"] != "resolve" || back["incidentId"] != blind["incidentId"] {
		t.Fatalf("notification after the network is back = %v, want the recovered notice of %v", back, blind["incidentId"])
	}
	eventuallyEvery(t, 500*time.Millisecond, 60*time.Second, "every endpoint up again", upAfter(healAt))
	if got := rcv.all(); len(got) != 2 {
		t.Fatalf("%d notifications, want only the blind and the recovered notice: %v", len(got), got)
	}
	if body := get(t, addr, "/v1/incidents"); strings.Contains(body, `"id"`) {
		t.Fatalf("incidents opened while the prober was blind: %s", body)
	}
}

// TestBlindRegionDropsOutOfTheDueRegions: with two regions, one whose
// network fails with its canary is left out of the windows, as a dead
// region is: the other region's view decides, and no regional incident
// opens from the blind one.
func TestBlindRegionDropsOutOfTheDueRegions(t *testing.T) {
	t.Parallel() // waits on windows: overlapped with the other long end-to-end tests
	w := startBlindWorld(t, Deps{proberOptions: regionalClientName}, func(o *config.Options) { o.Regions = []string{"eu", "us"} })
	net, rcv, addr := w.net, w.rcv, w.addr
	id := register(t, addr, map[string]any{"name": "two-regions", "url": w.fixtureURL, "schedule": "@every 1s", "timeout": "1s"})
	eventually(t, 60*time.Second, "an up verdict from both regions", func() bool {
		v := lastVerdict(t, addr, id)
		return v.State == msg.StateUp && v.RegionStates["eu"] == msg.StateUp && v.RegionStates["us"] == msg.StateUp
	})

	cutAt := time.Now().UTC()
	net.set("eu", true)
	blind := rcv.wait(t, 60*time.Second)
	if blind["kind"] != "open" || blind["incidentKind"] != "prober_blind" || fmt.Sprint(blind["regions"]) != "[eu]" ||
		!strings.Contains(fmt.Sprint(blind["reason"]), "mcpmon is blind in region eu since") {
		t.Fatalf("first notification = %v, want the blind notice of eu", blind)
	}
	// Without blindness every one of these would be regional (eu down,
	// us up) and open a regional incident after two.
	eventuallyEvery(t, 500*time.Millisecond, 30*time.Second, "five windows judged by us alone", func() bool {
		alone := 0
		for _, v := range verdictsAfter(t, addr, id, cutAt) {
			if v.State == msg.StateUp && v.RegionStates["eu"] == msg.StateNoData && v.RegionStates["us"] == msg.StateUp {
				alone++
			}
		}
		return alone >= 5
	})
	for _, v := range verdictsAfter(t, addr, id, cutAt) {
		if v.State != msg.StateUp {
			t.Fatalf("window %s is %s with eu blind: %+v", v.Window, v.State, v)
		}
	}

	net.set("eu", false)
	back := rcv.wait(t, 60*time.Second)
	if back["kind"] != "resolve" || back["incidentId"] != blind["incidentId"] {
		t.Fatalf("notification after eu is back = %v, want the recovered notice of %v", back, blind["incidentId"])
	}
	eventually(t, 30*time.Second, "both regions up again", func() bool {
		v := lastVerdict(t, addr, id)
		return v.State == msg.StateUp && v.RegionStates["eu"] == msg.StateUp && v.RegionStates["us"] == msg.StateUp
	})
	if got := rcv.all(); len(got) != 2 {
		t.Fatalf("%d notifications, want only eu's blind and recovered notices (no regional incident): %v", len(got), got)
	}
}
