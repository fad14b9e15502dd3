package aggregator

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/msg"
	"github.com/mcpmon/mcpmon/pkg/store"
)

const (
	fpFresh = "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	fpStale = "sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
	fpOther = "sha256:cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc"
)

// listed is a result of region that listed a catalog of n tools.
func listed(region string, at time.Duration, fp string, n int) msg.ProbeResult {
	r := res(region, msg.StatusUp, "ok", at)
	r.CatalogFingerprint, r.ToolCount = fp, n
	return r
}

func TestCatalogDivergence(t *testing.T) {
	down := res("us", msg.StatusDown, "refused", 40*time.Second)
	degraded := listed("us", 0, fpStale, 1)
	degraded.Status = msg.StatusDegraded
	cases := []struct {
		name    string
		results []msg.ProbeResult
		// want is the fingerprints the event covers (nil: no event).
		want []string
		// message holds these parts.
		message []string
	}{
		{"no results", nil, nil, nil},
		{"regions agree", []msg.ProbeResult{listed("eu", 0, fpFresh, 2), listed("us", 0, fpFresh, 2), listed("ap", 0, fpFresh, 2)}, nil, nil},
		{"one region", []msg.ProbeResult{listed("eu", 0, fpFresh, 2)}, nil, nil},
		{"regionless results are not compared", []msg.ProbeResult{listed("", 0, fpFresh, 2), listed("", 30*time.Second, fpStale, 1)}, nil, nil},
		{"one stale region of three", []msg.ProbeResult{listed("eu", 0, fpStale, 1), listed("us", 0, fpFresh, 2), listed("ap", 0, fpFresh, 2)},
			[]string{fpFresh, fpStale}, []string{"regions disagree on the tool catalog of docs: ap=aaaaaaaaaaaa…, eu=bbbbbbbbbbbb…, us=aaaaaaaaaaaa…", "eu lacks tools: fetch"}},
		{"a down region is not compared", []msg.ProbeResult{listed("eu", 0, fpFresh, 2), down}, nil, nil},
		{"a degraded region is compared", []msg.ProbeResult{listed("eu", 0, fpFresh, 2), degraded}, []string{fpFresh, fpStale}, []string{"us lacks tools: fetch"}},
		{"a region's latest listing counts", []msg.ProbeResult{listed("eu", 0, fpStale, 1), listed("eu", 30*time.Second, fpFresh, 2), listed("us", 0, fpFresh, 2)}, nil, nil},
		{"a failure after a listing keeps the listing", []msg.ProbeResult{listed("eu", 0, fpFresh, 2), listed("us", 0, fpStale, 1), down},
			[]string{fpFresh, fpStale}, []string{"us lacks tools: fetch"}},
		{"three catalogs", []msg.ProbeResult{listed("eu", 0, fpStale, 1), listed("us", 0, fpFresh, 2), listed("ap", 0, fpOther, 3)},
			[]string{fpFresh, fpStale, fpOther}, []string{"ap=cccccccccccc…"}},
	}
	tools := map[string][]string{fpFresh: {"fetch", "search"}, fpStale: {"search"}, fpOther: {"fetch", "search", "admin"}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ev := CatalogDivergence("ep", "docs", w0, c.results, tools)
			if c.want == nil {
				if ev != nil {
					t.Fatalf("event %+v, want none", ev)
				}
				return
			}
			if ev == nil {
				t.Fatal("no event")
			}
			if err := model.ValidEvent(*ev); err != nil {
				t.Fatal(err)
			}
			if ev.Kind != model.EventCatalogDivergent || !ev.ObservedAt.Equal(w0) || ev.Severity != "warning" {
				t.Fatalf("event %+v", ev)
			}
			// Sorted: the fingerprint names the set of catalogs.
			if want := model.EventFingerprint("ep", model.EventCatalogDivergent, slices.Sorted(slices.Values(c.want))...); ev.Fingerprint != want {
				t.Fatalf("fingerprint %s, want the digest of %v", ev.Fingerprint, c.want)
			}
			for _, part := range c.message {
				if !strings.Contains(ev.Message, part) {
					t.Errorf("message %q lacks %q", ev.Message, part)
				}
			}
			var d divergenceDetails
			if err := json.Unmarshal(ev.Details, &d); err != nil || len(d.Regions) < 2 {
				t.Fatalf("details %s: %v", ev.Details, err)
			}
		})
	}
}

// TestCatalogDivergenceIsTheSetOfCatalogs: which region saw which catalog,
// a region missing from a window and the tool names known do not make
// another divergence; another catalog does.
func TestCatalogDivergenceIsTheSetOfCatalogs(t *testing.T) {
	base := CatalogDivergence("ep", "", w0, []msg.ProbeResult{listed("eu", 0, fpStale, 1), listed("us", 0, fpFresh, 2), listed("ap", 0, fpFresh, 2)}, nil)
	same := [][]msg.ProbeResult{
		{listed("eu", 0, fpStale, 1), listed("us", 0, fpFresh, 2)},                              // ap missing
		{listed("eu", 0, fpFresh, 2), listed("us", 0, fpStale, 1), listed("ap", 0, fpFresh, 2)}, // another region stale
	}
	for i, rs := range same {
		if ev := CatalogDivergence("ep", "", w0.Add(time.Duration(i+1)*time.Minute), rs, map[string][]string{fpFresh: {"a"}}); ev.Fingerprint != base.Fingerprint {
			t.Fatalf("case %d: fingerprint %s, want %s", i, ev.Fingerprint, base.Fingerprint)
		}
	}
	if !strings.Contains(base.Message, "of ep:") {
		t.Fatalf("message %q does not name the endpoint by ID when it has no name", base.Message)
	}
	other := CatalogDivergence("ep", "", w0, []msg.ProbeResult{listed("eu", 0, fpOther, 3), listed("us", 0, fpFresh, 2)}, nil)
	if other.Fingerprint == base.Fingerprint {
		t.Fatal("another pair of catalogs has the same fingerprint")
	}
}

// testDivergenceRecordedOnce: three regions report every window, one of
// them a stale catalog; the first window decided records one
// catalog_divergent event (with the tool names from the regions' stored
// catalogs), the later ones none, and every window still gets its
// verdict.
func testDivergenceRecordedOnce(t *testing.T, e *aenv) {
	for reg, doc := range map[string]string{
		"eu": `{"fingerprint":"` + fpStale + `","tools":[{"name":"search"}]}`,
		"us": `{"fingerprint":"` + fpFresh + `","tools":[{"name":"search"},{"name":"fetch"}]}`,
		"ap": `{"fingerprint":"` + fpFresh + `","tools":[{"name":"search"},{"name":"fetch"}]}`,
	} {
		if err := e.st.PutObject(e.ctx, store.KindCatalog, store.ProberObjectID("ep", reg), []byte(doc)); err != nil {
			t.Fatal(err)
		}
	}
	const windows = 4
	for w := range windows {
		at := time.Duration(w) * time.Minute
		for _, r := range []msg.ProbeResult{listed("eu", at, fpStale, 1), listed("us", at, fpFresh, 2), listed("ap", at, fpFresh, 2)} {
			e.sendResult(r)
		}
		e.consume()
		e.clk.Set(w0.Add(at + time.Minute + 10*time.Second))
		if err := e.agg.Tick(e.ctx); err != nil {
			t.Fatal(err)
		}
	}
	if vs := e.published(); len(vs) != windows {
		t.Fatalf("%d verdicts, want %d", len(vs), windows)
	}
	evs, err := e.st.ListEvents(e.ctx, "ep", store.EventFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 1 || evs[0].Kind != model.EventCatalogDivergent || !evs[0].ObservedAt.Equal(w0) {
		t.Fatalf("events %+v, want one catalog_divergent observed in the first window", evs)
	}
	if !strings.Contains(evs[0].Message, "eu lacks tools: fetch") {
		t.Fatalf("message %q does not name the missing tool", evs[0].Message)
	}
	if got := testutil.ToFloat64(e.agg.Metrics().Events.WithLabelValues(model.EventCatalogDivergent)); got != 1 {
		t.Fatalf("mcpmon_events_total{kind=catalog_divergent} = %v, want 1", got)
	}
}

// withRegions gives e's aggregator the region set eu, us, ap.
func withRegions(t *testing.T, e *aenv) *aenv {
	t.Helper()
	var err error
	e.agg, err = New(Options{Store: e.st, Publisher: e.pub, Window: time.Minute, Grace: 10 * time.Second, Clock: e.clk,
		Regions: []string{"eu", "us", "ap"}, Metrics: NewMetrics(nil, nil)})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestDivergenceRecordedOnce(t *testing.T) {
	testDivergenceRecordedOnce(t, withRegions(t, newAenv(t)))
}

func TestDivergenceRecordedOnceRedis(t *testing.T) {
	testDivergenceRecordedOnce(t, withRegions(t, newRedisAenv(t)))
}

// TestNoDivergenceWithoutRegionSet: probers of a deployment without a
// region set take turns and share one catalog, whatever their labels.
func TestNoDivergenceWithoutRegionSet(t *testing.T) {
	e := newAenv(t)
	e.sendResult(listed("eu", 0, fpStale, 1))
	e.sendResult(listed("us", 0, fpFresh, 2))
	e.consume()
	e.clk.Set(w0.Add(time.Minute + 10*time.Second))
	if err := e.agg.Tick(e.ctx); err != nil {
		t.Fatal(err)
	}
	if evs, err := e.st.ListEvents(e.ctx, "ep", store.EventFilter{}); err != nil || len(evs) != 0 {
		t.Fatalf("events %+v, %v; want none", evs, err)
	}
}

// TestDivergenceRecordedBeforeTheVerdict: the verdict's publish fails
// (a queue outage) after the event was appended; the window is decided
// again next tick and the event is not appended twice.
func TestDivergenceRecordedBeforeTheVerdict(t *testing.T) {
	e := withRegions(t, newAenv(t))
	e.sendResult(listed("eu", 0, fpStale, 1))
	e.sendResult(listed("us", 0, fpFresh, 2))
	e.consume()
	e.clk.Set(w0.Add(time.Minute + 10*time.Second))
	e.pub.fail = 1
	if err := e.agg.Tick(e.ctx); err == nil {
		t.Fatal("tick with the queue down succeeded")
	}
	evs, err := e.st.ListEvents(e.ctx, "ep", store.EventFilter{})
	if err != nil || len(evs) != 1 {
		t.Fatalf("events after the failed publish = %+v, %v; want the divergence already recorded", evs, err)
	}
	if err := e.agg.Tick(e.ctx); err != nil {
		t.Fatal(err)
	}
	if vs := e.published(); len(vs) != 1 {
		t.Fatalf("verdicts %+v, want the window's one", vs)
	}
	if evs, _ := e.st.ListEvents(e.ctx, "ep", store.EventFilter{}); len(evs) != 1 {
		t.Fatalf("events after the retry = %+v, want still one", evs)
	}
}
