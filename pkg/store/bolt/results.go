// Latest results (bucket latest, one per endpoint) and the results of
// undecided windows: one record per result in bucket windowResults, keyed
// (endpointID 0 window, region, runID), and one empty index key per
// window in bucket windows, so adding a result is a key lookup and a put
// whatever the window already holds, and OpenWindows walks one key per
// window.

package bolt

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"sort"
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
		// Only the stored slot matters: decoding the whole result (its
		// phases, catalog and conformance) for it was most of this call.
		cur, ok, err := get[struct {
			Slot time.Time `json:"slot"`
		}](b, []byte(r.EndpointID))
		if err != nil {
			return err
		}
		if ok && cur.Slot.After(r.Slot) {
			return nil
		}
		return put(b, []byte(r.EndpointID), r)
	})
}

// LatestResult returns the endpoint's latest probe result or ErrNotFound.
func (s *Store) LatestResult(ctx context.Context, endpointID string) (msg.ProbeResult, error) {
	return getOne[msg.ProbeResult](ctx, s, bLatest, endpointID, "latest result of "+endpointID)
}

// resultKey is a window result's key in windowResults: the window's key
// (endpointID 0 window), then the region's length as a uvarint, the
// region and the run ID — unambiguous whatever bytes region and run ID
// hold, and prefixed by the window's key so a cursor walks one window.
func resultKey(window []byte, region, runID string) []byte {
	k := make([]byte, 0, len(window)+binary.MaxVarintLen64+len(region)+len(runID))
	k = append(k, window...)
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
		if raw := tx.Bucket(bLastVerdict).Get([]byte(r.EndpointID)); raw != nil {
			var last struct{ Window time.Time }
			if err := jsonv.Unmarshal(raw, &last); err != nil {
				return fmt.Errorf("decode last verdict of %s: %w", r.EndpointID, err)
			}
			if !window.After(last.Window) {
				return fmt.Errorf("result %s for window %s of %s (last verdict %s): %w",
					r.ProbeRunID, window.UTC().Format(time.RFC3339), r.EndpointID, last.Window.UTC().Format(time.RFC3339), store.ErrWindowDecided)
			}
		}
		wk := idTimeKey(r.EndpointID, window)
		rb := tx.Bucket(bWinResults)
		rk := resultKey(wk, r.Region, r.ProbeRunID)
		if rb.Get(rk) != nil {
			return nil
		}
		if err := put(rb, rk, r); err != nil {
			return err
		}
		if wb := tx.Bucket(bWindows); wb.Get(wk) == nil {
			if err := wb.Put(wk, []byte{}); err != nil {
				return err
			}
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
		prefix := idTimeKey(ref.EndpointID, ref.Window)
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
// before `before`, ordered by window then endpoint ID.
func (s *Store) OpenWindows(ctx context.Context, before time.Time) ([]store.WindowRef, error) {
	out := []store.WindowRef{}
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		return tx.Bucket(bWindows).ForEach(func(k, _ []byte) error {
			if len(k) < 9 {
				return nil
			}
			w := keyTime(k[len(k)-8:])
			if w.Before(before) {
				out = append(out, store.WindowRef{EndpointID: string(k[:len(k)-9]), Window: w})
			}
			return nil
		})
	})
	sort.Slice(out, func(i, j int) bool {
		if !out[i].Window.Equal(out[j].Window) {
			return out[i].Window.Before(out[j].Window)
		}
		return out[i].EndpointID < out[j].EndpointID
	})
	return out, err
}

// deleteWindows deletes id's windows before `before`: their index keys
// and their results.
func deleteWindows(tx *bbolt.Tx, id string, before time.Time) error {
	if err := deleteRange(tx.Bucket(bWindows), id, before); err != nil {
		return err
	}
	prefix := idPrefix(id)
	end := idTimeKey(id, before)
	var keys [][]byte
	c := tx.Bucket(bWinResults).Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix) && len(k) >= len(end) && bytes.Compare(k[:len(end)], end) < 0; k, _ = c.Next() {
		keys = append(keys, append([]byte(nil), k...))
	}
	b := tx.Bucket(bWinResults)
	for _, k := range keys {
		if err := b.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

// splitWindowLists moves files written before windowResults existed to
// it: a windows value that is a JSON list of the window's results becomes
// one windowResults record per result and an empty index key. Run in
// Open's transaction, so a crash leaves either layout whole; a file
// already split has only empty values and costs one walk of the index.
func splitWindowLists(tx *bbolt.Tx) error {
	wb, rb := tx.Bucket(bWindows), tx.Bucket(bWinResults)
	type list struct {
		key []byte
		rs  []msg.ProbeResult
	}
	var lists []list
	err := wb.ForEach(func(k, v []byte) error {
		if len(v) == 0 {
			return nil
		}
		var rs []msg.ProbeResult
		if err := jsonv.Unmarshal(v, &rs); err != nil {
			return fmt.Errorf("decode window list %q: %w", k, err)
		}
		lists = append(lists, list{append([]byte(nil), k...), rs})
		return nil
	})
	if err != nil {
		return err
	}
	for _, l := range lists {
		for _, r := range l.rs {
			if err := put(rb, resultKey(l.key, r.Region, r.ProbeRunID), r); err != nil {
				return err
			}
		}
		if err := wb.Put(l.key, []byte{}); err != nil {
			return err
		}
	}
	return nil
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
