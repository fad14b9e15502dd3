// Latest results (bucket latest, one per endpoint) and the results of
// undecided windows: one record per result in bucket resultsByWindow, keyed
// (window, endpointID 0, region, runID), so adding a result is a key
// lookup and a put whatever the window already holds. The keys are time
// first, so they are also the index of open windows: OpenWindows walks
// them, one (window, endpoint) per run of keys. A separate index key per
// window (bucket openWindows, the layout before) was a second leaf of
// small keys to rewrite on every result and every verdict.

package bolt

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"time"

	"go.etcd.io/bbolt"

	"github.com/mcpmon/mcpmon/pkg/jsonv"
	"github.com/mcpmon/mcpmon/pkg/msg"
	"github.com/mcpmon/mcpmon/pkg/store"
)

// PutLatestResult stores r unless a result for a later slot is stored.
func (s *Store) PutLatestResult(ctx context.Context, r msg.ProbeResult) error {
	return s.batch(ctx, func(tx *bbolt.Tx) error {
		b := tx.Bucket(bLatest)
		// Only the stored slot matters, and it is the record's fourth
		// member: parsing the rest (phases, catalog, conformance) for it
		// was most of this call.
		if raw := b.Get([]byte(r.EndpointID)); raw != nil {
			var cur time.Time
			found, err := jsonv.Field(raw, "slot", &cur)
			if err != nil {
				return fmt.Errorf("decode latest result of %s: %w", r.EndpointID, err)
			}
			if found && cur.After(r.Slot) {
				return nil
			}
		}
		return put(b, []byte(r.EndpointID), r)
	})
}

// LatestResult returns the endpoint's latest probe result or ErrNotFound.
func (s *Store) LatestResult(ctx context.Context, endpointID string) (msg.ProbeResult, error) {
	return getOne[msg.ProbeResult](ctx, s, bLatest, endpointID, "latest result of "+endpointID)
}

// resultPrefix is the prefix of a window's results in resultsByWindow:
// the window's time (timeKey), the endpoint ID and a 0 byte. Time first,
// so the results a burst of probes adds are neighbours, and OpenWindows
// reads the keys before a time.
func resultPrefix(id string, w time.Time) []byte {
	return append(append(timeKey(w), id...), 0)
}

// resultKey is a window result's key in resultsByWindow: resultPrefix,
// then the region's length as a uvarint, the region and the run ID —
// unambiguous whatever bytes region and run ID hold.
func resultKey(id string, w time.Time, region, runID string) []byte {
	k := resultPrefix(id, w)
	k = binary.AppendUvarint(k, uint64(len(region)))
	k = append(k, region...)
	return append(k, runID...)
}

// AddWindowResult adds r to its endpoint's window, idempotently by
// (ProbeRunID, Region).
func (s *Store) AddWindowResult(ctx context.Context, window time.Time, r msg.ProbeResult) (bool, error) {
	added := false
	err := s.batch(ctx, func(tx *bbolt.Tx) error {
		added = false
		last, ok, err := lastWindow(tx.Bucket(bVerdicts), r.EndpointID)
		if err != nil {
			return err
		}
		if ok && !window.After(last) {
			return refuse(fmt.Errorf("result %s for window %s of %s (last verdict %s): %w",
				r.ProbeRunID, window.UTC().Format(time.RFC3339), r.EndpointID, last.UTC().Format(time.RFC3339), store.ErrWindowDecided))
		}
		rb := tx.Bucket(bWinResults)
		rk := resultKey(r.EndpointID, window, r.Region, r.ProbeRunID)
		if rb.Get(rk) != nil {
			return nil
		}
		if err := put(rb, rk, r); err != nil {
			return err
		}
		added = true
		return nil
	})
	if err != nil {
		return false, err
	}
	return added, nil
}

// WindowResults returns the window's results ordered by (Region, ProbeRunID).
func (s *Store) WindowResults(ctx context.Context, ref store.WindowRef) ([]msg.ProbeResult, error) {
	rs := []msg.ProbeResult{}
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		prefix := resultPrefix(ref.EndpointID, ref.Window)
		c := tx.Bucket(bWinResults).Cursor()
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			var r msg.ProbeResult
			if err := jsonv.Unmarshal(v, &r); err != nil {
				return fmt.Errorf("decode window result %q: %w", k, err)
			}
			rs = append(rs, r)
		}
		return nil
	})
	store.SortResults(rs)
	return rs, err
}

// OpenWindows lists windows holding results, with no verdict yet, starting
// before `before`, ordered by window then endpoint ID: the key order of
// resultsByWindow, read up to before, one entry per window and endpoint.
func (s *Store) OpenWindows(ctx context.Context, before time.Time) ([]store.WindowRef, error) {
	out := []store.WindowRef{}
	limit := timeKey(before)
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		var last []byte // the previous key's window and endpoint ID
		c := tx.Bucket(bWinResults).Cursor()
		for k, _ := c.First(); k != nil && bytes.Compare(k[:min(len(k), 8)], limit) < 0; k, _ = c.Next() {
			i := bytes.IndexByte(k[min(len(k), 8):], 0)
			if len(k) < 8 || i < 0 {
				continue // no result key (none are)
			}
			wk := k[:8+i]
			if bytes.Equal(wk, last) {
				continue // another region's or run's result of the same window
			}
			last = append(last[:0], wk...)
			out = append(out, store.WindowRef{EndpointID: string(wk[8:]), Window: keyTime(wk[:8])})
		}
		return nil
	})
	return out, err
}

// endpointWindows returns the prefixes (resultPrefix) of id's open
// windows' results before `before`. resultsByWindow is time first, so it
// seeks id under each distinct window time in turn — two seeks per open
// window time, and the open times are the few windows not yet decided.
func endpointWindows(tx *bbolt.Tx, id string, before time.Time) [][]byte {
	limit := timeKey(before)
	var prefixes [][]byte
	c := tx.Bucket(bWinResults).Cursor()
	for k, _ := c.First(); k != nil && len(k) >= 8 && bytes.Compare(k[:8], limit) < 0; {
		t := binary.BigEndian.Uint64(k[:8])
		prefix := append(append(binary.BigEndian.AppendUint64(nil, t), id...), 0)
		if got, _ := c.Seek(prefix); bytes.HasPrefix(got, prefix) {
			prefixes = append(prefixes, prefix)
		}
		if t == math.MaxUint64 {
			break
		}
		k, _ = c.Seek(binary.BigEndian.AppendUint64(nil, t+1))
	}
	return prefixes
}

// deleteWindows deletes id's windows before `before`: their results.
func deleteWindows(tx *bbolt.Tx, id string, before time.Time) error {
	rb := tx.Bucket(bWinResults)
	for _, prefix := range endpointWindows(tx, id, before) {
		var keys [][]byte
		c := rb.Cursor()
		for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
			keys = append(keys, append([]byte(nil), k...))
		}
		for _, k := range keys {
			if err := rb.Delete(k); err != nil {
				return err
			}
		}
	}
	return nil
}

// Layouts before this one, moved on Open (migrateWindows).
var (
	bOldOpenWindows = []byte("openWindows")   // window endpointID → empty, while the window held results (the index before the results' own keys)
	bOldWindows     = []byte("windows")       // endpointID 0 window → empty, or a JSON list of its results (the first layout)
	bOldWinResults  = []byte("windowResults") // endpointID 0 window len(region) region runID → ProbeResult
)

// migrateWindows moves files written before the time-first layout to it:
// each window of the endpoint-first index (bucket windows) becomes an
// openWindows key, its results in windowResults — or in the index's value,
// a JSON list, in files older still — become resultsByWindow records, and
// the old buckets are dropped. Run in Open's transaction, so a crash
// leaves either layout whole; a file already moved has no old buckets.
func migrateWindows(tx *bbolt.Tx) error {
	rb := tx.Bucket(bWinResults)
	if tx.Bucket(bOldOpenWindows) != nil {
		// The index the results' keys now are: every key it held had
		// results (they were written and deleted together).
		if err := tx.DeleteBucket(bOldOpenWindows); err != nil {
			return err
		}
	}
	if old := tx.Bucket(bOldWindows); old != nil {
		err := old.ForEach(func(k, v []byte) error {
			id, w, rest, ok := splitOldKey(k)
			if !ok || len(rest) != 0 {
				return nil
			}
			if len(v) == 0 {
				return nil
			}
			var rs []msg.ProbeResult
			if err := jsonv.Unmarshal(v, &rs); err != nil {
				return fmt.Errorf("decode window list %q: %w", k, err)
			}
			for _, r := range rs {
				if err := put(rb, resultKey(id, w, r.Region, r.ProbeRunID), r); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		if err := tx.DeleteBucket(bOldWindows); err != nil {
			return err
		}
	}
	if old := tx.Bucket(bOldWinResults); old != nil {
		err := old.ForEach(func(k, v []byte) error {
			id, w, rest, ok := splitOldKey(k)
			if !ok {
				return nil
			}
			return rb.Put(append(resultPrefix(id, w), rest...), append([]byte(nil), v...))
		})
		if err != nil {
			return err
		}
		if err := tx.DeleteBucket(bOldWinResults); err != nil {
			return err
		}
	}
	return nil
}

// splitOldKey splits an endpoint-first key (endpointID 0 window rest).
func splitOldKey(k []byte) (id string, w time.Time, rest []byte, ok bool) {
	i := bytes.IndexByte(k, 0)
	if i < 0 || len(k) < i+9 {
		return "", time.Time{}, nil, false
	}
	return string(k[:i]), keyTime(k[i+1 : i+9]), k[i+9:], true
}

// OpenWindowsIn is OpenWindows for the endpoints of shards: the one file
// holds every shard, so the listing is filtered.
func (s *Store) OpenWindowsIn(ctx context.Context, before time.Time, shards []int) ([]store.WindowRef, error) {
	if len(shards) == 0 {
		return []store.WindowRef{}, nil
	}
	refs, err := s.OpenWindows(ctx, before)
	if err != nil {
		return nil, err
	}
	return store.InShards(refs, shards), nil
}
