package scheduler

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

// SlotsIn must count exactly the slots the running scheduler emits, window
// by window, for @every grids (dense, sparse, not dividing the window) and
// cron, or the aggregator would call a quiet window no_data (or miss one).
func TestSlotsInAgreesWithEmittedSlots(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{}
		s := New(rec, Options{})
		schedules := map[string]string{
			"every10s": "@every 10s",
			"every7s":  "@every 7s",
			"every5m":  "@every 5m",
			"every90s": "@every 90s",
			"cron2m":   "*/2 * * * *",
			"cronNY":   "CRON_TZ=America/New_York 3,7 * * * *",
		}
		for id, sc := range schedules {
			if err := s.Upsert(ep(id, sc)); err != nil {
				t.Fatal(err)
			}
		}
		begin := time.Now()
		stop := start(t, s)
		const windows = 15
		// Compare whole windows only, from the first one after the start:
		// slots before Upsert are never emitted.
		first := begin.Truncate(time.Minute).Add(time.Minute)
		end := first.Add(windows * time.Minute)
		time.Sleep(end.Sub(begin) + time.Second)
		synctest.Wait()
		stop()

		for id, sc := range schedules {
			emitted := map[int64]int{} // by window start, Unix seconds
			for _, slot := range rec.slotsOf(t, id) {
				emitted[slot.Truncate(time.Minute).Unix()]++
			}
			total := 0
			for w := first; w.Before(end); w = w.Add(time.Minute) {
				got, err := SlotsIn(ep(id, sc), w, w.Add(time.Minute))
				if err != nil {
					t.Fatal(err)
				}
				if got != emitted[w.Unix()] {
					t.Errorf("%s (%s) window %s: SlotsIn = %d, scheduler emitted %d", id, sc, w.Format("15:04"), got, emitted[w.Unix()])
				}
				total += got
			}
			if total == 0 {
				t.Errorf("%s: no slots in %d windows; the comparison proves nothing", id, windows)
			}
		}
		// The sparse schedule really has empty windows.
		empty := 0
		for w := first; w.Before(end); w = w.Add(time.Minute) {
			if n, _ := SlotsIn(ep("every5m", "@every 5m"), w, w.Add(time.Minute)); n == 0 {
				empty++
			}
		}
		if empty != 12 {
			t.Errorf("@every 5m: %d of 15 one-minute windows without a slot, want 12", empty)
		}
	})
}

func TestSlotsInBounds(t *testing.T) {
	e := ep("bounds", "@every 10s")
	sl, err := NewSlots(e)
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
	if _, err := SlotsIn(ep("bad", "bogus"), t0, t0.Add(time.Minute)); !errors.Is(err, ErrInvalidSchedule) {
		t.Fatalf("SlotsIn with a bad schedule: err = %v, want ErrInvalidSchedule", err)
	}
	if n := (Slots{}).In(t0, t0.Add(time.Hour)); n != 0 {
		t.Fatalf("zero Slots.In = %d, want 0", n)
	}
}

// BenchmarkSlots measures what the aggregator pays per endpoint and window:
// a parse when the schedule changed (NewSlots), then In.
func BenchmarkSlots(b *testing.B) {
	w := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, sc := range []string{"@every 30s", "*/5 * * * *"} {
		e := ep("bench", sc)
		b.Run("NewSlots/"+sc, func(b *testing.B) {
			for b.Loop() {
				if _, err := NewSlots(e); err != nil {
					b.Fatal(err)
				}
			}
		})
		sl, _ := NewSlots(e)
		b.Run("In/"+sc, func(b *testing.B) {
			for b.Loop() {
				sl.In(w, w.Add(time.Minute))
			}
		})
	}
}
