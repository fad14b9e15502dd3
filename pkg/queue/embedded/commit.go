package embedded

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Group commit.
//
// Every call decides under b.mu, against the in-memory state, and changes
// that state at once; what it changed is appended, as encoded puts and
// deletes, to the open batch. The call then releases b.mu and waits until
// the batch holding its writes — and every batch before it — is committed.
// One committer goroutine commits batches in the order their writes were
// made, one bbolt transaction (and one set of fsyncs) per batch; while it
// commits, the calls that arrive fill the next batch. Under load a batch
// carries the sends, receives and deletes of every caller that arrived
// during the previous commit, and b.mu is never held across a disk write.
//
// Why a call may change memory before its write is durable: a state that
// is not yet committed is only ever seen by calls whose own writes (or, for
// a call that writes nothing, its wait — see barrier) come after it, in the
// same or a later batch, and no call returns before its batch is committed.
// So nothing uncommitted leaves the broker: a receiver gets a message only
// once the send that made it and its own receive are both on disk, and a
// duplicate send is answered with the original's ID only once the original
// is. What a crash costs, by where it strikes:
//
//   - before a batch commits: none of its calls has returned. Their sends
//     were not acknowledged (the publisher retries them with the same dedup
//     ID), their receives are undone (the messages were never handed out;
//     the receive count does not move), their deletes are undone (the
//     messages are redelivered, as after any crash before a delete).
//   - after a batch commits and before its callers are told: as above, but
//     the effects are on disk: a send the producer retries is collapsed by
//     the persisted dedup record, a received message comes back with its
//     count raised (as if its handler had crashed), a deleted one stays
//     deleted.
//   - after the callers are told: nothing; that is the acknowledgement.
//
// A commit that fails (a disk error) fails every call in the batch and in
// the batch opened after it (whose decisions were made on top of the failed
// one), and the in-memory state is reloaded from the file, which holds
// exactly the last committed state.

// write is one put (val != nil) or delete in a queue's bucket.
type write struct {
	queue string // queue name
	sub   []byte // msgsBucket or dedupBucket
	key   []byte
	val   []byte // nil: delete
}

// batch is the writes of the calls that share one transaction.
type batch struct {
	writes []write
	done   chan struct{} // closed once committed or failed
	err    error         // set before done is closed
}

func newBatch() *batch { return &batch{done: make(chan struct{})} }

// enqueue appends w to the open batch. Called with b.mu held.
func (b *Broker) enqueue(w write) {
	if b.db == nil {
		return
	}
	b.open.writes = append(b.open.writes, w)
	b.last = b.open
}

// barrier returns the batch a call that has just read or changed the
// in-memory state must wait for before it returns: the latest one with any
// write in it, so whatever the call saw is committed when it returns. nil
// when there is nothing to wait for. Called with b.mu held; with
// commitUnderLock it commits the open batch first (the old one transaction
// per call).
func (b *Broker) barrier() *batch {
	if b.db == nil || b.last == nil {
		return nil
	}
	if b.perOp && len(b.open.writes) > 0 {
		bt := b.open
		b.open = newBatch()
		b.commit(bt, true)
		return bt
	}
	select {
	case b.kick <- struct{}{}:
	default:
	}
	return b.last
}

// await waits for bt (from barrier) to be committed. Called without b.mu.
func await(bt *batch) error {
	if bt == nil {
		return nil
	}
	<-bt.done
	return bt.err
}

// commitLoop commits the open batch whenever it has writes, at most once
// per commitInterval, until stop is closed; then it commits what is left
// and returns. The interval is counted from the start of the previous
// commit, so a call after a quiet spell is committed at once, and under
// load the calls of one interval share a commit.
func (b *Broker) commitLoop() {
	defer close(b.loopDone)
	var last time.Time
	for {
		select {
		case <-b.kick:
		case <-b.stop:
			b.commitOpen()
			return
		}
		if wait := b.interval - time.Since(last); wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-b.stop:
				t.Stop()
			}
		}
		last = time.Now()
		b.commitOpen()
	}
}

func (b *Broker) commitOpen() {
	b.mu.Lock()
	bt := b.open
	if len(bt.writes) == 0 {
		b.mu.Unlock()
		return
	}
	b.open = newBatch()
	b.mu.Unlock()
	b.commit(bt, false)
}

// commit writes bt in one transaction and tells its callers. locked says
// whether the caller holds b.mu.
func (b *Broker) commit(bt *batch, locked bool) {
	txn := b.db.Update
	if b.shared && !locked {
		// Joins the other user's concurrent writes in one transaction.
		// bbolt may run the function again, alone, if another function
		// of the batch fails; apply's puts and deletes are the same
		// state however often they run.
		txn = func(fn func(*bolt.Tx) error) error { return b.batch(len(bt.writes), fn) }
	}
	var fnErr error
	err := txn(func(tx *bolt.Tx) error {
		if b.beforeCommit != nil {
			if fnErr = b.beforeCommit(len(bt.writes)); fnErr != nil {
				return fnErr
			}
		}
		fnErr = apply(tx, bt.writes)
		return fnErr
	})
	if err == nil {
		close(bt.done)
		return
	}
	disk := fnErr == nil // the commit itself: a full or failing disk
	if disk && b.health != nil {
		// In the queue's own file; in a shared file the store's
		// committer counts and logs it.
		b.health.Failed(err)
	}
	if !locked {
		b.mu.Lock()
		defer b.mu.Unlock()
	}
	b.fail(bt, err, disk)
}

// fail fails bt and the batch opened after it, and reloads the in-memory
// state from the file. disk says the commit itself failed: the file's
// writehealth logs that once per 30 s, so each failed batch is logged at
// Debug only (a full disk fails every commit). Called with b.mu held.
func (b *Broker) fail(bt *batch, err error, disk bool) {
	err = fmt.Errorf("commit: %w", err)
	bt.err = err
	close(bt.done)
	if next := b.open; len(next.writes) > 0 {
		next.err = err
		close(next.done)
	}
	b.open, b.last = newBatch(), nil
	if rerr := b.reload(); rerr != nil {
		b.failed = errors.Join(err, fmt.Errorf("reload after a failed commit: %w", rerr))
		b.logger.Error("queue file unusable; every call fails until restart", "err", b.failed)
		return
	}
	level := slog.LevelError
	if disk {
		level = slog.LevelDebug
	}
	b.logger.Log(context.Background(), level, "queue commit failed; state reloaded from the file, the batch's calls fail", "err", err)
}

// apply performs ws in order in tx.
func apply(tx *bolt.Tx, ws []write) error {
	type key struct{ queue, sub string }
	buckets := map[key]*bolt.Bucket{}
	for _, w := range ws {
		k := key{w.queue, string(w.sub)}
		bk := buckets[k]
		if bk == nil {
			qb, err := tx.CreateBucketIfNotExists(bucketName(w.queue))
			if err != nil {
				return err
			}
			if bk, err = qb.CreateBucketIfNotExists(w.sub); err != nil {
				return err
			}
			buckets[k] = bk
		}
		var err error
		if w.val == nil {
			err = bk.Delete(w.key)
		} else {
			err = bk.Put(w.key, w.val)
		}
		if err != nil {
			return fmt.Errorf("queue %s: %w", w.queue, err)
		}
	}
	return nil
}
