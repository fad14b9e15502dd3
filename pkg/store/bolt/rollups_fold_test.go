package bolt

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/clock"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/msg"
	"github.com/mcpmon/mcpmon/pkg/store/storetest"
)

// wantRollups folds vs one by one, as the store did per verdict, into
// buckets of size kept at now.
func wantRollups(t *testing.T, vs []msg.Verdict, size time.Duration, now time.Time) string {
	t.Helper()
	byStart := map[time.Time]*model.Rollup{}
	for _, v := range vs {
		hour, day := model.RollupBuckets(v.Window)
		start := hour
		if size == model.Daily {
			start = day
		}
		if !model.RollupKept(start, size, now) {
			continue
		}
		r, ok := byStart[start]
		if !ok {
			base, err := rollupRecord{}.rollup(start, size)
			if err != nil {
				t.Fatal(err)
			}
			r = &base
			byStart[start] = r
		}
		if err := model.FoldVerdict(r, v); err != nil {
			t.Fatal(err)
		}
	}
	var rs []model.Rollup
	for _, r := range byStart {
		rs = append(rs, *r)
	}
	slices.SortFunc(rs, func(a, b model.Rollup) int { return a.Start.Compare(b.Start) })
	return digest(rs)
}

func digest(rs []model.Rollup) string {
	var b strings.Builder
	for _, r := range rs {
		fmt.Fprintf(&b, "%s %s u%d g%d d%d n%d m%d v%d %x %x\n", r.Size, r.Start.Format(time.RFC3339), r.Up, r.Degraded, r.Down, r.NoData, r.Maintenance, r.Verdicts,
			model.EncodeSketch(r.Total), model.EncodeSketch(r.Initialize))
	}
	return b.String()
}

// storedHours returns the starts of id's hourly records on file.
func storedHours(t *testing.T, s *Store, id string) []time.Time {
	t.Helper()
	prefix := append(idPrefix(id), rollupTag(model.Hourly))
	return timesOnFile(t, s, bRollups, prefix, func(k []byte) (time.Time, bool) { return rollupStart(k, id) })
}

// TestRollupsFoldedAnHourAtATime: an endpoint's rollups are written once
// an hour, when a verdict of the next hour comes, not on every verdict,
// and read all along (through a reopen) as if every verdict had been
// folded as it came; a history trimmed while its endpoint is paused is
// folded before it goes.
func TestRollupsFoldedAnHourAtATime(t *testing.T) {
	ctx := t.Context()
	day := storetest.Start.Truncate(model.Daily)
	clk := clock.NewFake(day)
	path := filepath.Join(t.TempDir(), "store.db")
	opts := Options{Clock: clk, SweepInterval: -1, VerdictHistory: 2 * time.Hour}
	s, err := Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { s.Close() }()
	vs := storetest.RollupDay("ep", day)[:150] // 2½ hours of one-minute verdicts
	check := func(i int, folded time.Time) {
		t.Helper()
		now := clk.Now()
		for _, size := range []time.Duration{model.Hourly, model.Daily} {
			got, err := s.Rollups(ctx, "ep", size, day, day.Add(2*model.Daily))
			if err != nil {
				t.Fatal(err)
			}
			if g, w := digest(got), wantRollups(t, vs[:i+1], size, now); g != w {
				t.Fatalf("after verdict %d, %s rollups:\n%s\nwant (each verdict folded as it came):\n%s", i, size, g, w)
			}
		}
		// On file: the hours before folded, the newest verdict's hour
		// while it goes on, not after it.
		var want []time.Time
		for h := day; h.Before(folded); h = h.Add(model.Hourly) {
			want = append(want, h)
		}
		if got := storedHours(t, s, "ep"); !slices.Equal(got, want) {
			t.Fatalf("after verdict %d: hours on file %v, want %v", i, got, want)
		}
	}
	for i, v := range vs {
		clk.Set(v.Window.Add(70 * time.Second))
		if _, err := s.RecordVerdict(ctx, v); err != nil {
			t.Fatal(err)
		}
		hour := v.Window.Truncate(model.Hourly)
		check(i, hour)
		if i == 100 { // mid-hour: what is not folded yet is on file, in the history
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if s, err = Open(path, opts); err != nil {
				t.Fatal(err)
			}
			check(i, hour)
		}
	}

	// Paused from here: the history ages out of its 2 hours, and the sweep
	// folds the unfolded half hour before trimming it.
	clk.Set(vs[len(vs)-1].Window.Add(3 * time.Hour))
	if n, err := s.Sweep(ctx); err != nil || n == 0 {
		t.Fatalf("sweep = %d, %v; want the aged history trimmed", n, err)
	}
	if got := historyOnFile(t, s, "ep"); len(got) != 0 {
		t.Fatalf("%d verdicts left on file, want none", len(got))
	}
	check(len(vs)-1, day.Add(3*model.Hourly))
}
