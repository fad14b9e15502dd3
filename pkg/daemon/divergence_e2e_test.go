package daemon

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmon/mcpmon/pkg/config"
)

// staleRegion serves one region (by the probe's User-Agent, see
// regionFaults) an older go-sdk server than the others: a region behind a
// stale edge cache.
type staleRegion struct {
	region       string
	stale, fresh http.Handler
}

func (s staleRegion) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	region, _, _ := strings.Cut(strings.TrimPrefix(r.Header.Get("User-Agent"), "mcpmon-"), "/")
	if region == s.region {
		s.stale.ServeHTTP(w, r)
		return
	}
	s.fresh.ServeHTTP(w, r)
}

// TestStaleRegionIsOneDivergenceNotManyChanges, on the embedded store and
// on Redis: three regions probe one endpoint, eu seeing an older catalog
// (without the fetch tool) than us and ap. Over many probes that is one
// durable catalog_divergent event naming the missing tool, one
// notification to the webhook sink that opted into it, and no
// catalog_changed drift at all (no catalog_breaking or catalog_info event,
// though that sink opted into those too); each region's catalog is its own
// over the API.
func TestStaleRegionIsOneDivergenceNotManyChanges(t *testing.T) {
	t.Parallel() // minutes of waiting on windows: overlapped with the other long end-to-end tests
	for _, b := range []backend{
		{name: "embedded", setup: func(*testing.T, *config.Options) {}},
		{name: "redis", setup: setupRedis},
	} {
		t.Run(b.name, func(t *testing.T) { testStaleRegion(t, b) })
	}
}

func testStaleRegion(t *testing.T, b backend) {
	server := func(tools ...string) http.Handler {
		srv := mcp.NewServer(&mcp.Implementation{Name: "catalog-fixture", Version: "1.0.0"}, nil)
		for _, name := range tools {
			addTool(srv, name, "The "+name+" tool.")
		}
		return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	}
	target := newSwitchServer(t, staleRegion{region: "eu", stale: server("search"), fresh: server("search", "fetch")})

	hook, hookURL := newReceiver(t)
	sinksFile := filepath.Join(t.TempDir(), "sinks.json")
	doc := fmt.Sprintf(`{"sinks": [{"name": "changes", "type": "webhook", "url": %q,
		"notify": ["catalog_divergent", "catalog_breaking", "catalog_info", "catalog_security"]}]}`, hookURL)
	if err := os.WriteFile(sinksFile, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	o := fastOptions(t)
	o.Auth = config.AuthNone
	o.Regions = threeRegions
	o.SinksFile = sinksFile
	b.setup(t, &o)
	d, err := Start(t.Context(), RoleAll, o, Deps{Logger: testLogger(t), proberOptions: regionalClientName})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Stop(); _ = d.Wait() })
	addr := d.Addr()
	id := register(t, addr, map[string]any{"name": "docs", "url": target.url, "schedule": "@every 1s", "timeout": "1s"})

	eventually(t, 60*time.Second, "a catalog_divergent event", func() bool {
		return len(listEvents(t, addr, id, "catalog_divergent").Events) > 0
	})
	eventually(t, 30*time.Second, "the opted-in sink told of it", func() bool {
		return len(eventPayloads(hook, "catalog_divergent")) > 0
	})
	// Many more windows, every one of them divergent, and event sweeps.
	waitProbes(t, addr, id, 10)

	all := listEvents(t, addr, id, "").Events
	if len(all) != 1 || all[0].Kind != "catalog_divergent" {
		t.Fatalf("events after many probes = %+v, want exactly one catalog_divergent (no drift between regions)", all)
	}
	got := eventPayloads(hook, "")
	if len(got) != 1 || got[0]["kind"] != "catalog_divergent" || got[0]["fingerprint"] != all[0].Fingerprint {
		t.Fatalf("the sink received %v, want exactly one catalog_divergent notification (%s)", got, all[0].Fingerprint)
	}
	msg := fmt.Sprint(got[0]["message"])
	if !strings.Contains(msg, "regions disagree on the tool catalog of docs") || !strings.Contains(msg, "eu lacks tools: fetch") {
		t.Fatalf("notification message %q, want the regions and the tool eu lacks", msg)
	}

	type catalog struct {
		Region      string            `json:"region"`
		Fingerprint string            `json:"fingerprint"`
		Tools       []json.RawMessage `json:"tools"`
		Regions     map[string]string `json:"regions"`
	}
	cats := map[string]catalog{}
	for _, r := range threeRegions {
		var c catalog
		if err := json.Unmarshal([]byte(get(t, addr, "/v1/endpoints/"+id+"/catalog?region="+r)), &c); err != nil {
			t.Fatal(err)
		}
		cats[r] = c
	}
	eu, us, ap := cats["eu"], cats["us"], cats["ap"]
	if len(eu.Tools) != 1 || len(us.Tools) != 2 || eu.Fingerprint == us.Fingerprint || us.Fingerprint != ap.Fingerprint {
		t.Fatalf("catalogs by region %+v, want eu's (1 tool) apart from us's and ap's (2 tools)", cats)
	}
	if len(eu.Regions) != 3 || eu.Regions["eu"] != eu.Fingerprint || eu.Regions["us"] != us.Fingerprint {
		t.Fatalf("regions %v, want each region's fingerprint", eu.Regions)
	}
	metrics := get(t, addr, "/metrics")
	for _, line := range []string{
		`mcpmon_events_total{kind="catalog_divergent"} 1`,
		`mcpmon_events_total{kind="catalog_breaking"} 0`,
		`mcpmon_events_total{kind="catalog_info"} 0`,
		`mcpmon_event_notifications_total{kind="catalog_divergent",outcome="sent",sink="changes"} 1`,
	} {
		if !strings.Contains(metrics, line) {
			t.Errorf("/metrics lacks %s", line)
		}
	}
}
