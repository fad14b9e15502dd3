package embedded_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"github.com/mcpmon/mcpmon/pkg/clock"
	"github.com/mcpmon/mcpmon/pkg/queue"
	"github.com/mcpmon/mcpmon/pkg/queue/embedded"
)

// TestOwnFileMovesIntoSharedFile: a data dir whose broker had a file of its
// own opens on a shared file with every message, receive count and dedup
// record in it, and the old file gone — also when the copy is made twice
// (a crash between the copy and the removal).
func TestOwnFileMovesIntoSharedFile(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	clk := clock.NewFake(epoch)
	b := open(t, dir, clk)
	q := b.Queue("results")
	res, err := q.Send(ctx, []queue.SendInput{
		{GroupID: "a", DedupID: "a1", Body: []byte("one")},
		{GroupID: "b", DedupID: "b1", Body: []byte("two")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if ms, err := q.Receive(ctx, queue.ReceiveInput{Max: 1, Visibility: time.Hour}); err != nil || len(ms) != 1 {
		t.Fatalf("receive = %v, %v", ms, err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	old, err := os.ReadFile(filepath.Join(dir, embedded.FileName))
	if err != nil {
		t.Fatal(err)
	}

	for attempt := range 2 {
		db := openShared(t, dir)
		b, err := embedded.Open(dir, queue.StageConfigs(), embedded.Options{Clock: clk, PollInterval: 5 * time.Millisecond, DB: db})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Join(dir, embedded.FileName)); !os.IsNotExist(err) {
			t.Errorf("attempt %d: %s still there after the move (%v)", attempt, embedded.FileName, err)
		}
		q := b.Queue("results")
		dup, err := q.Send(ctx, []queue.SendInput{{GroupID: "a", DedupID: "a1", Body: []byte("one")}})
		if err != nil || !dup[0].Duplicate || dup[0].MessageID != res[0].MessageID {
			t.Errorf("attempt %d: resend = %+v, %v; want a duplicate of %s", attempt, dup, err, res[0].MessageID)
		}
		ms, err := q.Receive(ctx, queue.ReceiveInput{Max: 10, Visibility: time.Hour})
		if err != nil || len(ms) != 2 {
			t.Fatalf("attempt %d: receive after the move = %+v, %v; want both messages", attempt, ms, err)
		}
		counts := map[string]int{}
		for _, m := range ms {
			counts[string(m.Body)] = m.ReceiveCount
		}
		if counts["one"]+counts["two"] != 3 {
			t.Errorf("attempt %d: receive counts %v; want one 2 and one 1", attempt, counts)
		}
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
		// Close leaves the shared file to its owner.
		if err := db.View(func(*bbolt.Tx) error { return nil }); err != nil {
			t.Errorf("attempt %d: the shared file is closed after the broker's Close: %v", attempt, err)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		// The second attempt finds the old file again, as after a crash
		// between the copy and the removal.
		if err := os.WriteFile(filepath.Join(dir, embedded.FileName), old, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}
