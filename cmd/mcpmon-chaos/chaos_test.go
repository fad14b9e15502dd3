package main

import (
	"math/rand/v2"
	"os/exec"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/testpeers"
)

// TestChaosEveryOutagePagesOnce runs the chaos harness at the CI size in
// every mode: every planned outage must page exactly once (one open, one
// resolve) while replicas, the single process, agents (talking to the
// fleet or to one `mcpmon run`), redis-server or a Redis Cluster primary
// are SIGKILLed.
func TestChaosEveryOutagePagesOnce(t *testing.T) {
	sqsEndpoint := testpeers.SQSEndpoint(t)
	_ = testpeers.RedisURL(t) // .ci/start-redis.sh installed redis-server; the harness runs its own to kill it
	if testing.Short() {
		t.Skip("runs the pipeline for about 90s per mode; skipped with -short")
	}
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Fatalf("redis-server not in PATH: %v", err)
	}
	bin := testpeers.Mcpmon(t)
	for _, mode := range []string{ModeFleet, ModeEmbedded, ModeAgent, ModeEmbeddedAgent, ModeCluster} {
		t.Run(mode, func(t *testing.T) {
			o := ciOptions(mode, sqsEndpoint, bin)
			if mode == ModeCluster {
				// The fleet on its own 3+3 cluster, one primary killed:
				// the smallest size that still crosses the failover.
				o.Endpoints, o.Outages = 4, 1
			}
			if err := run(t.Context(), o, t.Output()); err != nil {
				t.Fatalf("chaos %s: %v (the report above says which outages and why)", mode, err)
			}
		})
	}
}

// ciOptions is the small size: 6 endpoints × 2 outages, about 90s per mode
// on a 2-core machine.
func ciOptions(mode, sqsEndpoint, bin string) options {
	o := defaultOptions()
	o.Mode, o.SQSEndpoint, o.Mcpmon = mode, sqsEndpoint, bin
	o.Endpoints, o.Outages = 6, 2
	if o.agents() {
		o.Endpoints, o.Outages = 4, 1 // about 60s: the chaos package stays within minutes on 2 cores
	}
	return o
}

func TestChaosPlanAlternatesOutagesAndUpPhases(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	o := planOptions{Endpoints: 4, Outages: 3, Warmup: 4 * time.Second, Outage: 10 * time.Second, Up: 10 * time.Second}
	p := makePlan(o, start, rand.New(rand.NewPCG(1, 1)))
	if len(p.Outages) != 12 {
		t.Fatalf("%d outages, want 12", len(p.Outages))
	}
	kinds := map[Mode]int{}
	for e, idx := range p.ByTarget {
		if len(idx) != 3 {
			t.Fatalf("endpoint %d has %d outages, want 3", e, len(idx))
		}
		prevEnd := start.Add(o.Warmup)
		for n, i := range idx {
			out := p.Outages[i]
			kinds[out.Kind]++
			if out.Endpoint != e || out.Seq != n || out.End.Sub(out.Start) != o.Outage {
				t.Errorf("endpoint %d outage %d = %+v", e, n, out)
			}
			gap := out.Start.Sub(prevEnd)
			if n == 0 && (gap < 0 || gap >= o.Up) || n > 0 && gap != o.Up {
				t.Errorf("endpoint %d outage %d starts %s after the previous phase, want an up phase of %s", e, n, gap, o.Up)
			}
			if got := p.phaseAt(e, out.Start, out.End); got != string(out.Kind) {
				t.Errorf("phaseAt(outage) = %s, want %s", got, out.Kind)
			}
			prevEnd = out.End
		}
		if !p.End.After(prevEnd.Add(o.Up - time.Nanosecond)) {
			t.Errorf("plan ends %s, before endpoint %d's last up phase", p.End, e)
		}
	}
	for _, k := range OutageKinds {
		if kinds[k] != 4 {
			t.Errorf("%s planned %d times, want 4 (kinds rotate)", k, kinds[k])
		}
	}
}

func TestChaosCheckerClassifiesAlerts(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	// Endpoint "e0" (index 0): outages [10s, 20s) and [30s, 40s); bound 10s.
	plan := Plan{Start: t0, End: at(50), Up: 10 * time.Second, ByTarget: [][]int{{0, 1}}, Outages: []Outage{
		{Endpoint: 0, Seq: 0, Kind: ModeHTTP503, Start: at(10), End: at(20)},
		{Endpoint: 0, Seq: 1, Kind: ModeHang, Start: at(30), End: at(40)},
	}}
	ids := map[string]int{"e0": 0}
	open := func(s float64, inc string, status int) delivery {
		return delivery{At: at(s), Status: status, Key: "alert-e0-" + inc + ":open:webhook", Kind: "open", IncidentID: inc, EndpointID: "e0"}
	}
	resolve := func(s float64, inc string, status int) delivery {
		return delivery{At: at(s), Status: status, Key: "alert-e0-" + inc + ":resolve:webhook", Kind: "resolve", IncidentID: inc, EndpointID: "e0"}
	}
	tests := []struct {
		name                                     string
		ds                                       []delivery
		lost, lostResolve, dups, spurious, delay int
	}{
		{name: "each outage paged once", ds: []delivery{
			open(14, "i1", 204), resolve(26, "i1", 204), open(35, "i2", 204), resolve(46, "i2", 204)}, delay: 2},
		{name: "a 500-answered delivery retried is not a duplicate", ds: []delivery{
			open(14, "i1", 500), open(15, "i1", 204), resolve(26, "i1", 204), open(35, "i2", 204), resolve(46, "i2", 204)}, delay: 2},
		{name: "the same key accepted twice is a duplicate", ds: []delivery{
			open(14, "i1", 204), open(15, "i1", 204), resolve(26, "i1", 204), open(35, "i2", 204), resolve(46, "i2", 204)}, dups: 1, delay: 2},
		{name: "an outage with no open is lost", ds: []delivery{
			open(14, "i1", 204), resolve(26, "i1", 204)}, lost: 1, delay: 1},
		{name: "an outage whose open was only answered 500 is lost", ds: []delivery{
			open(14, "i1", 500), open(35, "i2", 204), resolve(46, "i2", 204)}, lost: 1, delay: 1},
		{name: "a second incident inside one outage is spurious", ds: []delivery{
			open(14, "i1", 204), resolve(17, "i1", 204), open(19, "i3", 204), resolve(26, "i3", 204), open(35, "i2", 204), resolve(46, "i2", 204)},
			spurious: 2, delay: 2},
		{name: "an open in an up phase beyond the bound is spurious", ds: []delivery{
			open(14, "i1", 204), resolve(26, "i1", 204), open(35, "i2", 204), resolve(46, "i2", 204), open(5, "i0", 204)},
			spurious: 1, delay: 2},
		{name: "an alert for an unknown endpoint is spurious", ds: []delivery{
			open(14, "i1", 204), resolve(26, "i1", 204), open(35, "i2", 204), resolve(46, "i2", 204),
			{At: at(15), Status: 204, Key: "x", Kind: "open", IncidentID: "x", EndpointID: "other"}},
			spurious: 1, delay: 2},
		{name: "an incident that never resolved before the next outage", ds: []delivery{
			open(14, "i1", 204), resolve(46, "i1", 204)}, lost: 1, delay: 1},
		{name: "an incident opened and never resolved", ds: []delivery{
			open(14, "i1", 204), open(35, "i2", 204), resolve(46, "i2", 204)}, lostResolve: 1, delay: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := check(plan, []time.Time{at(10.5), at(30.5)}, ids, tt.ds, 10*time.Second)
			if len(r.LostOpen) != tt.lost || len(r.LostResolve) != tt.lostResolve || len(r.Duplicates) != tt.dups ||
				len(r.Spurious) != tt.spurious || len(r.Delays) != tt.delay {
				t.Errorf("lost %d, lost resolve %d, duplicates %d, spurious %v, delays %v; want %d, %d, %d, %d, %d delays",
					len(r.LostOpen), len(r.LostResolve), len(r.Duplicates), r.Spurious, r.Delays, tt.lost, tt.lostResolve, tt.dups, tt.spurious, tt.delay)
			}
			if want := tt.lost+tt.lostResolve+tt.dups+tt.spurious > 0; r.failed() != want {
				t.Errorf("failed() = %v, want %v", r.failed(), want)
			}
		})
	}
}

func TestChaosPercentileIsNearestRank(t *testing.T) {
	var ds []time.Duration
	for i := 1; i <= 100; i++ {
		ds = append(ds, time.Duration(i)*time.Second)
	}
	for p, want := range map[float64]time.Duration{50: 50 * time.Second, 95: 95 * time.Second, 99: 99 * time.Second, 100: 100 * time.Second} {
		if got := percentile(ds, p); got != want {
			t.Errorf("p%v = %s, want %s", p, got, want)
		}
	}
	if got := percentile(nil, 99); got != 0 {
		t.Errorf("p99 of nothing = %s, want 0", got)
	}
}

func TestChaosDiagnoseNamesWhereTheAlertWentMissing(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	w, up := 2*time.Second, 10*time.Second
	out := Outage{Kind: ModeHang, Start: at(10), End: at(20)}
	states := func(s ...string) []verdictRow { // one verdict per window from +10s
		var vs []verdictRow
		for i, st := range s {
			vs = append(vs, verdictRow{Window: at(10 + 2*i), State: st})
		}
		return vs
	}
	opened := &delivery{Kind: "open"}
	tests := []struct {
		name string
		oc   outcome
		vs   []verdictRow
		want string
	}{
		{"no probe at all", outcome{Outage: out}, states("no_data", "no_data", "no_data", "no_data", "no_data"), "no probe reached the endpoint"},
		{"probes came late", outcome{Outage: out, FirstBad: at(17)}, states("no_data", "no_data", "no_data", "down", "up"), "probes stalled into the outage"},
		{"no_data despite probes", outcome{Outage: out, FirstBad: at(10)}, states("no_data", "no_data", "down", "no_data", "no_data"), "windows judged no_data / never decided"},
		{"down verdicts, no alert", outcome{Outage: out, FirstBad: at(10)}, states("down", "down", "down", "down", "down"), "verdicts right, alert missing"},
		{"never two up windows after", outcome{Outage: out, FirstBad: at(10), Open: opened},
			states("down", "down", "down", "down", "down", "no_data", "up", "no_data", "no_data", "no_data"), "windows judged no_data / never decided"},
		{"up windows, no resolve", outcome{Outage: out, FirstBad: at(10), Open: opened},
			states("down", "down", "down", "down", "down", "up", "up", "up", "up", "up"), "verdicts right, alert missing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := diagnose(tt.oc, tt.vs, w, up)
			if got := diagnosisKind(d); got != tt.want {
				t.Errorf("diagnosis %q is %q, want %q", d, got, tt.want)
			}
		})
	}
}

func TestChaosRepeatIsExcusedOnlyByAKillOfItsSenderNearTheAcceptance(t *testing.T) {
	t0 := time.Date(2026, 12, 7, 18, 33, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	dup := func(ts ...float64) duplicate {
		d := duplicate{Key: "k"}
		for _, s := range ts {
			d.Times = append(d.Times, at(s))
		}
		return d
	}
	tests := []struct {
		name   string
		d      duplicate
		kills  []time.Time
		window bool
	}{
		{"killed 10 ms after the acceptance, resent after the restart", dup(30, 30.4), []time.Time{at(30.01)}, true},
		{"killed while the request was on the wire", dup(30, 30.4), []time.Time{at(29.99)}, true},
		{"no kill at all", dup(30, 30.4), nil, false},
		{"the only kill is seconds away", dup(30, 40), []time.Time{at(35)}, false},
		{"the kill came after the repeat", dup(30, 30.2), []time.Time{at(30.5)}, false},
		{"two repeats, only the first explained", dup(30, 30.4, 31), []time.Time{at(30.01)}, false},
		{"two repeats, each after a kill of its own", dup(30, 30.4, 30.9), []time.Time{at(30.01), at(30.41)}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			un, in := splitByMarkWindow([]duplicate{tt.d}, tt.kills, markWindow)
			if got := len(in) == 1; got != tt.window || len(un)+len(in) != 1 {
				t.Errorf("in window %v (unexplained %d), want in window %v", got, len(un), tt.window)
			}
			r := report{Duplicates: un, InWindow: in}
			if r.failed() == tt.window {
				t.Errorf("failed() = %v with the repeat in window %v", r.failed(), tt.window)
			}
		})
	}
}
