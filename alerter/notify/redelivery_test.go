package notify

import (
	"testing"
	"time"
)

// TestRedeliveryRule: the wait doubles from the initial one to the cap,
// jitter keeps it in [w/2, w], the last try falls on the give-up deadline
// and a failure at or after it gives up.
func TestRedeliveryRule(t *testing.T) {
	r := NewRedelivery(DefaultGiveUpAfter)
	if r.Initial != 5*time.Second || r.Max != time.Hour {
		t.Fatalf("defaults for 24h: %+v", r)
	}
	start := t0
	cases := []struct {
		name     string
		failures int // already recorded
		since    time.Duration
		jitter   float64
		wantWait time.Duration
		gaveUp   bool
	}{
		{"first failure, no jitter", 0, 0, 0, 2500 * time.Millisecond, false},
		{"first failure, full jitter", 0, 0, 0.999999999, 5 * time.Second, false},
		{"third failure", 2, 5 * time.Minute, 1, 20 * time.Second, false},
		{"capped", 20, 10 * time.Hour, 1, time.Hour, false},
		{"capped, low jitter", 20, 10 * time.Hour, 0, 30 * time.Minute, false},
		{"last try falls on the deadline", 30, 23*time.Hour + 50*time.Minute, 1, 10 * time.Minute, false},
		{"at the deadline", 31, 24 * time.Hour, 0, 0, true},
		{"past the deadline", 31, 30 * time.Hour, 0, 0, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := RetryState{Failures: c.failures}
			if c.failures > 0 {
				s.FirstFailedAt = start
			}
			now := start.Add(c.since)
			got, gaveUp := r.AfterFailure(s, start, now, c.jitter)
			if gaveUp != c.gaveUp {
				t.Fatalf("gaveUp = %v, want %v", gaveUp, c.gaveUp)
			}
			if got.Failures != c.failures+1 || !got.FirstFailedAt.Equal(start) {
				t.Fatalf("state %+v: want failures %d since %s", got, c.failures+1, start)
			}
			if !gaveUp {
				if w := got.NextAt.Sub(now); w < c.wantWait-time.Second || w > c.wantWait {
					t.Fatalf("wait %s, want %s", w, c.wantWait)
				}
				if r.Due(got, got.NextAt.Add(-time.Nanosecond)) || !r.Due(got, got.NextAt) {
					t.Fatalf("due around NextAt %s is wrong", got.NextAt)
				}
			}
		})
	}
	// A restart's future origin (clock skew) starts the clock at now.
	if s, _ := r.AfterFailure(RetryState{}, start.Add(time.Hour), start, 0); !s.FirstFailedAt.Equal(start) {
		t.Fatalf("future origin: FirstFailedAt %s, want now", s.FirstFailedAt)
	}
	// Scaled down: a give-up age of 2s still gets about a dozen tries.
	if small := NewRedelivery(2 * time.Second); small.Initial != 125*time.Millisecond || small.Max != 500*time.Millisecond {
		t.Fatalf("2s: %+v", small)
	}
}
