package embedded_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"github.com/mcpmon/mcpmon/pkg/clock"
	"github.com/mcpmon/mcpmon/pkg/queue"
	"github.com/mcpmon/mcpmon/pkg/queue/embedded"
)

// crashDirEnv tells TestCrashChild, run as a child process, where its queue
// file is.
const crashDirEnv = "MCPMON_QUEUE_CRASH_DIR"

// crashSharedEnv makes TestCrashChild keep its queue in a file shared with
// another writer (Options.DB), as `mcpmon run` shares the store's.
const crashSharedEnv = "MCPMON_QUEUE_CRASH_SHARED"

// TestCrashChild is the process TestSIGKILLLosesNoAcknowledgedCall kills:
// senders and consumers on one broker, printing each acknowledgement
// ("sent <group> <dedup> <id>", "deleted <id>") only after the call
// returned. It does nothing in a normal test run.
func TestCrashChild(t *testing.T) {
	dir := os.Getenv(crashDirEnv)
	if dir == "" {
		t.Skip("run by TestSIGKILLLosesNoAcknowledgedCall")
	}
	var out sync.Mutex
	say := func(format string, args ...any) {
		out.Lock()
		defer out.Unlock()
		// One write per line, unbuffered: a line exists only once the
		// call it reports returned.
		_, _ = os.Stdout.WriteString(fmt.Sprintf(format, args...) + "\n")
	}
	var wg sync.WaitGroup
	var opts embedded.Options
	if os.Getenv(crashSharedEnv) != "" {
		db := openShared(t, dir)
		opts.DB = db
		// The other user of the file, as the bolt store: batched writes
		// that share the broker's commits, each said once acknowledged.
		for w := range 4 {
			wg.Go(func() {
				for n := 0; ; n++ {
					key := fmt.Sprintf("s%d-%08d", w, n)
					err := db.Batch(func(tx *bbolt.Tx) error {
						b, err := tx.CreateBucketIfNotExists([]byte("store"))
						if err != nil {
							return err
						}
						return b.Put([]byte(key), []byte("v"))
					})
					if err != nil {
						t.Error(err)
						return
					}
					say("stored %s", key)
				}
			})
		}
	}
	b, err := embedded.Open(dir, queue.StageConfigs(), opts)
	if err != nil {
		t.Fatal(err)
	}
	q := b.Queue("results")
	ctx := context.Background()
	for w := range 16 {
		wg.Go(func() {
			for n := 0; ; n++ {
				in := make([]queue.SendInput, 5)
				for i := range in {
					in[i] = queue.SendInput{GroupID: fmt.Sprint("g", w), DedupID: fmt.Sprintf("w%d-%08d", w, 5*n+i), Body: []byte("payload")}
				}
				res, err := q.Send(ctx, in)
				if err != nil {
					t.Error(err)
					return
				}
				for i, r := range res {
					say("sent %s %s %s", in[i].GroupID, in[i].DedupID, r.MessageID)
				}
			}
		})
	}
	for range 4 {
		wg.Go(func() {
			for {
				ms, err := q.Receive(ctx, queue.ReceiveInput{Max: 10, Wait: time.Second, Visibility: time.Minute})
				if err != nil {
					t.Error(err)
					return
				}
				rs := make([]string, len(ms))
				ids := make([]string, len(ms))
				for i, m := range ms {
					rs[i], ids[i] = m.ReceiptHandle, m.ID
				}
				// Said before the call: a delete committed but not yet
				// acknowledged when the kill strikes leaves its messages
				// gone, and that is no loss.
				say("deleting %s", strings.Join(ids, " "))
				if err := q.Delete(ctx, rs...); err != nil {
					t.Error(err)
					return
				}
				for _, m := range ms {
					say("deleted %s", m.ID)
				}
			}
		})
	}
	wg.Wait()
}

// openShared opens the file a broker shares with another user, as the
// bolt store opens it.
func openShared(t *testing.T, dir string) *bbolt.DB {
	db, err := bbolt.Open(filepath.Join(dir, "store.db"), 0o600, &bbolt.Options{Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	db.MaxBatchDelay = 2 * time.Millisecond
	return db
}

// TestSIGKILLLosesNoAcknowledgedCall kills a process in the middle of
// concurrent batched sends, receives and deletes, and reopens its file:
// every acknowledged send is there (or a delete of it was asked for: one
// that committed but was not yet acknowledged may have taken it), in its
// group's order, and still deduplicated; no acknowledged delete comes back.
// With a shared file, whose commits carry another user's writes too, that
// user's acknowledged writes are all there as well.
func TestSIGKILLLosesNoAcknowledgedCall(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a child process")
	}
	t.Run("own file", func(t *testing.T) { crashAndCheck(t, false) })
	t.Run("shared file", func(t *testing.T) { crashAndCheck(t, true) })
}

func crashAndCheck(t *testing.T, shared bool) {
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashDirEnv+"="+dir)
	if shared {
		cmd.Env = append(cmd.Env, crashSharedEnv+"=1")
	}
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	type sent struct{ group, dedup, id string }
	var sends []sent
	deleted := map[string]bool{}  // deletes acknowledged
	deleting := map[string]bool{} // deletes asked for
	var stored []string           // the other user's acknowledged writes
	sc := bufio.NewScanner(stdout)
	killed := false
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) == 4 && f[0] == "sent":
			sends = append(sends, sent{f[1], f[2], f[3]})
		case len(f) == 2 && f[0] == "deleted":
			deleted[f[1]] = true
		case len(f) == 2 && f[0] == "stored":
			stored = append(stored, f[1])
		case len(f) >= 2 && f[0] == "deleting":
			for _, id := range f[1:] {
				deleting[id] = true
			}
		default:
			continue // the test framework's own lines
		}
		if !killed && len(sends) >= 1500 && len(deleted) >= 300 && (!shared || len(stored) >= 300) {
			// Lines already in the pipe were acknowledged too: read on
			// until the pipe closes.
			if err := cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			killed = true
		}
	}
	_ = cmd.Wait()
	if !killed {
		t.Fatalf("the child ended before the kill (%d sends, %d deletes acknowledged)", len(sends), len(deleted))
	}

	opts := embedded.Options{Clock: clock.Real{}}
	if shared {
		db := openShared(t, dir)
		defer db.Close()
		opts.DB = db
		err := db.View(func(tx *bbolt.Tx) error {
			sb := tx.Bucket([]byte("store"))
			for _, k := range stored {
				if sb == nil || sb.Get([]byte(k)) == nil {
					return fmt.Errorf("the other user's acknowledged write %s is lost (%d acknowledged)", k, len(stored))
				}
			}
			return nil
		})
		if err != nil {
			t.Error(err)
		}
		if _, err := os.Stat(filepath.Join(dir, embedded.FileName)); err == nil {
			t.Errorf("a broker on a shared file wrote %s", embedded.FileName)
		}
	}
	b, err := embedded.Open(dir, queue.StageConfigs(), opts)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	q := b.Queue("results")
	left := map[string]queue.Message{}
	lastDedup := map[string]string{}
	for {
		ms, err := q.Receive(t.Context(), queue.ReceiveInput{Max: 10})
		if err != nil {
			t.Fatal(err)
		}
		if len(ms) == 0 {
			break
		}
		var rs []string
		for _, m := range ms {
			if deleted[m.ID] {
				t.Errorf("message %s came back after its delete was acknowledged", m.ID)
			}
			if m.DedupID <= lastDedup[m.GroupID] {
				t.Errorf("group %s: %s after %s", m.GroupID, m.DedupID, lastDedup[m.GroupID])
			}
			lastDedup[m.GroupID] = m.DedupID
			left[m.ID] = m
			rs = append(rs, m.ReceiptHandle)
		}
		if err := q.Delete(t.Context(), rs...); err != nil {
			t.Fatal(err)
		}
	}
	lost := 0
	for _, s := range sends {
		if !deleting[s.id] {
			if _, ok := left[s.id]; !ok {
				lost++
				if lost <= 5 {
					t.Errorf("acknowledged send %s/%s (%s) lost", s.group, s.dedup, s.id)
				}
			}
		}
	}
	if lost > 0 {
		t.Fatalf("%d of %d acknowledged sends lost", lost, len(sends))
	}
	for _, s := range sends[len(sends)-50:] {
		res, err := q.Send(t.Context(), []queue.SendInput{{GroupID: s.group, DedupID: s.dedup, Body: []byte("payload")}})
		if err != nil || !res[0].Duplicate || res[0].MessageID != s.id {
			t.Fatalf("resend of %s/%s after the crash = %+v, %v; want a duplicate of %s", s.group, s.dedup, res, err, s.id)
		}
	}
	t.Logf("killed after %d sends, %d deletes and %d other writes were acknowledged; %d messages left, none lost", len(sends), len(deleted), len(stored), len(left))
}

// TestCloseWithoutDeleteKeepsConcurrentSendsAndCounts: sends and receives
// made concurrently (so they share commits) and never deleted are all in the
// file after close and reopen, with their receive counts.
func TestCloseWithoutDeleteKeepsConcurrentSendsAndCounts(t *testing.T) {
	dir := t.TempDir()
	clk := clock.NewFake(epoch)
	b := open(t, dir, clk)
	q := b.Queue("results")
	var mu sync.Mutex
	ids := map[string]bool{}   // sends acknowledged
	counts := map[string]int{} // receives acknowledged, by message ID
	var wg sync.WaitGroup
	for w := range 16 {
		wg.Go(func() {
			for n := range 10 {
				res, err := q.Send(t.Context(), []queue.SendInput{
					{GroupID: fmt.Sprint("g", w), DedupID: fmt.Sprintf("w%d-%d-a", w, n), Body: []byte("a")},
					{GroupID: fmt.Sprint("h", w), DedupID: fmt.Sprintf("w%d-%d-b", w, n), Body: []byte("b")},
				})
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				for _, r := range res {
					ids[r.MessageID] = true
				}
				mu.Unlock()
			}
		})
	}
	for range 4 {
		wg.Go(func() {
			for range 10 {
				ms, err := q.Receive(t.Context(), queue.ReceiveInput{Max: 10, Visibility: time.Hour})
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				for _, m := range ms {
					counts[m.ID] = m.ReceiveCount
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b = open(t, dir, clk)
	defer b.Close()
	q = b.Queue("results")
	found := map[string]int{}
	for {
		ms, err := q.Receive(t.Context(), queue.ReceiveInput{Max: 10, Visibility: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		if len(ms) == 0 {
			break
		}
		var rs []string
		for _, m := range ms {
			found[m.ID] = m.ReceiveCount
			rs = append(rs, m.ReceiptHandle)
		}
		if err := q.Delete(t.Context(), rs...); err != nil {
			t.Fatal(err)
		}
	}
	if len(found) != len(ids) || len(ids) != 320 {
		t.Fatalf("after reopen %d messages, want the %d acknowledged (320 sent)", len(found), len(ids))
	}
	for id := range ids {
		if rc := counts[id]; found[id] != rc+1 {
			t.Errorf("message %s: receive count %d after reopen, want %d (the %d acknowledged before close, plus this one)", id, found[id], rc+1, rc)
		}
	}
}
