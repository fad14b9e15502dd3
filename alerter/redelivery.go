package alerter

import (
	"time"
)

// Redelivery across drains. One dispatch of a notification to a sink
// retries within its budget (retryStage); past it the notification stays
// pending, and this rule decides when a later drain or sweep may call that
// sink for it again: exponential backoff per sink and notification from
// DefaultRedeliveryInitial to DefaultRedeliveryMax, each wait jittered
// into [w/2, w] so the sinks and replicas of one outage spread out, and
// given up GiveUpAfter after the first failure (the last try falls on
// that deadline). A sink given up on is recorded as gave_up on the
// incident and in mcpmon_deliveries_given_up_total, and never called for
// that notification again.
//
// Incident notifications keep the state on their outbox entry
// (pending.Retry), written in the compare-and-set that records the
// attempt, so a restart or another replica carries on with the same wait
// rather than starting over. Change events, whose pending list keeps no
// per-sink state, keep it in memory and take their age from the event's
// ObservedAt: a restart can cost one early try, never a longer life.
const (
	DefaultGiveUpAfter       = 24 * time.Hour
	DefaultRedeliveryInitial = 30 * time.Second
	DefaultRedeliveryMax     = time.Hour
)

// sinkRetry is one sink's redelivery state for one notification.
type sinkRetry struct {
	// FirstFailedAt starts the give-up clock.
	FirstFailedAt time.Time `json:"firstFailedAt"`
	Failures      int       `json:"failures"`
	// NextAt is when the sink may be called again for the notification.
	NextAt time.Time `json:"nextAt"`
}

// redelivery is the rule's parameters.
type redelivery struct {
	initial, max, giveUp time.Duration
}

// newRedelivery scales the waits to the give-up age: the defaults for
// 24h, and never fewer than about a dozen tries within a shorter one.
func newRedelivery(giveUp time.Duration) redelivery {
	if giveUp <= 0 {
		giveUp = DefaultGiveUpAfter
	}
	return redelivery{
		initial: max(min(DefaultRedeliveryInitial, giveUp/16), time.Millisecond),
		max:     max(min(DefaultRedeliveryMax, giveUp/4), time.Millisecond),
		giveUp:  giveUp,
	}
}

// due reports whether a sink in state s may be called at now.
func (r redelivery) due(s sinkRetry, now time.Time) bool { return !now.Before(s.NextAt) }

// afterFailure folds one more failed dispatch at now into s. origin is when
// the failing began if s has none yet (the dispatch's first attempt, or a
// change event's ObservedAt); jitter, in [0, 1), places the wait. gaveUp is
// true once the failure comes at or after the give-up deadline.
func (r redelivery) afterFailure(s sinkRetry, origin, now time.Time, jitter float64) (next sinkRetry, gaveUp bool) {
	if s.FirstFailedAt.IsZero() {
		s.FirstFailedAt = origin
		if origin.IsZero() || origin.After(now) {
			s.FirstFailedAt = now
		}
	}
	s.Failures++
	deadline := s.FirstFailedAt.Add(r.giveUp)
	if !now.Before(deadline) {
		return s, true
	}
	w := r.max
	if s.Failures-1 < 40 {
		if d := r.initial << (s.Failures - 1); d > 0 && d < r.max {
			w = d
		}
	}
	jitter = min(max(jitter, 0), 1)
	w = w/2 + time.Duration(jitter*float64(w/2))
	s.NextAt = now.Add(w)
	if s.NextAt.After(deadline) {
		s.NextAt = deadline
	}
	return s, false
}
