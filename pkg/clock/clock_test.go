package clock

import (
	"testing"
	"time"
)

func TestFakeAdvance(t *testing.T) {
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	f := NewFake(start)
	f.Advance(5 * time.Minute)
	if got, want := f.Now(), start.Add(5*time.Minute); !got.Equal(want) {
		t.Fatalf("Now() = %v, want %v", got, want)
	}
}

func TestEveryIsDueOncePerInterval(t *testing.T) {
	t0 := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	e := Every{Interval: 30 * time.Second}
	for _, c := range []struct {
		at   time.Duration
		want bool
	}{{0, true}, {time.Second, false}, {29 * time.Second, false}, {30 * time.Second, true}, {45 * time.Second, false}, {61 * time.Second, true}} {
		if got := e.Due(t0.Add(c.at)); got != c.want {
			t.Errorf("Due at +%s = %v, want %v", c.at, got, c.want)
		}
	}
}
