package subscribe

import (
	"log/slog"
	"sync"

	"github.com/mcpmon/mcpmon/pkg/model"
)

// maxWarned bounds the subscribers warnOnce remembers; past it the set is
// forgotten, so a subscriber is warned of again at most that often.
const maxWarned = 10000

// warnOnce logs, once per subscriber per process, that a subscriber's
// sealed fields do not open: the notice is given up (alert.ErrPermanent,
// counted as abandoned), and without the line nothing would say that a
// subscriber the owner sees as confirmed is sent nothing. The line names
// the page and the subscriber's ID, never its address or URL.
type warnOnce struct {
	log  *slog.Logger
	mu   sync.Mutex
	seen map[string]bool
}

func newWarnOnce(log *slog.Logger) *warnOnce {
	return &warnOnce{log: log, seen: map[string]bool{}}
}

func (w *warnOnce) unopened(sub model.Subscriber, err error) {
	w.mu.Lock()
	first := !w.seen[sub.ID]
	if first {
		if len(w.seen) >= maxWarned {
			clear(w.seen)
		}
		w.seen[sub.ID] = true
	}
	w.mu.Unlock()
	if first {
		w.log.Warn("a subscriber's sealed address does not open, so it is sent nothing; put the key that sealed it back in the keyring, or delete the subscriber",
			"page", sub.Page, "subscriber", sub.ID, "kind", sub.KindOrEmail(), "err", err)
	}
}
