package bolt

import (
	"bytes"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"github.com/mcpmon/mcpmon/pkg/clock"
	"github.com/mcpmon/mcpmon/pkg/msg"
	"github.com/mcpmon/mcpmon/pkg/store/storetest"
)

// timesOnFile returns, in key order, the times at makes of the keys
// under prefix in bucket (keys it says no to are left out).
func timesOnFile(t testing.TB, s *Store, bucket, prefix []byte, at func(k []byte) (time.Time, bool)) []time.Time {
	t.Helper()
	var out []time.Time
	err := s.db.View(func(tx *bbolt.Tx) error {
		c := tx.Bucket(bucket).Cursor()
		for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
			if tm, ok := at(k); ok {
				out = append(out, tm)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// historyOnFile returns the windows of id's history records on file, oldest
// first, whatever the retention says.
func historyOnFile(t testing.TB, s *Store, id string) []time.Time {
	t.Helper()
	return timesOnFile(t, s, bVerdicts, idPrefix(id), func(k []byte) (time.Time, bool) {
		if !isHistoryKey(k) {
			return time.Time{}, false
		}
		return keyTime(k[len(k)-8:]), true
	})
}

// TestHistoryTrimmedInSteps: a full history is not trimmed by one verdict
// per verdict (a rewrite of the endpoint's oldest leaf each time) but once
// its oldest is a slack past the retention, and then down to the retention;
// what is read stays within the retention throughout.
func TestHistoryTrimmedInSteps(t *testing.T) {
	ctx := t.Context()
	clk := clock.NewFake(storetest.Start)
	const history = 64 * time.Minute // slack: 2 minutes
	s, err := Open(filepath.Join(t.TempDir(), "store.db"), Options{Clock: clk, SweepInterval: -1, VerdictHistory: history})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.trimSlack != 2*time.Minute {
		t.Fatalf("slack %v, want a 32nd of %v", s.trimSlack, history)
	}
	w := storetest.Start.Truncate(time.Minute)
	trims := 0
	var oldest time.Time
	for i := range 240 { // four hours of one-minute verdicts
		clk.Set(w.Add(10 * time.Second))
		if _, err := s.RecordVerdict(ctx, msg.Verdict{EndpointID: "ep", Window: w, State: msg.StateUp}); err != nil {
			t.Fatal(err)
		}
		onFile := historyOnFile(t, s, "ep")
		cutoff := clk.Now().Add(-history)
		if onFile[0].Before(cutoff.Add(-s.trimSlack - time.Minute)) {
			t.Fatalf("verdict %d: oldest on file %v, more than the slack before the cutoff %v", i, onFile[0], cutoff)
		}
		if !oldest.IsZero() && onFile[0].After(oldest) {
			trims++
			// Down to the retention: the oldest kept is the first window
			// not before the cutoff.
			if onFile[0].Before(cutoff) || onFile[0].After(cutoff.Add(time.Minute)) {
				t.Errorf("verdict %d: trimmed to %v, want the first window at or after the cutoff %v", i, onFile[0], cutoff)
			}
		}
		oldest = onFile[0]
		read, err := s.ListVerdicts(ctx, "ep", 0)
		if err != nil {
			t.Fatal(err)
		}
		if last := read[len(read)-1]; last.Window.Before(cutoff) {
			t.Fatalf("verdict %d: read %v, before the retention's cutoff %v", i, last.Window, cutoff)
		}
		w = w.Add(time.Minute)
	}
	// Past the first 64 minutes, 176 verdicts each pushed one out of the
	// retention; trimmed one by one that was 176 trims, in 2-minute steps
	// it is one per 3 verdicts at most.
	if trims == 0 || trims > 176/3+1 {
		t.Errorf("%d trims in 176 verdicts past the retention, want a trim every 3 verdicts at most", trims)
	}
}

// TestSweepSeeksEachEndpoint: the sweep trims the histories no verdict comes
// for any more, and leaves the last verdicts and the histories within their
// slack.
func TestSweepSeeksEachEndpoint(t *testing.T) {
	ctx := t.Context()
	clk := clock.NewFake(storetest.Start)
	s, err := Open(filepath.Join(t.TempDir(), "store.db"), Options{Clock: clk, SweepInterval: -1, VerdictHistory: 64 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	w := storetest.Start.Truncate(time.Minute)
	for i := range 30 {
		for _, id := range []string{"a", "ab", "b"} {
			if _, err := s.RecordVerdict(ctx, msg.Verdict{EndpointID: id, Window: w.Add(time.Duration(i) * time.Minute), State: msg.StateUp}); err != nil {
				t.Fatal(err)
			}
		}
	}
	// "b" goes on being probed; "a" and "ab" stopped at +29m.
	for i := 30; i < 95; i++ {
		if _, err := s.RecordVerdict(ctx, msg.Verdict{EndpointID: "b", Window: w.Add(time.Duration(i) * time.Minute), State: msg.StateUp}); err != nil {
			t.Fatal(err)
		}
	}
	clk.Set(w.Add(95 * time.Minute)) // cutoff +31m: every verdict of a and ab is a slack past it
	n, err := s.Sweep(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"a", "ab"} {
		if got := historyOnFile(t, s, id); len(got) != 0 {
			t.Errorf("%s: %d verdicts left on file, want none", id, len(got))
		}
		if _, err := s.LastVerdict(ctx, id); err != nil {
			t.Errorf("%s: last verdict: %v, want it kept", id, err)
		}
	}
	got := historyOnFile(t, s, "b")
	if want := w.Add(31 * time.Minute); len(got) == 0 || !got[0].Equal(want) {
		t.Errorf("b: oldest on file %v, want %v (trimmed to the cutoff)", got, want)
	}
	if want := 30 + 30 + 31; n != want {
		t.Errorf("sweep deleted %d, want %d", n, want)
	}
}

// BenchmarkVerdictFullHistory records one verdict for each of 1,000
// endpoints whose history is full (one a minute, a day kept), so each
// verdict pushes one out of the retention, and reports the pages written
// per verdict: trimmed in steps (the store's) beside one by one (the
// build before), same run.
func BenchmarkVerdictFullHistory(b *testing.B) {
	for _, bc := range []struct {
		name  string
		slack time.Duration
	}{{"steps", -1}, {"one-by-one", 0}} {
		b.Run(bc.name, func(b *testing.B) {
			const eps, history = 1000, 24 * time.Hour
			clk := clock.NewFake(storetest.Start)
			s, err := Open(filepath.Join(b.TempDir(), "store.db"), Options{Clock: clk, SweepInterval: -1, VerdictHistory: history})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			if bc.slack >= 0 {
				s.trimSlack = bc.slack
			}
			w := storetest.Start.Truncate(time.Minute)
			// A day of history, written in one transaction per hour.
			for h := 0; h < 24; h++ {
				err := s.db.Update(func(tx *bbolt.Tx) error {
					vb := tx.Bucket(bVerdicts)
					for m := range 60 {
						win := w.Add(time.Duration(h*60+m) * time.Minute)
						for e := range eps {
							id := fmt.Sprintf("ep-%04d", e)
							raw := fmt.Appendf(nil, `{"endpointId":%q,"window":%q,"state":"up"}`, id, win.Format(time.RFC3339))
							if err := vb.Put(idTimeKey(id, win), raw); err != nil {
								return err
							}
							if err := vb.Put(lastKey(id), raw); err != nil {
								return err
							}
						}
					}
					return nil
				})
				if err != nil {
					b.Fatal(err)
				}
			}
			w = w.Add(24 * time.Hour)
			st := s.db.Stats()
			before := st.TxStats.GetWrite()
			n := 0
			for b.Loop() {
				clk.Set(w.Add(10 * time.Second))
				for e := range eps {
					if _, err := s.RecordVerdict(b.Context(), msg.Verdict{EndpointID: fmt.Sprintf("ep-%04d", e), Window: w, State: msg.StateUp}); err != nil {
						b.Fatal(err)
					}
					n++
				}
				w = w.Add(time.Minute)
			}
			st = s.db.Stats()
			b.ReportMetric(float64(st.TxStats.GetWrite()-before)/float64(n), "pages/verdict")
		})
	}
}
