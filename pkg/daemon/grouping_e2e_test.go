package daemon

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	apiv1 "github.com/mcpmon/mcpmon/pkg/api/v1"
	"github.com/mcpmon/mcpmon/pkg/config"
	"github.com/mcpmon/mcpmon/pkg/msg"
	"github.com/mcpmon/mcpmon/pkg/testpeers"
)

// TestStormIsOneGroupedNotificationEndToEnd runs mcpmon in-process with
// two webhook sinks from a sinks file, one grouping by class and host, and
// n endpoints on one fixture server (12 under `make test`, 50 under
// `make test-large`). Taking the server down opens n incidents: the sink
// without grouping gets n opens, the grouping sink one grouped open
// listing all n. Bringing it back gives n resolves and one grouped resolve.
func TestStormIsOneGroupedNotificationEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for a storm of incidents to open and resolve (~40s)")
	}
	t.Parallel() // mostly waiting on windows: overlapped with the other long end-to-end tests
	n := testpeers.Size(12, 50)
	srv := newMCPServer(t)
	grouped, groupedURL := newReceiver(t)
	each, eachURL := newReceiver(t)
	sinksFile := filepath.Join(t.TempDir(), "sinks.json")
	if err := os.WriteFile(sinksFile, fmt.Appendf(nil, `{"sinks":[
		{"name":"grouped","type":"webhook","url":%q,"group":{"by":["class","host"],"wait":"10s"}},
		{"name":"each","type":"webhook","url":%q}]}`, groupedURL, eachURL), 0o600); err != nil {
		t.Fatal(err)
	}
	d := startEmbedded(t, func(o *config.Options) {
		o.SinksFile = sinksFile
		o.RateLimit = 0 // the test polls every endpoint
	})
	api := apiClient{addr: d.Addr()}
	var ids []string
	for i := range n {
		ids = append(ids, register(t, d.Addr(), map[string]any{
			"name": fmt.Sprintf("server %02d", i), "url": fmt.Sprintf("%s/%02d", srv.url(), i), "schedule": "@every 1s", "timeout": "1s",
		}))
	}
	t0 := time.Now()
	// Every endpoint is probed up before the server goes: they then fail
	// together, as servers behind one gateway do.
	eventually(t, 90*time.Second, "every endpoint probed up", func() bool {
		for _, id := range ids {
			if l := latest(t, d.Addr(), id).LatestResult; l == nil || l.Status != msg.StatusUp {
				return false
			}
		}
		return true
	})
	incidents := func(state string) []apiv1.IncidentView {
		var out struct{ Incidents []apiv1.IncidentView }
		if err := json.Unmarshal([]byte(api.get(t, "/v1/incidents?limit=200&state="+state)), &out); err != nil {
			t.Fatal(err)
		}
		return out.Incidents
	}
	// from: what each receiver had when the server went down. A probe
	// timing out on a loaded machine before that is an incident of its own
	// (another class), rightly sent alone; the storm is what follows.
	from := map[*receiver]int{}
	kinds := func(r *receiver) (opens, resolves, groupOpens, groupResolves int, last map[string]any) {
		for _, a := range r.all()[from[r]:] {
			switch {
			case a["type"] == "group" && a["kind"] == "open":
				groupOpens++
				last = a
			case a["type"] == "group" && a["kind"] == "resolve":
				groupResolves++
				last = a
			case a["kind"] == "open":
				opens++
			case a["kind"] == "resolve":
				resolves++
			}
		}
		return
	}

	// What both sinks got, for a failure's message.
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		for name, r := range map[string]*receiver{"grouped": grouped, "each": each} {
			o, rs, go_, gr, _ := kinds(r)
			t.Logf("%s: %d opens, %d resolves, %d grouped opens, %d grouped resolves", name, o, rs, go_, gr)
		}
		for _, a := range grouped.all()[from[grouped]:] {
			t.Logf("grouped got %v %v endpoint=%v by=%v count=%v", a["type"], a["kind"], a["endpoint"], a["by"], a["count"])
		}
		t.Logf("open incidents: %d", len(incidents("open")))
	})
	t.Logf("registered and up in %s", time.Since(t0).Round(time.Millisecond))
	eventually(t, 30*time.Second, "no incident open before the storm", func() bool { return len(incidents("open")) == 0 })
	from[grouped], from[each] = len(grouped.all()), len(each.all())
	began := time.Now()
	srv.stop()
	eventually(t, 60*time.Second, fmt.Sprintf("%d open incidents and %d opens at the sink without grouping", n, n), func() bool {
		opens, _, _, _, _ := kinds(each)
		return len(incidents("open")) == n && opens == n
	})
	t.Logf("%d opens %s after the server went down", n, time.Since(began).Round(time.Millisecond))
	eventually(t, 30*time.Second, "one grouped open", func() bool {
		_, _, g, _, _ := kinds(grouped)
		return g == 1
	})
	opens, resolves, gOpens, gResolves, last := kinds(grouped)
	if opens != 0 || resolves != 0 || gOpens != 1 || gResolves != 0 {
		t.Fatalf("grouping sink: %d opens, %d resolves, %d grouped opens, %d grouped resolves; want one grouped open only", opens, resolves, gOpens, gResolves)
	}
	if members, _ := last["members"].([]any); len(members) != n || last["count"] != float64(n) {
		t.Fatalf("grouped open lists %d members (count %v), want %d", len(members), last["count"], n)
	}

	t.Logf("grouped open %s after the server went down", time.Since(began).Round(time.Millisecond))
	began = time.Now()
	srv.start()
	eventually(t, 60*time.Second, fmt.Sprintf("%d resolves at the sink without grouping", n), func() bool {
		_, r, _, _, _ := kinds(each)
		return r >= n
	})
	t.Logf("%d resolves %s after the server came back", n, time.Since(began).Round(time.Millisecond))
	eventually(t, 60*time.Second, fmt.Sprintf("%d resolves at the sink without grouping and one grouped resolve", n), func() bool {
		_, r, _, _, _ := kinds(each)
		_, _, _, g, _ := kinds(grouped)
		return r == n && g == 1
	})
	t.Logf("%d resolves and the grouped resolve %s after the server came back", n, time.Since(began).Round(time.Millisecond))
	if got := len(incidents("open")); got != 0 {
		t.Fatalf("%d incidents still open", got)
	}
	opens, resolves, gOpens, gResolves, _ = kinds(grouped)
	if opens != 0 || resolves != 0 || gOpens != 1 || gResolves != 1 {
		t.Fatalf("grouping sink: %d opens, %d resolves, %d grouped opens, %d grouped resolves; want one of each grouped", opens, resolves, gOpens, gResolves)
	}
	if eo, er, _, _, _ := kinds(each); eo != n || er != n {
		t.Fatalf("sink without grouping: %d opens, %d resolves, want %d each", eo, er, n)
	}
}
