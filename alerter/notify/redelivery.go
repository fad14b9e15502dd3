package notify

import "time"

// Redelivery across dispatches. One dispatch of a notification to a sink
// retries within its budget (the retry stage); past it the notification
// stays pending, and this rule decides when a later dispatch may call that
// sink for it again: exponential backoff per sink and notification from
// DefaultRedeliveryInitial to DefaultRedeliveryMax, each wait jittered
// into [w/2, w] so the sinks and replicas of one outage spread out, and
// given up GiveUpAfter after the first failure (the last try falls on
// that deadline). The ledger stage folds each failure into
// Delivery.Retry and marks a notification given up on done; where the
// state is kept between dispatches is the caller's (an incident's outbox
// entry, a change event's in-memory map).
const (
	DefaultGiveUpAfter = 24 * time.Hour
	// DefaultRedeliveryInitial is short: the first redelivery of a page is
	// what a responder waits for after a sink's blip, and the doubling
	// spares a sink that stays down (12 tries reach the hour).
	DefaultRedeliveryInitial = 5 * time.Second
	DefaultRedeliveryMax     = time.Hour
)

// RetryState is one sink's redelivery state for one notification. It is
// stored on incident outbox entries: the JSON names are a stored format.
type RetryState struct {
	// FirstFailedAt starts the give-up clock.
	FirstFailedAt time.Time `json:"firstFailedAt"`
	Failures      int       `json:"failures"`
	// NextAt is when the sink may be called again for the notification.
	NextAt time.Time `json:"nextAt"`
}

// Redelivery is the rule's parameters.
type Redelivery struct {
	Initial, Max, GiveUpAfter time.Duration
}

// NewRedelivery scales the waits to the give-up age: the defaults for
// 24h, and never fewer than about a dozen tries within a shorter one.
func NewRedelivery(giveUp time.Duration) Redelivery {
	if giveUp <= 0 {
		giveUp = DefaultGiveUpAfter
	}
	return Redelivery{
		Initial:     max(min(DefaultRedeliveryInitial, giveUp/16), time.Millisecond),
		Max:         max(min(DefaultRedeliveryMax, giveUp/4), time.Millisecond),
		GiveUpAfter: giveUp,
	}
}

// Due reports whether a sink in state s may be called at now.
func (r Redelivery) Due(s RetryState, now time.Time) bool { return !now.Before(s.NextAt) }

// Stale reports whether state s can no longer matter at now: past the
// give-up age and the longest wait, its notification was settled or given
// up on, here or elsewhere.
func (r Redelivery) Stale(s RetryState, now time.Time) bool {
	return !now.Before(s.FirstFailedAt.Add(r.GiveUpAfter + r.Max))
}

// AfterFailure folds one more failed dispatch at now into s. origin is when
// the failing began if s has none yet (the dispatch's first attempt, or a
// change event's ObservedAt); jitter, in [0, 1), places the wait. gaveUp is
// true once the failure comes at or after the give-up deadline.
func (r Redelivery) AfterFailure(s RetryState, origin, now time.Time, jitter float64) (next RetryState, gaveUp bool) {
	if s.FirstFailedAt.IsZero() {
		s.FirstFailedAt = origin
		if origin.IsZero() || origin.After(now) {
			s.FirstFailedAt = now
		}
	}
	s.Failures++
	deadline := s.FirstFailedAt.Add(r.GiveUpAfter)
	if !now.Before(deadline) {
		return s, true
	}
	w := r.Max
	if s.Failures-1 < 40 {
		if d := r.Initial << (s.Failures - 1); d > 0 && d < r.Max {
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
