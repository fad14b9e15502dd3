package bolt_test

import (
	"encoding/binary"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"github.com/mcpmon/mcpmon/pkg/clock"
	"github.com/mcpmon/mcpmon/pkg/msg"
	"github.com/mcpmon/mcpmon/pkg/store"
	"github.com/mcpmon/mcpmon/pkg/store/storetest"
)

// oldWindowKey is the windows bucket's key: endpointID 0 window, the
// window as 8 big-endian bytes with the sign bit flipped.
func oldWindowKey(id string, t time.Time) []byte {
	k := append([]byte(id), 0)
	return binary.BigEndian.AppendUint64(k, uint64(t.UnixNano())^(1<<63))
}

// putOldResult puts r in b under prefix, then its region's length as a
// uvarint, its region and its run ID: how the layouts before wrote a
// window result.
func putOldResult(b *bbolt.Bucket, prefix []byte, r msg.ProbeResult) error {
	k := binary.AppendUvarint(append([]byte(nil), prefix...), uint64(len(r.Region)))
	k = append(append(k, r.Region...), r.ProbeRunID...)
	raw, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return b.Put(k, raw)
}

// TestOldWindowListsStillRead: a file written when a window's results
// were one JSON list under the window's key opens with those results in
// place — listed, read, deduplicated against and dropped by the verdict
// as before.
func TestOldWindowListsStillRead(t *testing.T) {
	ctx := t.Context()
	clk := clock.NewFake(storetest.Start)
	w := storetest.Start.Truncate(time.Minute)
	old := []msg.ProbeResult{
		{EndpointID: "ep", ProbeRunID: "run-b", Region: "eu", Slot: w},
		{EndpointID: "ep", ProbeRunID: "run-a", Region: "us", Slot: w},
	}
	path := oldFile(t, func(tx *bbolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists([]byte("windows"))
		if err != nil {
			return err
		}
		raw, err := json.Marshal(old)
		if err != nil {
			return err
		}
		return b.Put(oldWindowKey("ep", w), raw)
	})

	s := open(t, path, clk)
	ref := store.WindowRef{EndpointID: "ep", Window: w}
	if got, err := s.OpenWindows(ctx, w.Add(time.Minute)); err != nil || len(got) != 1 || got[0] != ref {
		t.Fatalf("OpenWindows = %v, %v; want [%v]", got, err, ref)
	}
	got, err := s.WindowResults(ctx, ref)
	if err != nil || len(got) != 2 || got[0].ProbeRunID != "run-b" || got[1].ProbeRunID != "run-a" {
		t.Fatalf("WindowResults = %+v, %v; want run-b (eu), run-a (us)", got, err)
	}
	if added, err := s.AddWindowResult(ctx, w, old[1]); err != nil || added {
		t.Fatalf("re-adding an old-layout result = %v, %v; want not added", added, err)
	}
	if added, err := s.AddWindowResult(ctx, w, msg.ProbeResult{EndpointID: "ep", ProbeRunID: "run-c", Region: "us", Slot: w}); err != nil || !added {
		t.Fatalf("adding a new result = %v, %v; want added", added, err)
	}
	if got, _ := s.WindowResults(ctx, ref); len(got) != 3 {
		t.Fatalf("WindowResults after an add = %d results; want 3", len(got))
	}
	if applied, err := s.RecordVerdict(ctx, msg.Verdict{EndpointID: "ep", Window: w}); err != nil || !applied {
		t.Fatalf("RecordVerdict = %v, %v", applied, err)
	}
	if got, err := s.OpenWindows(ctx, w.Add(time.Minute)); err != nil || len(got) != 0 {
		t.Fatalf("OpenWindows after the verdict = %v, %v; want none", got, err)
	}
	if got, err := s.WindowResults(ctx, ref); err != nil || len(got) != 0 {
		t.Fatalf("WindowResults after the verdict = %v, %v; want none", got, err)
	}
}

// TestEndpointFirstWindowsMoved: a file written with the endpoint-first
// layout (an index key per window in bucket windows, a record per result
// in windowResults) opens with its windows and results in the time-first
// buckets, the old buckets dropped, and a second Open changes nothing.
func TestEndpointFirstWindowsMoved(t *testing.T) {
	ctx := t.Context()
	clk := clock.NewFake(storetest.Start)
	w := storetest.Start.Truncate(time.Minute)
	old := map[string][]msg.ProbeResult{
		"ep-a": {{EndpointID: "ep-a", ProbeRunID: "run-1", Region: "eu", Slot: w}, {EndpointID: "ep-a", ProbeRunID: "run-2", Region: "us", Slot: w}},
		"ep-b": {{EndpointID: "ep-b", ProbeRunID: "run-3", Region: "eu", Slot: w.Add(-time.Minute)}},
	}
	windowOf := map[string]time.Time{"ep-a": w, "ep-b": w.Add(-time.Minute)}
	path := oldFile(t, func(tx *bbolt.Tx) error {
		wb, err := tx.CreateBucketIfNotExists([]byte("windows"))
		if err != nil {
			return err
		}
		rb, err := tx.CreateBucketIfNotExists([]byte("windowResults"))
		if err != nil {
			return err
		}
		for id, rs := range old {
			wk := oldWindowKey(id, windowOf[id])
			if err := wb.Put(wk, []byte{}); err != nil {
				return err
			}
			for _, r := range rs {
				if err := putOldResult(rb, wk, r); err != nil {
					return err
				}
			}
		}
		return nil
	})

	for round := range 2 {
		s := open(t, path, clk)
		want := []store.WindowRef{{EndpointID: "ep-b", Window: windowOf["ep-b"]}, {EndpointID: "ep-a", Window: w}}
		got, err := s.OpenWindows(ctx, w.Add(time.Minute))
		if err != nil || len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
			t.Fatalf("open %d: OpenWindows = %v, %v; want %v", round, got, err, want)
		}
		for id, rs := range old {
			got, err := s.WindowResults(ctx, store.WindowRef{EndpointID: id, Window: windowOf[id]})
			if err != nil || len(got) != len(rs) {
				t.Fatalf("open %d: WindowResults(%s) = %+v, %v; want %d results", round, id, got, err, len(rs))
			}
			for i := range rs {
				if got[i].ProbeRunID != rs[i].ProbeRunID {
					t.Fatalf("open %d: WindowResults(%s)[%d] = %s; want %s", round, id, i, got[i].ProbeRunID, rs[i].ProbeRunID)
				}
			}
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		db, err := bbolt.Open(path, 0o600, nil)
		if err != nil {
			t.Fatal(err)
		}
		err = db.View(func(tx *bbolt.Tx) error {
			for _, name := range []string{"windows", "windowResults"} {
				if tx.Bucket([]byte(name)) != nil {
					t.Errorf("open %d: bucket %s still there", round, name)
				}
			}
			return nil
		})
		if cerr := db.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// TestWindowResultKeysDoNotCollide: results whose region and run ID
// concatenate to the same bytes are two results, not one.
func TestWindowResultKeysDoNotCollide(t *testing.T) {
	ctx := t.Context()
	s := open(t, filepath.Join(t.TempDir(), "store.db"), clock.NewFake(storetest.Start))
	w := storetest.Start.Truncate(time.Minute)
	for _, r := range []msg.ProbeResult{
		{EndpointID: "ep", Region: "eu", ProbeRunID: "west"},
		{EndpointID: "ep", Region: "euw", ProbeRunID: "est"},
	} {
		if added, err := s.AddWindowResult(ctx, w, r); err != nil || !added {
			t.Fatalf("AddWindowResult(%s/%s) = %v, %v; want added", r.Region, r.ProbeRunID, added, err)
		}
	}
	if got, err := s.WindowResults(ctx, store.WindowRef{EndpointID: "ep", Window: w}); err != nil || len(got) != 2 {
		t.Fatalf("WindowResults = %+v, %v; want 2", got, err)
	}
}

// TestOpenWindowsIndexDropped: a file with the index of open windows the
// store kept before (bucket openWindows, one key per window and endpoint)
// opens without it, its windows listed from the results' own keys; a
// verdict for an endpoint whose ID begins another's drops only its own
// window.
func TestOpenWindowsIndexDropped(t *testing.T) {
	ctx := t.Context()
	clk := clock.NewFake(storetest.Start)
	w := storetest.Start.Truncate(time.Minute)
	results := []msg.ProbeResult{
		{EndpointID: "ep", ProbeRunID: "run-1", Region: "eu", Slot: w},
		{EndpointID: "ep", ProbeRunID: "run-1", Region: "us", Slot: w},
		{EndpointID: "ep-x", ProbeRunID: "run-2", Slot: w},
	}
	path := oldFile(t, func(tx *bbolt.Tx) error {
		ib, err := tx.CreateBucketIfNotExists([]byte("openWindows"))
		if err != nil {
			return err
		}
		rb, err := tx.CreateBucketIfNotExists([]byte("resultsByWindow"))
		if err != nil {
			return err
		}
		for _, r := range results {
			wk := binary.BigEndian.AppendUint64(nil, uint64(w.UnixNano())^(1<<63))
			wk = append(wk, r.EndpointID...)
			if err := ib.Put(wk, []byte{}); err != nil {
				return err
			}
			if err := putOldResult(rb, append(wk, 0), r); err != nil {
				return err
			}
		}
		return nil
	})

	s := open(t, path, clk)
	want := []store.WindowRef{{EndpointID: "ep", Window: w}, {EndpointID: "ep-x", Window: w}}
	if got, err := s.OpenWindows(ctx, w.Add(time.Minute)); err != nil || len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("OpenWindows = %v, %v; want %v (one entry per window and endpoint)", got, err, want)
	}
	if applied, err := s.RecordVerdict(ctx, msg.Verdict{EndpointID: "ep", Window: w}); err != nil || !applied {
		t.Fatalf("RecordVerdict = %v, %v", applied, err)
	}
	if got, err := s.OpenWindows(ctx, w.Add(time.Minute)); err != nil || len(got) != 1 || got[0] != want[1] {
		t.Fatalf("OpenWindows after ep's verdict = %v, %v; want only %v", got, err, want[1])
	}
	if got, err := s.WindowResults(ctx, want[1]); err != nil || len(got) != 1 {
		t.Fatalf("WindowResults(ep-x) = %+v, %v; want its one result", got, err)
	}
	bucketsGone(t, s, path, "openWindows")
}
