// The change-event history: bucket events → one nested bucket per endpoint,
// key = the event ID's 16 bytes (observation time, sequence) → event JSON,
// so a cursor walks an endpoint's history in time order; bucket eventFP →
// one nested bucket per endpoint, fingerprint → event key (the idempotency
// index); bucket eventsPending, endpointID 0 event key → nil (what the
// alerter still owes); bucket eventFlap, endpointID → the endpoint's
// flapping period (store.EventFlap JSON). One transaction prunes the
// endpoint's events past the retention (with their fingerprints), reads
// what store.DecideEventAppend needs and applies it: appends the event,
// indexes its fingerprint and lists it as pending, or counts on a flapping
// marker; and keeps the flapping period, so no index runs ahead of or
// behind the data.

package bolt

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"go.etcd.io/bbolt"

	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/store"
)

// The event buckets are created on the first append, like the audit
// log's, so a store that never saw a change has none.
var (
	bEvents        = []byte("events")        // endpointID → bucket(time seq → ChangeEvent)
	bEventFP       = []byte("eventFP")       // endpointID → bucket(fingerprint → time seq)
	bEventsPending = []byte("eventsPending") // endpointID 0 time seq → nil
	bEventFlap     = []byte("eventFlap")     // endpointID → store.EventFlap
)

func eventKey(observed time.Time, seq uint64) []byte {
	k := make([]byte, 16)
	copy(k, timeKey(observed))
	binary.BigEndian.PutUint64(k[8:], seq)
	return k
}

func eventIDKey(id string) ([]byte, bool) {
	b, err := hex.DecodeString(id)
	return b, err == nil && len(b) == 16
}

// AppendEvents stores the events not yet known by fingerprint; see
// store.Events.
func (s *Store) AppendEvents(ctx context.Context, evs ...model.ChangeEvent) ([]model.ChangeEvent, error) {
	for _, e := range evs {
		if err := model.ValidEvent(e); err != nil {
			return nil, fmt.Errorf("bolt store: %w", err)
		}
	}
	now := s.clk.Now()
	cutoff := store.EventCutoff(now, s.history)
	var added []model.ChangeEvent
	err := s.update(ctx, func(tx *bbolt.Tx) error {
		added = added[:0]
		evRoot, err := tx.CreateBucketIfNotExists(bEvents)
		if err != nil {
			return err
		}
		fpRoot, err := tx.CreateBucketIfNotExists(bEventFP)
		if err != nil {
			return err
		}
		pending, err := tx.CreateBucketIfNotExists(bEventsPending)
		if err != nil {
			return err
		}
		flaps, err := tx.CreateBucketIfNotExists(bEventFlap)
		if err != nil {
			return err
		}
		for _, e := range evs {
			eb, err := evRoot.CreateBucketIfNotExists([]byte(e.EndpointID))
			if err != nil {
				return err
			}
			fb, err := fpRoot.CreateBucketIfNotExists([]byte(e.EndpointID))
			if err != nil {
				return err
			}
			if _, err := pruneEvents(eb, fb, pending, e.EndpointID, cutoff); err != nil {
				return err
			}
			e.ObservedAt, e.RecordedAt = e.ObservedAt.UTC(), now.UTC()
			seq := eb.Sequence() + 1
			held, err := heldEvents(eb, fb, flaps, e, store.EventID(e.ObservedAt, seq))
			if err != nil {
				return fmt.Errorf("append event of endpoint %s: %w", e.EndpointID, err)
			}
			d := store.DecideEventAppend(e, held, cutoff)
			switch d.Action {
			case store.EventSkip:
				continue
			case store.EventStore:
				if err := eb.SetSequence(seq); err != nil {
					return err
				}
				key := eventKey(d.Event.ObservedAt, seq)
				if err := put(eb, key, d.Event); err != nil {
					return fmt.Errorf("append event of endpoint %s: %w", e.EndpointID, err)
				}
				if err := fb.Put([]byte(d.Event.Fingerprint), key); err != nil {
					return err
				}
				if err := pending.Put(append(idPrefix(e.EndpointID), key...), nil); err != nil {
					return err
				}
				added = append(added, d.Event)
			case store.EventCount:
				key, ok := eventIDKey(d.Event.ID)
				if !ok {
					return fmt.Errorf("flapping marker %q of endpoint %s is not an event ID", d.Event.ID, e.EndpointID)
				}
				if err := put(eb, key, d.Event); err != nil {
					return fmt.Errorf("count on the flapping marker of endpoint %s: %w", e.EndpointID, err)
				}
			}
			if d.Flap == nil {
				err = flaps.Delete([]byte(e.EndpointID))
			} else {
				err = put(flaps, []byte(e.EndpointID), d.Flap)
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("bolt store: append events: %w", err)
	}
	return added, nil
}

// heldEvents reads what decides appending e: whether its fingerprint is
// known, the endpoint's events in the hour and the day before it (a
// cursor from each start, stopping at the budget), its flapping period and
// that period's marker of e's kind.
func heldEvents(eb, fb, flaps *bbolt.Bucket, e model.ChangeEvent, nextID string) (store.EventHeld, error) {
	h := store.EventHeld{Known: fb.Get([]byte(e.Fingerprint)) != nil, NextID: nextID}
	count := func(since time.Time, max int) int {
		n := 0
		c := eb.Cursor()
		for k, _ := c.Seek(timeKey(since)); k != nil && n < max; k, _ = c.Next() {
			n++
		}
		return n
	}
	h.LastHour = count(e.ObservedAt.Add(-time.Hour), store.EventsPerHour)
	h.LastDay = count(e.ObservedAt.Add(-24*time.Hour), store.EventsPerDay)
	raw := flaps.Get([]byte(e.EndpointID))
	if raw == nil {
		return h, nil
	}
	h.Flap = new(store.EventFlap)
	if err := json.Unmarshal(raw, h.Flap); err != nil {
		return h, fmt.Errorf("decode flapping period: %w", err)
	}
	key, ok := eventIDKey(h.Flap.Markers[e.Kind])
	if !ok {
		return h, nil
	}
	if v := eb.Get(key); v != nil {
		h.Marker = new(model.ChangeEvent)
		if err := json.Unmarshal(v, h.Marker); err != nil {
			return h, fmt.Errorf("decode flapping marker %x: %w", key, err)
		}
	}
	return h, nil
}

// pruneEvents deletes an endpoint's events observed before cutoff, with
// their fingerprints and pending entries. Keys are time-ordered, so it
// reads only what it deletes.
func pruneEvents(eb, fb, pending *bbolt.Bucket, endpointID string, cutoff time.Time) (int, error) {
	limit := timeKey(cutoff)
	type old struct{ key, fp []byte }
	var gone []old
	c := eb.Cursor()
	for k, v := c.First(); k != nil && bytes.Compare(k[:8], limit) < 0; k, v = c.Next() {
		var e model.ChangeEvent
		_ = json.Unmarshal(v, &e) // an unreadable record goes anyway
		gone = append(gone, old{bytes.Clone(k), []byte(e.Fingerprint)})
	}
	for _, o := range gone {
		if err := eb.Delete(o.key); err != nil {
			return 0, err
		}
		if len(o.fp) > 0 && bytes.Equal(fb.Get(o.fp), o.key) {
			if err := fb.Delete(o.fp); err != nil {
				return 0, err
			}
		}
		if err := pending.Delete(append(idPrefix(endpointID), o.key...)); err != nil {
			return 0, err
		}
	}
	return len(gone), nil
}

// ListEvents returns the endpoint's events newest first; see store.Events.
func (s *Store) ListEvents(ctx context.Context, endpointID string, f store.EventFilter) ([]model.ChangeEvent, error) {
	out := []model.ChangeEvent{}
	limit := store.EventLimit(f)
	lo := timeKey(store.EventCutoff(s.clk.Now(), s.history))
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		root := tx.Bucket(bEvents)
		if root == nil {
			return nil
		}
		b := root.Bucket([]byte(endpointID))
		if b == nil {
			return nil
		}
		c := b.Cursor()
		var k, v []byte
		if f.Before == "" {
			k, v = c.Last()
		} else {
			before, ok := eventIDKey(f.Before)
			if !ok {
				return fmt.Errorf("cursor %q is not an event ID", f.Before)
			}
			if k, _ = c.Seek(before); k == nil {
				k, v = c.Last()
			} else {
				k, v = c.Prev()
			}
		}
		for ; k != nil && len(out) < limit && bytes.Compare(k[:8], lo) >= 0; k, v = c.Prev() {
			var e model.ChangeEvent
			if err := json.Unmarshal(v, &e); err != nil {
				return fmt.Errorf("decode event %x: %w", k, err)
			}
			if f.Match(e) {
				out = append(out, e)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("bolt store: list events of endpoint %s: %w", endpointID, err)
	}
	return out, nil
}

// PendingEvents returns listed events oldest first; see store.Events. The
// index is keyed by endpoint, so it reads every pending key (a handful:
// events wait only until the next notification run) and orders them by
// their time part before reading the events it returns.
func (s *Store) PendingEvents(ctx context.Context, limit int) ([]model.ChangeEvent, error) {
	out := []model.ChangeEvent{}
	var stale [][]byte
	cutoff := store.EventCutoff(s.clk.Now(), s.history)
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		pending, root := tx.Bucket(bEventsPending), tx.Bucket(bEvents)
		if pending == nil || root == nil {
			return nil
		}
		type ref struct{ ep, key []byte }
		var refs []ref
		if err := pending.ForEach(func(k, _ []byte) error {
			i := bytes.IndexByte(k, 0)
			if i < 0 || len(k) != i+17 {
				stale = append(stale, bytes.Clone(k))
				return nil
			}
			refs = append(refs, ref{ep: k[:i], key: k[i+1:]})
			return nil
		}); err != nil {
			return err
		}
		slices.SortFunc(refs, func(a, b ref) int { return cmp.Or(bytes.Compare(a.key, b.key), bytes.Compare(a.ep, b.ep)) })
		for _, r := range refs {
			if limit > 0 && len(out) >= limit {
				break
			}
			var raw []byte
			if eb := root.Bucket(r.ep); eb != nil {
				raw = eb.Get(r.key)
			}
			if raw == nil {
				stale = append(stale, append(idPrefix(string(r.ep)), r.key...))
				continue
			}
			var e model.ChangeEvent
			if err := json.Unmarshal(raw, &e); err != nil {
				return fmt.Errorf("decode event %x of endpoint %s: %w", r.key, r.ep, err)
			}
			if e.ObservedAt.Before(cutoff) {
				stale = append(stale, append(idPrefix(string(r.ep)), r.key...))
				continue
			}
			out = append(out, e)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("bolt store: pending events: %w", err)
	}
	if len(stale) > 0 {
		err = s.update(ctx, func(tx *bbolt.Tx) error {
			for _, k := range stale {
				if err := tx.Bucket(bEventsPending).Delete(k); err != nil {
					return err
				}
			}
			return nil
		})
	}
	return out, err
}

// SettleEvent unlists an event from the pending index; see store.Events.
func (s *Store) SettleEvent(ctx context.Context, ref store.EventRef) error {
	key, ok := eventIDKey(ref.ID)
	if !ok {
		return fmt.Errorf("bolt store: settle event: %q is not an event ID", ref.ID)
	}
	return s.update(ctx, func(tx *bbolt.Tx) error {
		pending := tx.Bucket(bEventsPending)
		if pending == nil {
			return nil
		}
		return pending.Delete(append(idPrefix(ref.EndpointID), key...))
	})
}

// sweepEvents prunes every endpoint's events past the retention (the
// sweeper's share: an append prunes only its own endpoint, so an endpoint
// that stopped changing would keep its history forever).
func (s *Store) sweepEvents(tx *bbolt.Tx, now time.Time) (int, error) {
	evRoot, fpRoot, pending := tx.Bucket(bEvents), tx.Bucket(bEventFP), tx.Bucket(bEventsPending)
	if evRoot == nil || fpRoot == nil || pending == nil {
		return 0, nil
	}
	var eps [][]byte
	if err := evRoot.ForEachBucket(func(k []byte) error {
		eps = append(eps, bytes.Clone(k))
		return nil
	}); err != nil {
		return 0, err
	}
	cutoff := store.EventCutoff(now, s.history)
	n := 0
	for _, ep := range eps {
		fb, err := fpRoot.CreateBucketIfNotExists(ep)
		if err != nil {
			return n, err
		}
		m, err := pruneEvents(evRoot.Bucket(ep), fb, pending, string(ep), cutoff)
		if err != nil {
			return n, err
		}
		n += m
	}
	return n, sweepFlaps(tx.Bucket(bEventFlap), cutoff)
}

// sweepFlaps deletes the flapping periods whose latest change is past the
// retention: an append would end them anyway, and their markers are gone.
func sweepFlaps(flaps *bbolt.Bucket, cutoff time.Time) error {
	if flaps == nil {
		return nil
	}
	var gone [][]byte
	if err := flaps.ForEach(func(k, v []byte) error {
		var f store.EventFlap
		if json.Unmarshal(v, &f) != nil || f.Last.Before(cutoff) {
			gone = append(gone, bytes.Clone(k))
		}
		return nil
	}); err != nil {
		return err
	}
	for _, k := range gone {
		if err := flaps.Delete(k); err != nil {
			return err
		}
	}
	return nil
}
