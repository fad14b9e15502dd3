// Whether the file's writes succeed. A full or failing disk fails the
// commits (bbolt's write of pages or its fdatasync) while reads of the
// pages already mapped still work, so a read (Ping's View) cannot tell:
// the commits themselves are counted, and Ping reports the store not
// ready while one failed recently.

package bolt

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/mcpmon/mcpmon/pkg/clock"
)

// writeFailHold is how long after a failed commit Ping still reports it:
// on a nearly full disk some commits fit in pages the file already has and
// others fail, and readiness should not flap with each.
const writeFailHold = 30 * time.Second

// writeHealth counts the file's failed commits and remembers the last.
type writeHealth struct {
	path     string
	now      func() time.Time
	log      *slog.Logger
	failures atomic.Uint64

	logs clock.Every // paces failed's log: once per writeFailHold

	mu      sync.Mutex
	lastAt  time.Time
	lastErr error
}

// failed records a failed commit and logs it, at most once per
// writeFailHold (the writers log their own failures as well). A write
// after Close (a late writer at shutdown) is not the disk's failure.
func (h *writeHealth) failed(err error) {
	if errors.Is(err, berrors.ErrDatabaseNotOpen) {
		return
	}
	n := h.failures.Add(1)
	now := h.now()
	h.mu.Lock()
	h.lastAt, h.lastErr = now, err
	h.mu.Unlock()
	if h.logs.Due(now) {
		h.log.Error("the store's file failed a commit: free space on its disk or check the disk; /readyz reports it until 30s after the last failure",
			"file", h.path, "err", err, "failed_commits", n)
	}
}

// check is nil unless a commit failed within writeFailHold.
func (h *writeHealth) check() error {
	h.mu.Lock()
	at, err := h.lastAt, h.lastErr
	h.mu.Unlock()
	if err == nil {
		return nil
	}
	if age := h.now().Sub(at); age < writeFailHold {
		return fmt.Errorf("writes to %s are failing (the last %s ago: %v): free space on its disk or check the disk; reads still work, and the store is ready again %s after the last failure",
			h.path, age.Round(time.Second), err, writeFailHold)
	}
	return nil
}

// update runs fn in a write transaction of db, counting a commit that
// fails (an error that is not fn's).
func (h *writeHealth) update(db *bbolt.DB, fn func(*bbolt.Tx) error) error {
	var fnErr error
	err := db.Update(func(tx *bbolt.Tx) error {
		fnErr = fn(tx)
		return fnErr
	})
	if err != nil && fnErr == nil {
		h.failed(err)
	}
	return err
}
