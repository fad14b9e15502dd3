package prober

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmon/mcpmon/pkg/msg"
	"github.com/mcpmon/mcpmon/pkg/store"
)

// catalogServer is a go-sdk server listing the named tools, as server
// "fixture" of version.
func catalogServer(version string, tools ...string) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "fixture", Version: version}, nil)
	for _, name := range tools {
		mcp.AddTool(s, &mcp.Tool{Name: name, Description: "The " + name + " tool."},
			func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
			})
	}
	return s
}

func catalogEvents(res msg.ProbeResult) []msg.Event {
	var out []msg.Event
	for _, e := range res.Events {
		if e.Kind == EventCatalogChanged {
			out = append(out, e)
		}
	}
	return out
}

// TestRegionsDiffAgainstTheirOwnCatalog: two regions sharing one store
// see different catalogs of one endpoint (one behind a stale edge cache).
// Each remembers its own, so probing them in turn raises no drift at all;
// the endpoint's own (regionless) document is left alone. A real change
// seen by one region is one drift event of that region.
func TestRegionsDiffAgainstTheirOwnCatalog(t *testing.T) {
	fresh := catalogServer("1.0.0", "search", "fetch")
	stale := streamable(t, catalogServer("1.0.0", "search"), mcp.StreamableHTTPOptions{JSONResponse: true}).URL
	freshURL := streamable(t, fresh, mcp.StreamableHTTPOptions{JSONResponse: true}).URL
	objs := &objectsFake{m: map[string][]byte{}}
	eu := testProber(t, func(o *Options) { o.Catalogs = objs; o.Region, o.RegionalMemory = "eu", true })
	us := testProber(t, func(o *Options) { o.Catalogs = objs; o.Region, o.RegionalMemory = "us", true })

	var euFP, usFP string
	for i := range 4 {
		slot := msg.NewProbeCommand("ep1", testSlot.Add(time.Duration(i)*time.Minute))
		e := eu.Probe(context.Background(), endpoint(freshURL), slot)
		u := us.Probe(context.Background(), endpoint(stale), slot)
		if e.Class != ClassOK || u.Class != ClassOK {
			t.Fatalf("probe %d: eu %s %q, us %s %q", i, e.Class, e.Error, u.Class, u.Error)
		}
		if len(catalogEvents(e))+len(catalogEvents(u)) != 0 {
			t.Fatalf("probe %d: drift between regions reported as a change: eu %+v us %+v", i, e.Events, u.Events)
		}
		euFP, usFP = e.CatalogFingerprint, u.CatalogFingerprint
	}
	if euFP == usFP {
		t.Fatal("the regions saw one catalog; the fixture should differ")
	}
	for id, want := range map[string]string{"ep1@eu": euFP, "ep1@us": usFP} {
		var c Catalog
		if err := json.Unmarshal(objs.m[store.KindCatalog+"/"+id], &c); err != nil || c.Fingerprint != want {
			t.Fatalf("catalog %s = %s (%v), want fingerprint %s", id, objs.m[store.KindCatalog+"/"+id], err, want)
		}
		if _, ok := objs.m[store.KindServerIdentity+"/"+id]; !ok {
			t.Fatalf("no identity stored under %s", id)
		}
	}
	if _, ok := objs.m[store.KindCatalog+"/ep1"]; ok {
		t.Fatal("a regional prober wrote the endpoint's own catalog")
	}

	fresh.RemoveTools("fetch") // now the same as the stale region's
	slot := msg.NewProbeCommand("ep1", testSlot.Add(10*time.Minute))
	e := eu.Probe(context.Background(), endpoint(freshURL), slot)
	u := us.Probe(context.Background(), endpoint(stale), slot)
	if evs := catalogEvents(e); len(evs) != 1 || evs[0].Severity != "breaking" {
		t.Fatalf("eu after fetch was removed: %+v, want one breaking drift", e.Events)
	}
	if evs := catalogEvents(u); len(evs) != 0 {
		t.Fatalf("us, whose catalog did not change: %+v, want no drift", u.Events)
	}
}

// TestRegionInheritsTheRegionlessDocuments: a region that has no document
// of its own yet (an upgrade: before, every region wrote the endpoint's
// own) compares with the endpoint's: the same catalog and server raise
// nothing, a different one is the change it is. Either way the region
// keeps its own from then on, and a regionless prober reads and writes
// the endpoint's own as before, whatever its region label.
func TestRegionInheritsTheRegionlessDocuments(t *testing.T) {
	cases := []struct {
		name       string
		region     string
		regional   bool
		seenTools  []string
		seenServer string
		wantEvents []string
		wantID     string
	}{
		{"region, same catalog and server", "eu", true, []string{"search", "fetch"}, "1.0.0", nil, "ep1@eu"},
		{"region, a tool removed and a new version", "eu", true, []string{"search"}, "2.0.0", []string{EventServerChanged, EventCatalogChanged}, "ep1@eu"},
		{"no region, same", "", false, []string{"search", "fetch"}, "1.0.0", nil, "ep1"},
		{"no region, a tool removed", "", false, []string{"search"}, "1.0.0", []string{EventCatalogChanged}, "ep1"},
		{"a region label without a region set", "local", false, []string{"search"}, "1.0.0", []string{EventCatalogChanged}, "ep1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// The endpoint's own documents, as a regionless prober left them.
			objs := &objectsFake{m: map[string][]byte{}}
			before := testProber(t, func(o *Options) { o.Catalogs = objs })
			old := streamable(t, catalogServer("1.0.0", "search", "fetch"), mcp.StreamableHTTPOptions{JSONResponse: true}).URL
			if res := before.Probe(context.Background(), endpoint(old), cmd()); res.Class != ClassOK {
				t.Fatalf("seeding probe: %s %q", res.Class, res.Error)
			}
			legacy := map[string]string{}
			// The kinds every probe stores (an OAuth pin needs an OAuth client).
			kinds := []string{store.KindCatalog, store.KindServerIdentity}
			for _, kind := range kinds {
				legacy[kind] = string(objs.m[kind+"/ep1"])
			}

			p := testProber(t, func(o *Options) { o.Catalogs = objs; o.Region, o.RegionalMemory = c.region, c.regional })
			now := streamable(t, catalogServer(c.seenServer, c.seenTools...), mcp.StreamableHTTPOptions{JSONResponse: true}).URL
			res := p.Probe(context.Background(), endpoint(now), msg.NewProbeCommand("ep1", testSlot.Add(time.Minute)))
			if got := eventKinds(res); len(got) != len(c.wantEvents) || (len(got) > 0 && (got[0] != c.wantEvents[0] || got[len(got)-1] != c.wantEvents[len(c.wantEvents)-1])) {
				t.Fatalf("events %v, want %v (%+v)", got, c.wantEvents, res.Events)
			}
			for _, kind := range kinds {
				if _, ok := objs.m[kind+"/"+c.wantID]; !ok {
					t.Fatalf("no %s stored under %s", kind, c.wantID)
				}
				if c.regional && string(objs.m[kind+"/ep1"]) != legacy[kind] {
					t.Fatalf("the region rewrote the endpoint's own %s", kind)
				}
			}
			// The next probe compares with what the region stored: nothing new.
			again := p.Probe(context.Background(), endpoint(now), msg.NewProbeCommand("ep1", testSlot.Add(2*time.Minute)))
			if len(again.Events) != 0 {
				t.Fatalf("second probe: %+v, want no events", again.Events)
			}
		})
	}
}
