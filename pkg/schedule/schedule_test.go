package schedule

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestParseSchedule(t *testing.T) {
	for _, tc := range []struct {
		in      string
		wantErr bool
	}{
		{"@every 30s", false},
		{"  @every 5m  ", false},
		{"*/5 * * * *", false},
		{"0 9 * * 1-5", false},
		{"@hourly", false},
		{"@daily", false},
		{"CRON_TZ=America/New_York 0 9 * * *", false},
		{"TZ=UTC @every 1m", false},
		{"", true},
		{"   ", true},
		{"bogus", true},
		{"* * * * * *", true}, // seconds field not accepted
		{"61 * * * *", true},
		{"@every 500ms", true},
		{"@every", true},
		{"@every ten", true},
		{"@fortnightly", true},
		{"0 0 30 2 *", true}, // 30 February never comes
		{"TZ=UTC", true},     // robfig would panic
		{"CRON_TZ=Mars/Olympus 0 * * * *", true},
		{"CRON_TZ=Local 0 9 * * *", true}, // the host's zone: replicas would disagree
		{"TZ=Local @every 1m", true},
		{"CRON_TZ=local 0 9 * * *", true},
	} {
		t.Run(tc.in, func(t *testing.T) {
			sched, err := ParseSchedule(tc.in)
			if tc.wantErr {
				if !errors.Is(err, ErrInvalidSchedule) {
					t.Fatalf("ParseSchedule(%q) err = %v, want ErrInvalidSchedule", tc.in, err)
				}
				return
			}
			if err != nil || sched == nil {
				t.Fatalf("ParseSchedule(%q) = %v, %v", tc.in, sched, err)
			}
		})
	}
}

func TestCronEvaluatedInUTC(t *testing.T) {
	sched, err := ParseSchedule("0 9 * * *")
	if err != nil {
		t.Fatal(err)
	}
	from := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	if got, want := sched.Next(from), time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC); !got.Equal(want) {
		t.Fatalf("Next = %v, want %v (UTC, not the host zone)", got, want)
	}
}

// Two schedulers started at different moments must emit identical slots, or
// content-based dedup could not collapse them.
func TestEverySlotsAreDeterministicAndSpread(t *testing.T) {
	sched, _ := ParseSchedule("@every 60s")
	a := newTiming("ep-1", sched)
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	n1 := a.next(t0.Add(123 * time.Millisecond))
	n2 := newTiming("ep-1", sched).next(t0.Add(7*time.Second + 999*time.Millisecond))
	if n1.Sub(n2)%time.Minute != 0 {
		t.Fatalf("slots from different start times are not on the same grid: %v vs %v", n1, n2)
	}
	if n1.Nanosecond() != 0 || n1.Location() != time.UTC {
		t.Fatalf("slot %v is not a whole UTC second", n1)
	}
	if !n1.After(t0) || n1.Sub(t0) > time.Minute {
		t.Fatalf("next slot %v not within one period after %v", n1, t0)
	}
	if got := a.next(n1); got.Sub(n1) != time.Minute {
		t.Fatalf("period = %v, want 1m", got.Sub(n1))
	}
	offsets := map[int]bool{}
	for i := range 200 {
		tm := newTiming(fmt.Sprintf("ep-%d", i), sched)
		offsets[tm.next(t0).Second()] = true
	}
	if len(offsets) < 30 {
		t.Fatalf("200 endpoints use only %d distinct seconds of the minute; want them spread", len(offsets))
	}
}

func TestSlotsInBounds(t *testing.T) {
	sl, err := New("bounds", "@every 10s")
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	slot := sl.Next(t0.Add(-time.Nanosecond)) // first slot >= t0
	for _, tc := range []struct {
		name     string
		from, to time.Time
		want     int
	}{
		{"from is inclusive", slot, slot.Add(time.Second), 1},
		{"to is exclusive", slot.Add(-time.Second), slot, 0},
		{"sub-second after the slot", slot.Add(time.Millisecond), slot.Add(10 * time.Second), 0},
		{"sub-second before the next", slot.Add(time.Millisecond), slot.Add(10*time.Second + time.Millisecond), 1},
		{"one minute", t0, t0.Add(time.Minute), 6},
		{"empty range", slot, slot, 0},
		{"reversed range", slot.Add(time.Minute), slot, 0},
	} {
		if got := sl.In(tc.from, tc.to); got != tc.want {
			t.Errorf("%s: In(%s, %s) = %d, want %d", tc.name, tc.from.Format(time.RFC3339Nano), tc.to.Format(time.RFC3339Nano), got, tc.want)
		}
	}
	if _, err := New("bad", "bogus"); !errors.Is(err, ErrInvalidSchedule) {
		t.Fatalf("New with a bad schedule: err = %v, want ErrInvalidSchedule", err)
	}
	if n := (Slots{}).In(t0, t0.Add(time.Hour)); n != 0 {
		t.Fatalf("zero Slots.In = %d, want 0", n)
	}
}

// BenchmarkSlots measures what the aggregator pays per endpoint and window:
// a parse when the schedule changed (New), then In.
func BenchmarkSlots(b *testing.B) {
	w := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, sc := range []string{"@every 30s", "*/5 * * * *"} {
		b.Run("New/"+sc, func(b *testing.B) {
			for b.Loop() {
				if _, err := New("bench", sc); err != nil {
					b.Fatal(err)
				}
			}
		})
		sl, _ := New("bench", sc)
		b.Run("In/"+sc, func(b *testing.B) {
			for b.Loop() {
				sl.In(w, w.Add(time.Minute))
			}
		})
	}
}

func TestShortestInterval(t *testing.T) {
	from := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		schedule string
		want     time.Duration
	}{
		{"@every 2s", 2 * time.Second},
		{"@every 5m", 5 * time.Minute},
		{"* * * * *", time.Minute},
		{"*/15 * * * *", 15 * time.Minute},
		{"0,1 9 * * *", time.Minute},
		{"0 9 * * 1", 7 * 24 * time.Hour},
	} {
		sl, err := New("ep", tc.schedule)
		if err != nil {
			t.Fatalf("%s: %v", tc.schedule, err)
		}
		if got := sl.ShortestInterval(from); got != tc.want {
			t.Errorf("%s: shortest interval %s, want %s", tc.schedule, got, tc.want)
		}
	}
	if got := (Slots{}).ShortestInterval(from); got != 0 {
		t.Errorf("zero Slots: %s, want 0", got)
	}
}

// TestLocalZoneRefusedWithReason: CRON_TZ=Local would make every replica
// compute slots in its own host zone; the refusal says why and what to use.
func TestLocalZoneRefusedWithReason(t *testing.T) {
	_, err := ParseSchedule("CRON_TZ=Local 0 9 * * *")
	if !errors.Is(err, ErrInvalidSchedule) || !strings.Contains(err.Error(), "Local time zone") {
		t.Fatalf("err = %v, want ErrInvalidSchedule explaining the Local zone", err)
	}
}
