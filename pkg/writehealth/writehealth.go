// Package writehealth tells whether a durable backend's writes succeed: the
// one home for "a full or failing disk" across the embedded store's file,
// the embedded queue's own file and Redis refusing writes it cannot persist
// (MISCONF). Such a backend still answers reads (pages already mapped, a
// PING), so a read cannot tell; the failed writes themselves are counted,
// logged at most once per Hold, and Check reports the backend not ready
// until Hold after the last one. StillNamed is the other way a file's
// writes are lost while they succeed: the file deleted or replaced under
// the process.
package writehealth

import (
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpmon/mcpmon/pkg/clock"
)

// Hold is how long after a failed write Check still reports it, and the
// least time between two of Failed's log lines: on a nearly full disk some
// writes fit (in pages a file already has) and others fail, and readiness
// should not flap with each.
const Hold = 30 * time.Second

// Options name the backend and what to do about it.
type Options struct {
	// What names the backend in the log and in Check's error: "the store's
	// file /var/lib/mcpmon/store.db", "Redis at 10.0.0.5:6379".
	What string
	// Fix says what the operator should do: "free space on its disk or
	// check the disk".
	Fix string
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Log gets one error per Hold while writes fail (default
	// slog.Default()).
	Log *slog.Logger
}

// Health counts a backend's failed writes and remembers the last.
type Health struct {
	o        Options
	failures atomic.Uint64
	logs     clock.Every

	mu      sync.Mutex
	lastAt  time.Time
	lastErr error
}

// New returns the health of the backend o names; nothing failed yet.
func New(o Options) *Health {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	return &Health{o: o, logs: clock.Every{Interval: Hold}}
}

// Failed records a write the backend could not persist, and logs it at
// most once per Hold (the writers report their own errors as well).
func (h *Health) Failed(err error) {
	n := h.failures.Add(1)
	now := h.o.Now()
	h.mu.Lock()
	h.lastAt, h.lastErr = now, err
	h.mu.Unlock()
	if h.logs.Due(now) {
		h.o.Log.Error(fmt.Sprintf("%s failed a write: %s; /readyz reports it until %s after the last failure (logged at most every %s)", h.o.What, h.o.Fix, Hold, Hold),
			"err", err, "failed_writes", n)
	}
}

// Check is nil unless a write failed within Hold.
func (h *Health) Check() error {
	h.mu.Lock()
	at, err := h.lastAt, h.lastErr
	h.mu.Unlock()
	if err == nil {
		return nil
	}
	if age := h.o.Now().Sub(at); age < Hold {
		return fmt.Errorf("writes to %s are failing (the last %s ago: %v): %s; reads still work, and it is ready again %s after the last failure",
			h.o.What, age.Round(time.Second), err, h.o.Fix, Hold)
	}
	return nil
}

// Failures is how many writes failed since the backend was opened.
func (h *Health) Failures() uint64 { return h.failures.Load() }

// StillNamed is nil while path names the file opened was read from when
// the backend opened it: a file deleted or replaced under a running
// process takes every write since to a file no name reaches, lost when
// the process stops (`rm -rf data` in the wrong terminal, a cleaner
// sweeping the directory).
func StillNamed(opened os.FileInfo, path string) error {
	named, err := os.Stat(path)
	if err == nil && os.SameFile(opened, named) {
		return nil
	}
	what := "was deleted"
	if err == nil {
		what = "was replaced by another file"
	}
	return fmt.Errorf("%s %s while mcpmon runs: what it writes now goes to a file no name reaches and is lost when it stops; stop mcpmon and put the file back from a backup, or restart it to begin with what %s holds then", path, what, path)
}
