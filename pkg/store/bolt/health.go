// Whether the file's writes succeed. A full or failing disk fails the
// commits (bbolt's write of pages or its fdatasync) while reads of the
// pages already mapped still work, so a read (Ping's View) cannot tell:
// the commits themselves are counted (pkg/writehealth), and Ping reports
// the store not ready while one failed recently.

package bolt

import (
	"errors"
	"log/slog"
	"time"

	"go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/mcpmon/mcpmon/pkg/writehealth"
)

// writeHealth is the file's writehealth, fed by its commits.
type writeHealth struct{ *writehealth.Health }

func newWriteHealth(path string, now func() time.Time, log *slog.Logger) *writeHealth {
	return &writeHealth{writehealth.New(writehealth.Options{What: "the store's file " + path,
		Fix: "free space on its disk or check the disk", Now: now, Log: log})}
}

// failed records a failed commit. A write after Close (a late writer at
// shutdown) is not the disk's failure.
func (h *writeHealth) failed(err error) {
	if errors.Is(err, berrors.ErrDatabaseNotOpen) {
		return
	}
	h.Failed(err)
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
