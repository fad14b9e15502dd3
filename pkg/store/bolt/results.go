// Latest results (bucket latest, one per endpoint) and the results of
// undecided windows (bucket windows, one record per endpoint and window).

package bolt

import (
	"context"
	"fmt"
	"sort"
	"time"

	"go.etcd.io/bbolt"

	"github.com/mcpmon/mcpmon/pkg/msg"
	"github.com/mcpmon/mcpmon/pkg/store"
)

// PutLatestResult stores r unless a result for a later slot is stored.
func (s *Store) PutLatestResult(ctx context.Context, r msg.ProbeResult) error {
	return s.batch(ctx, func(tx *bbolt.Tx) error {
		b := tx.Bucket(bLatest)
		cur, ok, err := get[msg.ProbeResult](b, []byte(r.EndpointID))
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

// AddWindowResult adds r to its endpoint's window, idempotently by
// (ProbeRunID, Region).
func (s *Store) AddWindowResult(ctx context.Context, window time.Time, r msg.ProbeResult) (bool, error) {
	added := false
	err := s.batch(ctx, func(tx *bbolt.Tx) error {
		added = false
		last, ok, err := get[msg.Verdict](tx.Bucket(bLastVerdict), []byte(r.EndpointID))
		if err != nil {
			return err
		}
		if ok && !window.After(last.Window) {
			return fmt.Errorf("result %s for window %s of %s (last verdict %s): %w",
				r.ProbeRunID, window.UTC().Format(time.RFC3339), r.EndpointID, last.Window.UTC().Format(time.RFC3339), store.ErrWindowDecided)
		}
		b := tx.Bucket(bWindows)
		key := idTimeKey(r.EndpointID, window)
		rs, _, err := get[[]msg.ProbeResult](b, key)
		if err != nil {
			return err
		}
		for _, x := range rs {
			if x.ProbeRunID == r.ProbeRunID && x.Region == r.Region {
				return nil
			}
		}
		added = true
		return put(b, key, append(rs, r))
	})
	if err != nil {
		return false, err
	}
	return added, nil
}

// WindowResults returns the window's results ordered by (Region, ProbeRunID).
func (s *Store) WindowResults(ctx context.Context, ref store.WindowRef) ([]msg.ProbeResult, error) {
	var rs []msg.ProbeResult
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		var err error
		rs, _, err = get[[]msg.ProbeResult](tx.Bucket(bWindows), idTimeKey(ref.EndpointID, ref.Window))
		return err
	})
	if rs == nil {
		rs = []msg.ProbeResult{}
	}
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
