package clock

import (
	"sync"
	"time"
)

// Every is due at most once per Interval: a warning that every failed
// operation would repeat (a full disk, a refused write, a slow replica)
// is logged once per interval instead. The zero value's first Due is true.
type Every struct {
	Interval time.Duration

	mu   sync.Mutex
	last time.Time
}

// Due reports whether Interval has passed at now since the last Due that
// returned true (or none did), and if so counts now as that one.
func (e *Every) Due(now time.Time) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.last.IsZero() && now.Sub(e.last) < e.Interval {
		return false
	}
	e.last = now
	return true
}
