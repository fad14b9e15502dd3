package model

import (
	"math/rand/v2"
	"testing"
	"testing/quick"
	"time"

	"github.com/mcpmon/mcpmon/pkg/msg"
)

var day0 = time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)

func TestUptimeDefinitions(t *testing.T) {
	b := func(h int, up, degr, reg, down, nodata, maint int64) Rollup {
		return Rollup{Start: day0.Add(time.Duration(h) * time.Hour), Up: up, Degraded: degr, Regional: reg, Down: down, NoData: nodata, Maintenance: maint}
	}
	for _, tt := range []struct {
		name     string
		buckets  []Rollup
		from, to time.Time
		measured bool
		ratio    float64
	}{
		{"all up", []Rollup{b(0, 3600, 0, 0, 0, 0, 0)}, day0, day0.Add(time.Hour), true, 1},
		{"degraded counts as up", []Rollup{b(0, 1800, 1800, 0, 0, 0, 0)}, day0, day0.Add(time.Hour), true, 1},
		{"regional counts as up", []Rollup{b(0, 0, 0, 3600, 0, 0, 0)}, day0, day0.Add(time.Hour), true, 1},
		{"down counts against", []Rollup{b(0, 2700, 0, 0, 900, 0, 0)}, day0, day0.Add(time.Hour), true, 0.75},
		{"no_data excluded", []Rollup{b(0, 900, 0, 0, 900, 1800, 0)}, day0, day0.Add(time.Hour), true, 0.5},
		{"maintenance excluded", []Rollup{b(0, 900, 0, 0, 900, 0, 1800)}, day0, day0.Add(time.Hour), true, 0.5},
		{"nothing measured", []Rollup{b(0, 0, 0, 0, 0, 3000, 600)}, day0, day0.Add(time.Hour), false, 0},
		{"empty", nil, day0, day0.Add(time.Hour), false, 0},
		{"bucket at to excluded", []Rollup{b(0, 3600, 0, 0, 0, 0, 0), b(1, 0, 0, 0, 3600, 0, 0)}, day0, day0.Add(time.Hour), true, 1},
		{"bucket at from included", []Rollup{b(0, 3600, 0, 0, 0, 0, 0), b(1, 0, 0, 0, 3600, 0, 0)}, day0.Add(time.Hour), day0.Add(2 * time.Hour), true, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rep := Uptime(tt.buckets, tt.from, tt.to)
			if rep.Measured != tt.measured || rep.Ratio != tt.ratio {
				t.Fatalf("Uptime = %v (measured %v), want %v (measured %v)", rep.Ratio, rep.Measured, tt.ratio, tt.measured)
			}
		})
	}
}

func randomBuckets(r *rand.Rand, n int) []Rollup {
	out := make([]Rollup, n)
	for i := range out {
		out[i] = Rollup{Start: day0.Add(time.Duration(i) * time.Hour), Up: r.Int64N(3600), Degraded: r.Int64N(600),
			Regional: r.Int64N(300), Down: r.Int64N(1200), NoData: r.Int64N(900), Maintenance: r.Int64N(900)}
		if r.IntN(4) == 0 {
			out[i].Up, out[i].Degraded, out[i].Regional, out[i].Down = 0, 0, 0, 0
		}
	}
	return out
}

func TestUptimeProperties(t *testing.T) {
	cfg := &quick.Config{MaxCount: 500}
	end := func(n int) time.Time { return day0.Add(time.Duration(n) * time.Hour) }
	t.Run("RatioInUnitInterval", func(t *testing.T) {
		f := func(seed uint64, n uint8) bool {
			rep := Uptime(randomBuckets(rand.New(rand.NewPCG(seed, 1)), int(n)), day0, end(int(n)))
			return rep.Ratio >= 0 && rep.Ratio <= 1 && (rep.Measured || rep.Ratio == 0)
		}
		if err := quick.Check(f, cfg); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("NoDataAndMaintenanceNeverChangeIt", func(t *testing.T) {
		f := func(seed uint64, n uint8, extra uint32, maint bool) bool {
			bs := randomBuckets(rand.New(rand.NewPCG(seed, 2)), int(n)+1)
			before := Uptime(bs, day0, end(len(bs)))
			i := int(seed % uint64(len(bs)))
			if maint {
				bs[i].Maintenance += int64(extra)
			} else {
				bs[i].NoData += int64(extra)
			}
			after := Uptime(bs, day0, end(len(bs)))
			return after.Ratio == before.Ratio && after.Measured == before.Measured
		}
		if err := quick.Check(f, cfg); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("SplitAndMergeEqualsWhole", func(t *testing.T) {
		f := func(seed uint64, n, cut uint8) bool {
			bs := randomBuckets(rand.New(rand.NewPCG(seed, 3)), int(n))
			mid := end(int(cut) % (int(n) + 1))
			whole := Uptime(bs, day0, end(int(n)))
			a, b := Uptime(bs, day0, mid), Uptime(bs, mid, end(int(n)))
			merged := Uptime([]Rollup{
				{Start: day0, Up: a.Up + b.Up, Degraded: a.Degraded + b.Degraded, Regional: a.Regional + b.Regional,
					Down: a.Down + b.Down, NoData: a.NoData + b.NoData, Maintenance: a.Maintenance + b.Maintenance},
			}, day0, end(int(n)+1))
			return merged.Ratio == whole.Ratio && merged.Measured == whole.Measured &&
				a.Down+b.Down == whole.Down && a.NoData+b.NoData == whole.NoData
		}
		if err := quick.Check(f, cfg); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("MoreDownNeverRaisesIt", func(t *testing.T) {
		f := func(seed uint64, n uint8, extra uint16) bool {
			bs := randomBuckets(rand.New(rand.NewPCG(seed, 4)), int(n)+1)
			before := Uptime(bs, day0, end(len(bs)))
			bs[0].Down += int64(extra)
			return Uptime(bs, day0, end(len(bs))).Ratio <= before.Ratio || !before.Measured
		}
		if err := quick.Check(f, cfg); err != nil {
			t.Fatal(err)
		}
	})
}

// TestUptimeSyntheticMonth: a month of one-minute verdicts folded with
// FoldVerdict, with a 2h17m outage, 1h of maintenance and 30m without
// data, gives the uptime computed by hand, to the second.
func TestUptimeSyntheticMonth(t *testing.T) {
	days := map[time.Time]*Rollup{}
	outage := [2]time.Time{day0.Add(9*Daily + 12*time.Hour + 3*time.Minute), day0.Add(9*Daily + 14*time.Hour + 20*time.Minute)}
	maint := [2]time.Time{day0.Add(14*Daily + 23*time.Hour + 30*time.Minute), day0.Add(15*Daily + 30*time.Minute)} // across midnight
	silent := [2]time.Time{day0.Add(20 * Daily), day0.Add(20*Daily + 30*time.Minute)}
	in := func(w time.Time, r [2]time.Time) bool { return !w.Before(r[0]) && w.Before(r[1]) }
	for w := day0; w.Before(day0.Add(30 * Daily)); w = w.Add(time.Minute) {
		v := msg.Verdict{EndpointID: "ep", Window: w, WindowSecs: 60, State: msg.StateUp}
		switch {
		case in(w, outage):
			v.State = msg.StateDown
		case in(w, silent):
			v.State = msg.StateNoData
		}
		v.Maintenance = in(w, maint)
		_, d := RollupBuckets(w)
		if days[d] == nil {
			days[d] = &Rollup{Start: d}
		}
		if err := FoldVerdict(days[d], v); err != nil {
			t.Fatal(err)
		}
	}
	var bs []Rollup
	for _, r := range days {
		bs = append(bs, *r)
	}
	rep := Uptime(bs, day0, day0.Add(30*Daily))
	const total, down, maintS, nodata = 30 * 86400, 137 * 60, 3600, 1800
	if rep.Down != down || rep.Maintenance != maintS || rep.NoData != nodata || rep.Up != total-down-maintS-nodata {
		t.Fatalf("report %+v", rep)
	}
	if want := float64(total-down-maintS-nodata) / float64(total-maintS-nodata); rep.Ratio != want {
		t.Fatalf("ratio %v, want %v", rep.Ratio, want)
	}
}

func TestRangeBoundsAtWindowBoundary(t *testing.T) {
	for _, tt := range []struct {
		name     string
		now      time.Time
		from, to time.Time
	}{
		{"24h mid-hour", day0.Add(14*time.Hour + 30*time.Second), day0.Add(-9 * time.Hour), day0.Add(15 * time.Hour)},
		{"24h on the hour", day0.Add(14 * time.Hour), day0.Add(-9 * time.Hour), day0.Add(15 * time.Hour)},
		{"24h a nanosecond before", day0.Add(14*time.Hour - 1), day0.Add(-10 * time.Hour), day0.Add(14 * time.Hour)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			from, to, size, ok := RangeBounds("24h", tt.now)
			if !ok || size != Hourly || !from.Equal(tt.from) || !to.Equal(tt.to) {
				t.Fatalf("RangeBounds = %s..%s (%s), want %s..%s", from, to, size, tt.from, tt.to)
			}
		})
	}
	from, to, size, _ := RangeBounds("90d", day0.Add(5*time.Hour))
	if size != Daily || !to.Equal(day0.Add(Daily)) || to.Sub(from) != 90*Daily {
		t.Fatalf("90d = %s..%s (%s)", from, to, size)
	}
	if _, _, _, ok := RangeBounds("1y", day0); ok {
		t.Fatal("unknown range accepted")
	}
}
