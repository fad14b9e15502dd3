package bolt

import (
	"bytes"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"github.com/mcpmon/mcpmon/pkg/clock"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/msg"
	"github.com/mcpmon/mcpmon/pkg/store/storetest"
)

// TestRollupsMovedInChunks: a file with the rollups of the layout before
// (rollupHour and rollupDay, keyed endpointID 0 start) opens with every
// hour and day in place, moved a few records per transaction, and the old
// buckets dropped.
func TestRollupsMovedInChunks(t *testing.T) {
	ctx := t.Context()
	day := storetest.Start.Truncate(24 * time.Hour)
	clk := clock.NewFake(day)
	path := filepath.Join(t.TempDir(), "store.db")
	s, err := Open(path, Options{Clock: clk, SweepInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	ids := []string{"ep-a", "ep-b"}
	for i := range 3 * 48 { // every 30 minutes for three days
		w := day.Add(time.Duration(i) * 30 * time.Minute)
		clk.Set(w.Add(time.Minute))
		for _, id := range ids {
			st := msg.StateUp
			if i%7 == 0 {
				st = msg.StateDown
			}
			if _, err := s.RecordVerdict(ctx, msg.Verdict{EndpointID: id, Window: w, State: st}); err != nil {
				t.Fatal(err)
			}
		}
	}
	from, to := day, day.Add(4*24*time.Hour)
	rollups := func(s *Store) string {
		var b bytes.Buffer
		for _, id := range ids {
			for _, size := range []time.Duration{model.Hourly, model.Daily} {
				rs, err := s.Rollups(ctx, id, size, from, to)
				if err != nil {
					t.Fatal(err)
				}
				for _, r := range rs {
					fmt.Fprintf(&b, "%s %s %s up=%d down=%d n=%d %x\n", id, size, r.Start.Format(time.RFC3339), r.Up, r.Down, r.Verdicts, model.EncodeSketch(r.Total))
				}
			}
		}
		return b.String()
	}
	want := rollups(s)
	if n := bytes.Count([]byte(want), []byte("\n")); n != 2*(3*24+3) {
		t.Fatalf("%d rollups before the move; want %d (3 days of hours and 3 days, 2 endpoints):\n%s", n, 2*(3*24+3), want)
	}

	// Every verdict folded (the newest hour's are not yet: rollups.go), so
	// all rollups are in the bucket the move fills.
	err = s.db.Update(func(tx *bbolt.Tx) error {
		for _, id := range ids {
			if err := foldUpTo(tx, id, to, clk.Now()); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := rollups(s); got != want {
		t.Fatalf("rollups once all is folded:\n%s\nwant:\n%s", got, want)
	}

	// Rewrite the file in the old layout.
	err = s.db.Update(func(tx *bbolt.Tx) error {
		hb, err := tx.CreateBucket(bOldRollupHour)
		if err != nil {
			return err
		}
		db, err := tx.CreateBucket(bOldRollupDay)
		if err != nil {
			return err
		}
		nb := tx.Bucket(bRollups)
		return nb.ForEach(func(k, v []byte) error {
			id := string(k[:bytes.IndexByte(k, 0)])
			start, ok := rollupStart(k, id)
			if !ok {
				return fmt.Errorf("key %q is no rollup key", k)
			}
			b := hb
			if k[len(id)+1] == 'i' {
				b = db
			}
			return b.Put(idTimeKey(id, start), append([]byte(nil), v...))
		})
	})
	if err == nil {
		err = s.db.Update(func(tx *bbolt.Tx) error {
			if err := tx.DeleteBucket(bRollups); err != nil {
				return err
			}
			_, err := tx.CreateBucket(bRollups)
			return err
		})
	}
	if err != nil {
		t.Fatal(err)
	}
	if got := rollups(s); got != "" {
		t.Fatalf("rollups read with the new bucket emptied:\n%s", got)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	defer func(n int) { moveChunk = n }(moveChunk)
	moveChunk = 7
	s, err = Open(path, Options{Clock: clk, SweepInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := rollups(s); got != want {
		t.Fatalf("rollups after the move:\n%s\nwant:\n%s", got, want)
	}
	_ = s.db.View(func(tx *bbolt.Tx) error {
		for _, name := range [][]byte{bOldRollupHour, bOldRollupDay} {
			if tx.Bucket(name) != nil {
				t.Errorf("bucket %s still there", name)
			}
		}
		return nil
	})
}
