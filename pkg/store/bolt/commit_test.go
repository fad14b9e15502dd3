package bolt

import (
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"go.etcd.io/bbolt"
)

func TestCommitPause(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	const every = 25 * time.Millisecond
	for _, tc := range []struct {
		name    string
		now     time.Time
		shared  bool
		waiting int
		want    time.Duration
	}{
		{"a lone writer is never paused", t0.Add(time.Millisecond), false, 1, 0},
		{"concurrent writers wait for the interval", t0.Add(10 * time.Millisecond), true, 3, 15 * time.Millisecond},
		{"the interval is past", t0.Add(30 * time.Millisecond), true, 3, 0},
		{"a full commit does not wait", t0.Add(time.Millisecond), true, 10, 0},
		{"nothing waiting, nothing to wait for", t0.Add(time.Millisecond), true, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := commitPause(tc.now, t0, tc.shared, tc.waiting, 10, every); got != tc.want {
				t.Fatalf("pause %v, want %v", got, tc.want)
			}
		})
	}
	if got := commitPause(t0, t0, true, 3, 10, -1); got != 0 {
		t.Fatalf("a negative interval paused %v", got)
	}
}

// openCommitter opens a file with bucket "b" and a committer on it with
// interval.
func openCommitter(tb testing.TB, interval time.Duration) (*bbolt.DB, *committer) {
	tb.Helper()
	db, err := bbolt.Open(filepath.Join(tb.TempDir(), "c.db"), 0o600, nil)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = db.Close() })
	if err := db.Update(func(tx *bbolt.Tx) error { _, err := tx.CreateBucket([]byte("b")); return err }); err != nil {
		tb.Fatal(err)
	}
	return db, newCommitter(db, interval, newWriteHealth(db.Path(), time.Now, slog.New(slog.DiscardHandler)))
}

// txID is the ID of db's last committed write transaction.
func txID(tb testing.TB, db *bbolt.DB) int {
	tb.Helper()
	var id int
	if err := db.View(func(tx *bbolt.Tx) error { id = tx.ID(); return nil }); err != nil {
		tb.Fatal(err)
	}
	return id
}

func putKey(k string) func(*bbolt.Tx) error {
	return func(tx *bbolt.Tx) error { return tx.Bucket([]byte("b")).Put([]byte(k), []byte("v")) }
}

// TestLoneWriterIsNotPaused: one writer after another, each alone in its
// commit, never waits for company, however long the interval (an hour;
// on synctest's clock, so a pause shows as time gone by, not a hang).
func TestLoneWriterIsNotPaused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		db, c := openCommitter(t, time.Hour)
		before, t0 := txID(t, db), time.Now()
		for i := range 20 {
			if err := c.Batch(putKey(fmt.Sprint(i))); err != nil {
				t.Fatal(err)
			}
		}
		if waited := time.Since(t0); waited != 0 {
			t.Fatalf("20 writes one after another waited %v", waited)
		}
		if got := txID(t, db) - before; got != 20 {
			t.Fatalf("%d commits for 20 writes one after another, want 20", got)
		}
	})
}

// TestConcurrentWritersShareCommits: while writes are concurrent, a commit
// waits for the interval or for a full batch, so eight writers with
// batches of four commit twice, and every write is in the file.
func TestConcurrentWritersShareCommits(t *testing.T) {
	db, c := openCommitter(t, time.Hour)
	c.max, c.shared, c.last = 4, true, time.Now() // as right after a shared commit
	before := txID(t, db)
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Go(func() { errs[i] = c.Batch(putKey(fmt.Sprint(i))) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
	}
	if got := txID(t, db) - before; got != 2 {
		t.Fatalf("%d commits for 8 concurrent writes in batches of 4, want 2", got)
	}
	err := db.View(func(tx *bbolt.Tx) error {
		if n := tx.Bucket([]byte("b")).Stats().KeyN; n != 8 {
			return fmt.Errorf("%d keys in the file, want 8", n)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestWriteDuringACommitPacesTheNext: a commit of one write, joined while
// it runs by another write, shows writes are concurrent: the joiner's
// commit starts an interval after the first began. So does a commit of
// one call carrying several writers' writes (BatchOf). A writer that
// writes again only once its commit is done is alone, and is not paused.
// Time is the bubble's (synctest): the pause is measured, not slept.
func TestWriteDuringACommitPacesTheNext(t *testing.T) {
	const every = 25 * time.Millisecond
	synctest.Test(t, func(t *testing.T) {
		_, c := openCommitter(t, every)
		t0 := time.Now()
		for i := range 3 { // one writer, one write after another
			if err := c.Batch(putKey(fmt.Sprint("lone", i))); err != nil {
				t.Fatal(err)
			}
		}
		if waited := time.Since(t0); waited != 0 {
			t.Fatalf("a lone writer waited %v", waited)
		}

		running, release := make(chan struct{}), make(chan struct{})
		first := make(chan error, 1)
		go func() {
			first <- c.Batch(func(tx *bbolt.Tx) error {
				close(running)
				<-release
				return putKey("first")(tx)
			})
		}()
		<-running
		began := time.Now()
		joined := make(chan time.Time, 1)
		go func() {
			if err := c.Batch(putKey("joiner")); err != nil {
				t.Error(err)
			}
			joined <- time.Now()
		}()
		synctest.Wait() // the joiner waits for the next commit
		close(release)
		if err := <-first; err != nil {
			t.Fatal(err)
		}
		if at := <-joined; at.Sub(began) != every {
			t.Fatalf("the joiner was committed %v after the first commit began, want %v", at.Sub(began), every)
		}

		// One call carrying several writers' writes (the queue's commit)
		// counts as concurrent writes: the next commit is paced.
		t1 := time.Now()
		if err := c.BatchOf(3, putKey("queue")); err != nil {
			t.Fatal(err)
		}
		if err := c.Batch(putKey("after")); err != nil {
			t.Fatal(err)
		}
		if got := time.Since(t1); got != every {
			t.Fatalf("the write after a commit of three writers' writes waited %v, want %v", got, every)
		}
	})
}
