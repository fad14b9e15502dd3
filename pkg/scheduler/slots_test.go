package scheduler

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/mcpmon/mcpmon/pkg/schedule"
)

// schedule.Slots.In must count exactly the slots the running scheduler emits, window
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
				sl, err := schedule.New(id, sc)
				got := sl.In(w, w.Add(time.Minute))
				if err != nil {
					t.Fatal(err)
				}
				if got != emitted[w.Unix()] {
					t.Errorf("%s (%s) window %s: Slots.In = %d, scheduler emitted %d", id, sc, w.Format("15:04"), got, emitted[w.Unix()])
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
			if sl, _ := schedule.New("every5m", "@every 5m"); sl.In(w, w.Add(time.Minute)) == 0 {
				empty++
			}
		}
		if empty != 12 {
			t.Errorf("@every 5m: %d of 15 one-minute windows without a slot, want 12", empty)
		}
	})
}
