// Group commit of the file's batched writes: the store's per-probe writes
// and, when the embedded queue shares the file, the queue's commits
// (Store.BatchOf). Concurrent writes share one transaction and one pair of
// fdatasyncs, as with bbolt's DB.Batch, but the pause that gathers them is
// taken only while writes are concurrent: bbolt waits MaxBatchDelay after
// every first write, so a lone caller paid it on each write, and a delay
// long enough to gather a loaded pipeline's writes (tens of milliseconds)
// made every sequential write that slow.

package bolt

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"go.etcd.io/bbolt"
)

// Defaults of Options.CommitInterval and the most calls one commit carries.
//
// 2 ms by default, the delay bbolt's DB.Batch waited here before: under
// load, commits that take longer than that (an fdatasync pair) follow
// each other at once, as they did; writes that come faster than a commit
// still share one (with no pause at all, 2,000 writes/s on a fast disk
// made 0.87 commits a write where 2 ms makes about 0.18). Longer
// intervals were measured at 10,000 endpoints
// (docs/contributing/benchmarks.md): 10 ms made a third to a half fewer
// commits (and fdatasyncs) per probe and a seventh to a fifth fewer
// pages, but CPU per probe did not move and the verdict → alert delay grew
// from 71 ms to 640 ms (every durable step of the alert path waits);
// 25 ms also held each probe's three durable steps so long that the
// pipeline fell to 147 of the 333 probes a second due.
const (
	DefaultCommitInterval = 2 * time.Millisecond
	maxCommitCalls        = 1000 // bbolt's DefaultMaxBatchSize
)

// committer runs batched writes in shared transactions.
type committer struct {
	db       *bbolt.DB
	health   *writeHealth  // counts the commits that fail
	interval time.Duration // Options.CommitInterval
	max      int           // a commit is due at once with this many calls

	mu     sync.Mutex
	open   []*call       // calls waiting for the next commit
	busy   bool          // a goroutine is committing, or about to
	full   chan struct{} // told when open reaches max during a pause
	last   time.Time     // when the last commit started
	shared bool          // writes were concurrent at the last commit (ended)
	// running is set while a commit's transaction runs; joined is set when
	// a call arrives meanwhile.
	running, joined bool
}

type call struct {
	fn      func(*bbolt.Tx) error
	writers int // the writers fn carries (BatchOf)
	err     chan error
}

// errSolo tells a call whose function failed its shared transaction to
// run alone.
var errSolo = errors.New("bolt store: run the write alone")

func newCommitter(db *bbolt.DB, interval time.Duration, health *writeHealth) *committer {
	return &committer{db: db, health: health, interval: interval, max: maxCommitCalls, full: make(chan struct{}, 1)}
}

// Batch runs fn in a write transaction shared with the concurrent calls
// and returns once it is committed. fn may run more than once: if another
// function of its transaction fails, fn runs again in the next one; if fn
// fails, it runs again alone in a transaction of its own (as bbolt's
// DB.Batch does), and its error is returned.
func (c *committer) Batch(fn func(*bbolt.Tx) error) error { return c.BatchOf(1, fn) }

// BatchOf is Batch for a function that carries the writes of several
// writers (the embedded queue's commit of its callers' operations): a
// commit of it is as shared as a commit of that many calls.
func (c *committer) BatchOf(writers int, fn func(*bbolt.Tx) error) error {
	cl := &call{fn: fn, writers: max(1, writers), err: make(chan error, 1)}
	c.mu.Lock()
	c.open = append(c.open, cl)
	if c.running {
		c.joined = true
	}
	switch {
	case !c.busy:
		c.busy = true
		go c.run()
	case len(c.open) == c.max:
		select {
		case c.full <- struct{}{}:
		default:
		}
	}
	c.mu.Unlock()
	if err := <-cl.err; !errors.Is(err, errSolo) {
		return err
	}
	return c.health.update(c.db, fn)
}

// commitPause is how long a commit that could start at now waits for more
// calls: until interval after the last commit started, when writes were
// concurrent at the last commit (shared: it carried more than one, or
// another arrived while it ran, so more are on their way)
// and some but fewer than most calls wait; else none (with none waiting
// the committer stops, and the next call starts it again). A lone caller
// is never paused; under load, commits start at most once per interval.
func commitPause(now, last time.Time, shared bool, waiting, most int, interval time.Duration) time.Duration {
	if waiting == 0 || !shared || waiting >= most || interval <= 0 {
		return 0
	}
	return max(0, last.Add(interval).Sub(now))
}

// run commits the open calls until none is left.
func (c *committer) run() {
	for {
		c.mu.Lock()
		wait := commitPause(time.Now(), c.last, c.shared, len(c.open), c.max, c.interval)
		c.mu.Unlock()
		if wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-c.full:
				t.Stop()
			}
		}
		c.mu.Lock()
		calls := c.open
		if len(calls) > c.max {
			calls = calls[:c.max]
			c.open = slices.Clone(c.open[c.max:]) // not pinning the calls taken
		} else {
			c.open = nil
		}
		if len(calls) == 0 {
			c.busy = false
			c.mu.Unlock()
			return
		}
		c.last, c.running, c.joined = time.Now(), true, false
		select { // a full signal left from the calls now taken
		case <-c.full:
		default:
		}
		c.mu.Unlock()
		c.commit(calls)
	}
}

// ended records that the commit of n writers is done, before its callers
// hear of it: a caller that writes again once told comes after the
// commit, not during it, so a lone writer is never taken for company.
func (c *committer) ended(n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.running = false
	c.shared = n > 1 || c.joined
}

// commit runs calls in one transaction; a call whose function fails is
// taken out and told to run alone, and the rest run again.
func (c *committer) commit(calls []*call) {
	n := 0
	for _, cl := range calls {
		n += cl.writers
	}
	for len(calls) > 0 {
		failed := -1
		err := c.db.Update(func(tx *bbolt.Tx) error {
			for i, cl := range calls {
				if err := safely(cl.fn, tx); err != nil {
					failed = i
					return err
				}
			}
			return nil
		})
		if failed >= 0 {
			calls[failed].err <- errSolo
			calls = slices.Delete(calls, failed, failed+1)
			continue
		}
		if err != nil { // the commit itself: a full or failing disk
			c.health.failed(err)
		}
		c.ended(n)
		for _, cl := range calls {
			cl.err <- err
		}
		return
	}
	c.ended(n)
}

// safely runs fn, turning a panic into an error (the call is then run
// alone, where the panic is its own).
func safely(fn func(*bbolt.Tx) error, tx *bbolt.Tx) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("bolt store: batched write panicked: %v", p)
		}
	}()
	return fn(tx)
}
