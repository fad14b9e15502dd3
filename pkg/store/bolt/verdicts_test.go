package bolt_test

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"github.com/mcpmon/mcpmon/pkg/clock"
	"github.com/mcpmon/mcpmon/pkg/msg"
	"github.com/mcpmon/mcpmon/pkg/store"
	"github.com/mcpmon/mcpmon/pkg/store/storetest"
)

// TestLastVerdictBucketMerged: a file from when last verdicts had a bucket
// of their own opens with each last verdict in place (read, and deciding
// which windows are closed), the old bucket dropped.
func TestLastVerdictBucketMerged(t *testing.T) {
	ctx := t.Context()
	clk := clock.NewFake(storetest.Start)
	w := storetest.Start.Truncate(time.Minute)
	last := msg.Verdict{EndpointID: "ep", Window: w, State: msg.StateDown}
	path := oldFile(t, func(tx *bbolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists([]byte("lastVerdict"))
		if err != nil {
			return err
		}
		raw, err := json.Marshal(last)
		if err != nil {
			return err
		}
		return b.Put([]byte("ep"), raw)
	})

	s := open(t, path, clk)
	if got, err := s.LastVerdict(ctx, "ep"); err != nil || !got.Window.Equal(w) || got.State != msg.StateDown {
		t.Fatalf("LastVerdict = %+v, %v; want the old file's (window %s, down)", got, err, w)
	}
	if _, err := s.AddWindowResult(ctx, w, msg.ProbeResult{EndpointID: "ep", ProbeRunID: "run", Region: "eu", Slot: w}); !errors.Is(err, store.ErrWindowDecided) {
		t.Fatalf("AddWindowResult to the decided window = %v; want ErrWindowDecided", err)
	}
	if got, err := s.ListVerdicts(ctx, "ep", 0); err != nil || len(got) != 0 {
		t.Fatalf("ListVerdicts = %+v, %v; want none (the last verdict is not history)", got, err)
	}
	bucketsGone(t, s, path, "lastVerdict")
}

// TestLastVerdictOutlivesHistory: the sweep drops verdicts past the
// history's retention (and its slack, trimHistory), never an endpoint's last verdict, which shares the
// history's bucket.
func TestLastVerdictOutlivesHistory(t *testing.T) {
	ctx := t.Context()
	clk := clock.NewFake(storetest.Start)
	s := open(t, filepath.Join(t.TempDir(), "store.db"), clk)
	w := storetest.Start.Truncate(time.Minute)
	for i, id := range []string{"ep-a", "ep-b"} {
		for j := range 3 {
			v := msg.Verdict{EndpointID: id, Window: w.Add(time.Duration(j) * time.Minute), State: msg.StateUp}
			if applied, err := s.RecordVerdict(ctx, v); err != nil || !applied {
				t.Fatalf("RecordVerdict(%s #%d) = %v, %v", id, i, applied, err)
			}
		}
	}
	clk.Advance(store.DefaultVerdictHistory + store.DefaultVerdictHistory/16)
	n, err := s.Sweep(ctx)
	if err != nil || n < 6 {
		t.Fatalf("Sweep = %d, %v; want at least the 6 verdicts past retention", n, err)
	}
	for _, id := range []string{"ep-a", "ep-b"} {
		if got, err := s.LastVerdict(ctx, id); err != nil || !got.Window.Equal(w.Add(2*time.Minute)) {
			t.Fatalf("LastVerdict(%s) after the sweep = %+v, %v; want window %s", id, got, err, w.Add(2*time.Minute))
		}
		if got, err := s.ListVerdicts(ctx, id, 0); err != nil || len(got) != 0 {
			t.Fatalf("ListVerdicts(%s) after the sweep = %d, %v; want none", id, len(got), err)
		}
	}
}
