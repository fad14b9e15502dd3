package storetest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/DataDog/sketches-go/ddsketch"

	"github.com/mcpmon/mcpmon/pkg/clock"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/msg"
	"github.com/mcpmon/mcpmon/pkg/store"
)

// rollupDigest is what a rollup holds, comparable across reads: its
// counters and its sketches' bins.
func rollupDigest(t *testing.T, rs []model.Rollup) string {
	t.Helper()
	out := ""
	for _, r := range rs {
		out += fmt.Sprintf("%s u%d g%d r%d d%d n%d m%d v%d t[%s] i[%s]\n", r.Start.UTC().Format(time.RFC3339),
			r.Up, r.Degraded, r.Regional, r.Down, r.NoData, r.Maintenance, r.Verdicts, bins(r.Total), bins(r.Initialize))
	}
	return out
}

func bins(s *ddsketch.DDSketch) string {
	if s == nil {
		return "nil"
	}
	out := ""
	s.ForEach(func(v, n float64) bool {
		out += fmt.Sprintf("%.6g:%g ", v, n)
		return false
	})
	return out
}

func latencyVerdict(ep string, window time.Time, state msg.State, total, init float64) msg.Verdict {
	v := verdict(ep, window, state)
	v.Latency = &msg.VerdictLatency{Total: []float64{total}, Initialize: []float64{init}}
	return v
}

func readRollups(t *testing.T, s store.Store, ep string, size time.Duration) []model.Rollup {
	t.Helper()
	rs, err := s.Rollups(t.Context(), ep, size, time.Time{}, Start.Add(1000*24*time.Hour))
	must(t, err)
	return rs
}

// testRollupsCountEachWindowOnce: redelivering and replaying every verdict
// of a run, and two replicas recording the same window at once, leave every
// rollup as the first recording made it.
func testRollupsCountEachWindowOnce(t *testing.T, s store.Store, clk *clock.Fake) {
	ctx := t.Context()
	var run []msg.Verdict
	states := []msg.State{msg.StateUp, msg.StateUp, msg.StateDegraded, msg.StateDown, msg.StateRegional, msg.StateNoData, msg.StateUp}
	for i := range 3 * 60 { // three hours of one-minute windows
		v := latencyVerdict("ep", Start.Add(time.Duration(i)*time.Minute), states[i%len(states)], 0.1+float64(i%13)/10, 0.05)
		v.Maintenance = i >= 120 && i < 130
		run = append(run, v)
	}
	for _, v := range run {
		clk.Set(v.Window.Add(70 * time.Second))
		applied, err := s.RecordVerdict(ctx, v)
		must(t, err)
		if !applied {
			t.Fatalf("first recording of %s not applied", v.Window)
		}
	}
	hours, days := readRollups(t, s, "ep", model.Hourly), readRollups(t, s, "ep", model.Daily)
	if len(hours) != 3 || len(days) != 1 {
		t.Fatalf("%d hourly and %d daily rollups, want 3 and 1", len(hours), len(days))
	}
	if days[0].Verdicts != int64(len(run)) || days[0].Maintenance != 600 {
		t.Fatalf("day rollup folds %d verdicts and %ds of maintenance, want %d and 600", days[0].Verdicts, days[0].Maintenance, len(run))
	}
	if got := days[0].Total.GetCount(); got != float64(len(run)-10) {
		t.Fatalf("total sketch holds %v values, want %d (maintenance left out)", got, len(run)-10)
	}
	want := rollupDigest(t, hours) + rollupDigest(t, days)

	// Redelivered (same verdict again) and replayed (the whole run again,
	// in order), then two replicas racing on the next window.
	for _, v := range append(append([]msg.Verdict{run[len(run)-1]}, run...), run...) {
		applied, err := s.RecordVerdict(ctx, v)
		must(t, err)
		if applied {
			t.Fatalf("replayed verdict %s applied", v.Window)
		}
	}
	if got := rollupDigest(t, readRollups(t, s, "ep", model.Hourly)) + rollupDigest(t, readRollups(t, s, "ep", model.Daily)); got != want {
		t.Fatalf("rollups changed by replay:\ngot  %s\nwant %s", got, want)
	}
	next := latencyVerdict("ep", Start.Add(3*time.Hour), msg.StateDown, 2, 1)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			if _, err := s.RecordVerdict(ctx, next); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	hours = readRollups(t, s, "ep", model.Hourly)
	if len(hours) != 4 || hours[3].Down != 60 || hours[3].Verdicts != 1 || hours[3].Total.GetCount() != 1 {
		t.Fatalf("racing replicas: newest hour %+v", hours[len(hours)-1])
	}
}

// testRollupsMonth: a synthetic month of 15-minute verdicts with a known
// outage, maintenance and a silent stretch gives the uptime computed by
// hand, to the second, and the latency quantiles of what was folded.
func testRollupsMonth(t *testing.T, s store.Store, clk *clock.Fake) {
	ctx := t.Context()
	const win = 15 * time.Minute
	month := Start.Truncate(model.Daily)
	at := func(day, h, m int) time.Time {
		return month.Add(time.Duration(day)*model.Daily + time.Duration(h)*time.Hour + time.Duration(m)*time.Minute)
	}
	outageFrom, outageTo := at(9, 12, 0), at(9, 14, 15) // 2h15m down
	maintFrom, maintTo := at(14, 2, 0), at(14, 3, 0)    // 1h maintenance (down meanwhile)
	silentFrom, silentTo := at(20, 6, 0), at(20, 6, 30) // 30m no_data
	degrFrom, degrTo := at(25, 0, 0), at(25, 0, 45)     // 45m degraded
	in := func(w, from, to time.Time) bool { return !w.Before(from) && w.Before(to) }
	for w := month; w.Before(at(30, 0, 0)); w = w.Add(win) {
		st := msg.StateUp
		switch {
		case in(w, outageFrom, outageTo), in(w, maintFrom, maintTo):
			st = msg.StateDown
		case in(w, silentFrom, silentTo):
			st = msg.StateNoData
		case in(w, degrFrom, degrTo):
			st = msg.StateDegraded
		}
		v := latencyVerdict("ep", w, st, 0.2, 0.1)
		if st == msg.StateDown {
			v.Latency = nil
		}
		v.WindowSecs = int(win / time.Second)
		v.Maintenance = in(w, maintFrom, maintTo)
		clk.Set(w.Add(win + 20*time.Second))
		_, err := s.RecordVerdict(ctx, v)
		must(t, err)
	}
	days, err := s.Rollups(ctx, "ep", model.Daily, month, at(30, 0, 0))
	must(t, err)
	if len(days) != 30 {
		t.Fatalf("%d daily rollups, want 30", len(days))
	}
	rep := model.Uptime(days, month, at(30, 0, 0))
	const total = 30 * 86400
	wantDown, wantMaint, wantNoData, wantDegr := int64(8100), int64(3600), int64(1800), int64(2700)
	if rep.Down != wantDown || rep.Maintenance != wantMaint || rep.NoData != wantNoData || rep.Degraded != wantDegr ||
		rep.Up != total-wantDown-wantMaint-wantNoData-wantDegr {
		t.Fatalf("report %+v", rep)
	}
	wantRatio := float64(total-wantDown-wantMaint-wantNoData) / float64(total-wantMaint-wantNoData)
	if !rep.Measured || rep.Ratio != wantRatio {
		t.Fatalf("uptime %v (measured %v), want %v", rep.Ratio, rep.Measured, wantRatio)
	}
	tot, _, err := model.MergeLatency(days, month, at(30, 0, 0))
	must(t, err)
	p99, err := tot.GetValueAtQuantile(0.99)
	must(t, err)
	if p99 < 0.2*(1-model.SketchRelativeAccuracy) || p99 > 0.2*(1+model.SketchRelativeAccuracy) {
		t.Fatalf("p99 total = %v, want 0.2 ±1%%", p99)
	}
}

// testRollupsRetention: hourly rollups are kept for HourlyBuckets hours,
// daily ones for DailyBuckets days; older buckets are not returned.
func testRollupsRetention(t *testing.T, s store.Store, clk *clock.Fake) {
	ctx := t.Context()
	_, err := s.RecordVerdict(ctx, latencyVerdict("ep", Start, msg.StateUp, 1, 1))
	must(t, err)
	if n := len(readRollups(t, s, "other", model.Hourly)); n != 0 {
		t.Fatalf("another endpoint has %d rollups", n)
	}
	clk.Set(Start.Add(model.HourlyBuckets*time.Hour - time.Second))
	if n := len(readRollups(t, s, "ep", model.Hourly)); n != 1 {
		t.Fatalf("hour bucket gone before %d hours", model.HourlyBuckets)
	}
	clk.Set(Start.Add(model.HourlyBuckets * time.Hour))
	if n := len(readRollups(t, s, "ep", model.Hourly)); n != 0 {
		t.Fatalf("hour bucket kept past %d hours", model.HourlyBuckets)
	}
	if n := len(readRollups(t, s, "ep", model.Daily)); n != 1 {
		t.Fatal("day bucket gone after 7 days")
	}
	clk.Set(Start.Truncate(model.Daily).Add(model.DailyBuckets * model.Daily))
	_, err = s.RecordVerdict(ctx, latencyVerdict("ep", clk.Now(), msg.StateUp, 1, 1))
	must(t, err)
	if days := readRollups(t, s, "ep", model.Daily); len(days) != 1 || !days[0].Start.Equal(clk.Now()) {
		t.Fatalf("daily rollups past %d days: %s", model.DailyBuckets, rollupDigest(t, days))
	}
}

// RollupDay is one endpoint's day of one-minute verdicts from day (UTC
// midnight) with varied latencies, mostly up: the workload of the rollup
// size benchmarks.
func RollupDay(ep string, day time.Time) []msg.Verdict {
	out := make([]msg.Verdict, 0, 1440)
	for i := range 1440 {
		st := msg.StateUp
		switch {
		case i%97 == 0:
			st = msg.StateDown
		case i%31 == 0:
			st = msg.StateDegraded
		}
		// 80 ms to about 2 s, spread over many sketch bins.
		v := latencyVerdict(ep, day.Add(time.Duration(i)*time.Minute), st, 0.08*float64(1+(i*37)%25), 0.02*float64(1+(i*11)%40))
		out = append(out, v)
	}
	return out
}
