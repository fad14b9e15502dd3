// Package bolt is the embedded, persistent implementation of store.Store: one
// bbolt file in mcpmon's data dir, used by `mcpmon run` so a single process
// needs no external database.
//
// Data enters through the store.Store methods and is written to the file in
// one bbolt read-write transaction per call, so every multi-record change
// (a verdict with its history and window cleanup, a tracker with its
// incidents, a ledger transition with its expiry index) is atomic and
// survives a crash once the call returns. Data leaves through the same
// methods. Time comes only from the injected clock, so TTLs, leases and
// history retention are testable in milliseconds; a background sweeper (real
// ticker, clock-based decisions) deletes expired ledger keys and aged
// verdicts so the file stays small.
//
// bbolt rather than SQLite: the store needs only ordered keys and
// transactions, bbolt is pure Go (no cgo), a single file, and its single
// writer matches mcpmon's write rate.
package bolt

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"go.etcd.io/bbolt"

	"github.com/mcpmon/mcpmon/pkg/clock"
	"github.com/mcpmon/mcpmon/pkg/msg"
	"github.com/mcpmon/mcpmon/pkg/store"
)

// Options configure Open. Zero values use the defaults.
type Options struct {
	// Clock is the time source for TTLs, leases and retention (default: real).
	Clock clock.Clock
	// LedgerTTL is how long a done ledger key is remembered
	// (default store.DefaultLedgerTTL, see its reasoning there).
	LedgerTTL time.Duration
	// VerdictHistory is how far back verdict history is kept
	// (default store.DefaultVerdictHistory).
	VerdictHistory time.Duration
	// SweepInterval is how often expired ledger keys and aged verdicts are
	// deleted in the background (default 10m; negative disables, Sweep can
	// still be called).
	SweepInterval time.Duration
	// LockTimeout bounds waiting for the file lock held by another process
	// (default 2s), so a second mcpmon on the same data dir fails fast.
	LockTimeout time.Duration
	Logger      *slog.Logger
}

// Store is the bbolt-backed store.Store.
type Store struct {
	db      *bbolt.DB
	clk     clock.Clock
	ttl     time.Duration
	history time.Duration
	log     *slog.Logger

	stop      chan struct{}
	stopped   chan struct{}
	closeOnce sync.Once
	closeErr  error
}

var _ store.Store = (*Store)(nil)

// Bucket names. Keys that combine an ID with a time put the ID first and an
// 8-byte big-endian time after a 0 byte, so a cursor walks one endpoint's
// records in time order.
var (
	bEndpoints   = []byte("endpoints")   // id → Endpoint
	bLatest      = []byte("latest")      // endpointID → ProbeResult
	bWindows     = []byte("windows")     // endpointID 0 window → []ProbeResult
	bLastVerdict = []byte("lastVerdict") // endpointID → Verdict
	bVerdicts    = []byte("verdicts")    // endpointID 0 window → Verdict
	bTrackers    = []byte("trackers")    // endpointID → Tracker
	bIncidents   = []byte("incidents")   // id → Incident
	bIncByOpened = []byte("incByOpened") // openedWindow id → nil
	bIncByEP     = []byte("incByEP")     // endpointID 0 openedWindow id → nil
	bIncOpen     = []byte("incOpen")     // id → nil, while not resolved
	bOutboxes    = []byte("outboxes")    // endpointID → nil, while its tracker's Pending > 0
	bLedger      = []byte("ledger")      // key → ledgerRecord
	bLedgerGC    = []byte("ledgerGC")    // gcAt key → nil
	bObjects     = []byte("objects")     // kind → bucket(id → doc)
	bDeliveries  = []byte("deliveries")  // incidentID → bucket(kind:sink → Delivery)
	allBuckets   = [][]byte{bEndpoints, bLatest, bWindows, bLastVerdict, bVerdicts, bTrackers, bIncidents, bIncByOpened, bIncByEP, bIncOpen, bOutboxes, bLedger, bLedgerGC, bObjects, bDeliveries}
)

// Open opens (creating if needed) the store file at path.
func Open(path string, opts Options) (*Store, error) {
	if opts.Clock == nil {
		opts.Clock = clock.Real{}
	}
	if opts.LedgerTTL <= 0 {
		opts.LedgerTTL = store.DefaultLedgerTTL
	}
	if opts.VerdictHistory <= 0 {
		opts.VerdictHistory = store.DefaultVerdictHistory
	}
	if opts.SweepInterval == 0 {
		opts.SweepInterval = 10 * time.Minute
	}
	if opts.LockTimeout <= 0 {
		opts.LockTimeout = 2 * time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("bolt store: create directory for %s: %w", path, err)
	}
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: opts.LockTimeout})
	if err != nil {
		if errors.Is(err, bbolt.ErrTimeout) {
			return nil, fmt.Errorf("bolt store: %s is locked by another process (is another mcpmon using this data dir?): %w", path, err)
		}
		return nil, fmt.Errorf("bolt store: open %s: %w", path, err)
	}
	err = db.Update(func(tx *bbolt.Tx) error {
		for _, b := range allBuckets {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("bolt store: initialise %s: %w", path, err)
	}
	s := &Store{
		db:      db,
		clk:     opts.Clock,
		ttl:     opts.LedgerTTL,
		history: opts.VerdictHistory,
		log:     opts.Logger.With("component", "store", "backend", "bolt"),
		stop:    make(chan struct{}),
		stopped: make(chan struct{}),
	}
	if opts.SweepInterval > 0 {
		go s.sweepLoop(opts.SweepInterval)
	} else {
		close(s.stopped)
	}
	return s, nil
}

// Close stops the sweeper and closes the file.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		close(s.stop)
		<-s.stopped
		s.closeErr = s.db.Close()
	})
	return s.closeErr
}

// Ping reports whether the file is open.
func (s *Store) Ping(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return s.db.View(func(*bbolt.Tx) error { return nil })
}

func (s *Store) view(ctx context.Context, fn func(*bbolt.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return s.db.View(fn)
}

func (s *Store) update(ctx context.Context, fn func(*bbolt.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return s.db.Update(fn)
}

// ---- encoding helpers

// timeKey encodes t so byte order is time order (sign bit flipped for
// times before 1970).
func timeKey(t time.Time) []byte {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(t.UnixNano())^(1<<63))
	return b[:]
}

func keyTime(b []byte) time.Time {
	return time.Unix(0, int64(binary.BigEndian.Uint64(b)^(1<<63))).UTC()
}

func idTimeKey(id string, t time.Time) []byte {
	k := make([]byte, 0, len(id)+9)
	k = append(k, id...)
	k = append(k, 0)
	return append(k, timeKey(t)...)
}

func idPrefix(id string) []byte { return append([]byte(id), 0) }

func get[T any](b *bbolt.Bucket, key []byte) (T, bool, error) {
	var v T
	raw := b.Get(key)
	if raw == nil {
		return v, false, nil
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return v, false, fmt.Errorf("decode record %q: %w", key, err)
	}
	return v, true, nil
}

func put(b *bbolt.Bucket, key []byte, v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode %q: %w", key, err)
	}
	return b.Put(key, raw)
}

// ---- Endpoints

// CreateEndpoint stores a new endpoint with Version 1; ErrConflict if the ID
// exists. CreatedAt defaults to now, UpdatedAt is set to CreatedAt.
func (s *Store) CreateEndpoint(ctx context.Context, e store.Endpoint) (store.Endpoint, error) {
	if e.ID == "" {
		return store.Endpoint{}, errors.New("bolt store: create endpoint: ID is required")
	}
	now := s.clk.Now().UTC()
	if e.CreatedAt.IsZero() {
		e.CreatedAt = now
	}
	e.UpdatedAt = e.CreatedAt
	e.Version = 1
	err := s.update(ctx, func(tx *bbolt.Tx) error {
		b := tx.Bucket(bEndpoints)
		if b.Get([]byte(e.ID)) != nil {
			return fmt.Errorf("create endpoint %s: already exists: %w", e.ID, store.ErrConflict)
		}
		return put(b, []byte(e.ID), e)
	})
	if err != nil {
		return store.Endpoint{}, err
	}
	return e, nil
}

// UpdateEndpoint replaces the endpoint if e.Version matches the stored one.
func (s *Store) UpdateEndpoint(ctx context.Context, e store.Endpoint) (store.Endpoint, error) {
	err := s.update(ctx, func(tx *bbolt.Tx) error {
		b := tx.Bucket(bEndpoints)
		cur, ok, err := get[store.Endpoint](b, []byte(e.ID))
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("update endpoint %s: %w", e.ID, store.ErrNotFound)
		}
		if cur.Version != e.Version {
			return fmt.Errorf("update endpoint %s: have version %d, stored %d: %w", e.ID, e.Version, cur.Version, store.ErrConflict)
		}
		e.CreatedAt = cur.CreatedAt
		e.UpdatedAt = s.clk.Now().UTC()
		e.Version = cur.Version + 1
		return put(b, []byte(e.ID), e)
	})
	if err != nil {
		return store.Endpoint{}, err
	}
	return e, nil
}

// GetEndpoint returns the endpoint or ErrNotFound.
func (s *Store) GetEndpoint(ctx context.Context, id string) (store.Endpoint, error) {
	var e store.Endpoint
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		var ok bool
		var err error
		e, ok, err = get[store.Endpoint](tx.Bucket(bEndpoints), []byte(id))
		if err == nil && !ok {
			err = fmt.Errorf("endpoint %s: %w", id, store.ErrNotFound)
		}
		return err
	})
	return e, err
}

// ListEndpoints returns every endpoint ordered by ID.
func (s *Store) ListEndpoints(ctx context.Context) ([]store.Endpoint, error) {
	out := []store.Endpoint{}
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		return tx.Bucket(bEndpoints).ForEach(func(k, v []byte) error {
			var e store.Endpoint
			if err := json.Unmarshal(v, &e); err != nil {
				return fmt.Errorf("decode endpoint %s: %w", k, err)
			}
			out = append(out, e)
			return nil
		})
	})
	return out, err
}

// DeleteEndpoint removes the endpoint with its latest probe result, its
// undecided windows and its tool catalog in one transaction; ErrNotFound if
// absent (the cleanup still runs, so a repeated delete removes what a probe
// in flight at the first one wrote back). Verdict history, the tracker,
// incidents and ledger keys stay: history ages out, incidents are the audit
// trail.
func (s *Store) DeleteEndpoint(ctx context.Context, id string) error {
	found := false
	err := s.update(ctx, func(tx *bbolt.Tx) error {
		b := tx.Bucket(bEndpoints)
		if found = b.Get([]byte(id)) != nil; found {
			if err := b.Delete([]byte(id)); err != nil {
				return err
			}
		}
		if err := tx.Bucket(bLatest).Delete([]byte(id)); err != nil {
			return err
		}
		if err := deleteRange(tx.Bucket(bWindows), id, time.Unix(0, math.MaxInt64)); err != nil {
			return err
		}
		for _, kind := range store.ProberObjectKinds() {
			if kb := tx.Bucket(bObjects).Bucket([]byte(kind)); kb != nil {
				if err := kb.Delete([]byte(id)); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("delete endpoint %s: %w", id, err)
	}
	if !found {
		return fmt.Errorf("delete endpoint %s: %w", id, store.ErrNotFound)
	}
	return nil
}

// ---- Results

// PutLatestResult stores r unless a result for a later slot is stored.
func (s *Store) PutLatestResult(ctx context.Context, r msg.ProbeResult) error {
	return s.update(ctx, func(tx *bbolt.Tx) error {
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
	var r msg.ProbeResult
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		var ok bool
		var err error
		r, ok, err = get[msg.ProbeResult](tx.Bucket(bLatest), []byte(endpointID))
		if err == nil && !ok {
			err = fmt.Errorf("latest result of %s: %w", endpointID, store.ErrNotFound)
		}
		return err
	})
	return r, err
}

// AddWindowResult adds r to its endpoint's window, idempotently by
// (ProbeRunID, Region).
func (s *Store) AddWindowResult(ctx context.Context, window time.Time, r msg.ProbeResult) (bool, error) {
	added := false
	err := s.update(ctx, func(tx *bbolt.Tx) error {
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
	sortResults(rs)
	return rs, err
}

// sortResults orders window results deterministically, by (Region,
// ProbeRunID); both backends return this order.
func sortResults(rs []msg.ProbeResult) {
	sort.Slice(rs, func(i, j int) bool {
		if rs[i].Region != rs[j].Region {
			return rs[i].Region < rs[j].Region
		}
		return rs[i].ProbeRunID < rs[j].ProbeRunID
	})
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

// ---- Verdicts

// RecordVerdict applies v if its window is after the endpoint's last
// verdict: it becomes the last verdict, joins the history (trimmed to the
// retention) and the results of its window — and of any earlier window of
// that endpoint, which can no longer be decided — are dropped, all in one
// transaction.
func (s *Store) RecordVerdict(ctx context.Context, v msg.Verdict) (bool, error) {
	applied := false
	now := s.clk.Now()
	err := s.update(ctx, func(tx *bbolt.Tx) error {
		lb := tx.Bucket(bLastVerdict)
		last, ok, err := get[msg.Verdict](lb, []byte(v.EndpointID))
		if err != nil {
			return err
		}
		if ok && !v.Window.After(last.Window) {
			return nil
		}
		if err := put(lb, []byte(v.EndpointID), v); err != nil {
			return err
		}
		if err := put(tx.Bucket(bVerdicts), idTimeKey(v.EndpointID, v.Window), v); err != nil {
			return err
		}
		if err := deleteRange(tx.Bucket(bWindows), v.EndpointID, v.Window.Add(1)); err != nil {
			return err
		}
		if err := deleteRange(tx.Bucket(bVerdicts), v.EndpointID, now.Add(-s.history)); err != nil {
			return err
		}
		applied = true
		return nil
	})
	return applied, err
}

// deleteRange deletes id's time-keyed records before `before`.
func deleteRange(b *bbolt.Bucket, id string, before time.Time) error {
	prefix := idPrefix(id)
	end := idTimeKey(id, before)
	var keys [][]byte
	c := b.Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix) && bytes.Compare(k, end) < 0; k, _ = c.Next() {
		if len(k) == len(prefix)+8 {
			keys = append(keys, append([]byte(nil), k...))
		}
	}
	for _, k := range keys {
		if err := b.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

// LastVerdict returns the endpoint's newest verdict or ErrNotFound.
func (s *Store) LastVerdict(ctx context.Context, endpointID string) (msg.Verdict, error) {
	var v msg.Verdict
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		var ok bool
		var err error
		v, ok, err = get[msg.Verdict](tx.Bucket(bLastVerdict), []byte(endpointID))
		if err == nil && !ok {
			err = fmt.Errorf("last verdict of %s: %w", endpointID, store.ErrNotFound)
		}
		return err
	})
	return v, err
}

// ListVerdicts returns up to limit verdicts (all if limit <= 0), newest
// first, within the retention.
func (s *Store) ListVerdicts(ctx context.Context, endpointID string, limit int) ([]msg.Verdict, error) {
	out := []msg.Verdict{}
	cutoff := s.clk.Now().Add(-s.history)
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		prefix := idPrefix(endpointID)
		c := tx.Bucket(bVerdicts).Cursor()
		seek := append(append([]byte(nil), prefix...), bytes.Repeat([]byte{0xff}, 9)...)
		k, v := c.Seek(seek)
		if k == nil {
			k, v = c.Last()
		} else {
			k, v = c.Prev()
		}
		for ; k != nil && bytes.HasPrefix(k, prefix); k, v = c.Prev() {
			if len(k) != len(prefix)+8 {
				continue
			}
			if keyTime(k[len(prefix):]).Before(cutoff) {
				break
			}
			var vd msg.Verdict
			if err := json.Unmarshal(v, &vd); err != nil {
				return fmt.Errorf("decode verdict of %s: %w", endpointID, err)
			}
			out = append(out, vd)
			if limit > 0 && len(out) >= limit {
				break
			}
		}
		return nil
	})
	return out, err
}

// ---- Incidents

// GetTracker returns the endpoint's tracker, or a zero Tracker (Version 0)
// for the endpoint if none was saved.
func (s *Store) GetTracker(ctx context.Context, endpointID string) (store.Tracker, error) {
	var t store.Tracker
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		var ok bool
		var err error
		t, ok, err = get[store.Tracker](tx.Bucket(bTrackers), []byte(endpointID))
		if err == nil && !ok {
			t = store.Tracker{EndpointID: endpointID}
		}
		return err
	})
	return t, err
}

// SaveTracker compare-and-sets the tracker and incidents in one transaction.
func (s *Store) SaveTracker(ctx context.Context, t store.Tracker, incidents ...store.Incident) error {
	if t.EndpointID == "" {
		return errors.New("bolt store: save tracker: EndpointID is required")
	}
	return s.update(ctx, func(tx *bbolt.Tx) error {
		tb := tx.Bucket(bTrackers)
		cur, ok, err := get[store.Tracker](tb, []byte(t.EndpointID))
		if err != nil {
			return err
		}
		if (ok && cur.Version != t.Version) || (!ok && t.Version != 0) {
			return fmt.Errorf("save tracker %s: have version %d, stored %d: %w", t.EndpointID, t.Version, cur.Version, store.ErrConflict)
		}
		for _, inc := range incidents {
			if err := putIncident(tx, inc, true); err != nil {
				return err
			}
		}
		outboxes := tx.Bucket(bOutboxes)
		if t.Pending > 0 {
			err = outboxes.Put([]byte(t.EndpointID), nil)
		} else {
			err = outboxes.Delete([]byte(t.EndpointID))
		}
		if err != nil {
			return err
		}
		t.Version++
		return put(tb, []byte(t.EndpointID), t)
	})
}

// PendingOutboxes lists the endpoints whose tracker holds pending
// notifications, from the index SaveTracker keeps.
func (s *Store) PendingOutboxes(ctx context.Context) ([]string, error) {
	out := []string{}
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		return tx.Bucket(bOutboxes).ForEach(func(k, _ []byte) error {
			out = append(out, string(k))
			return nil
		})
	})
	return out, err
}

// CountOpenIncidents counts the open-incident index.
func (s *Store) CountOpenIncidents(ctx context.Context) (int, error) {
	var n int
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		n = tx.Bucket(bIncOpen).Stats().KeyN
		return nil
	})
	return n, err
}

// putIncident compare-and-sets inc (Version 0 = create when create is
// allowed) and maintains the opened-window and open-incident indexes.
func putIncident(tx *bbolt.Tx, inc store.Incident, create bool) error {
	if inc.ID == "" {
		return errors.New("bolt store: incident ID is required")
	}
	b := tx.Bucket(bIncidents)
	cur, ok, err := get[store.Incident](b, []byte(inc.ID))
	if err != nil {
		return err
	}
	switch {
	case !ok && (!create || inc.Version != 0):
		if !create {
			return fmt.Errorf("incident %s: %w", inc.ID, store.ErrNotFound)
		}
		return fmt.Errorf("incident %s: have version %d, not stored: %w", inc.ID, inc.Version, store.ErrConflict)
	case ok && cur.Version != inc.Version:
		return fmt.Errorf("incident %s: have version %d, stored %d: %w", inc.ID, inc.Version, cur.Version, store.ErrConflict)
	}
	idx, byEP := tx.Bucket(bIncByOpened), tx.Bucket(bIncByEP)
	if ok {
		if err := idx.Delete(incIndexKey(cur)); err != nil {
			return err
		}
		if err := byEP.Delete(incEPKey(cur)); err != nil {
			return err
		}
	}
	inc.Version++
	if err := idx.Put(incIndexKey(inc), nil); err != nil {
		return err
	}
	if err := byEP.Put(incEPKey(inc), nil); err != nil {
		return err
	}
	if inc.State == store.IncidentResolved {
		err = tx.Bucket(bIncOpen).Delete([]byte(inc.ID))
	} else {
		err = tx.Bucket(bIncOpen).Put([]byte(inc.ID), nil)
	}
	if err != nil {
		return err
	}
	return put(b, []byte(inc.ID), inc)
}

func incIndexKey(inc store.Incident) []byte {
	return append(timeKey(inc.OpenedWindow), inc.ID...)
}

func incEPKey(inc store.Incident) []byte {
	return append(idPrefix(inc.EndpointID), incIndexKey(inc)...)
}

// GetIncident returns the incident or ErrNotFound.
func (s *Store) GetIncident(ctx context.Context, id string) (store.Incident, error) {
	var inc store.Incident
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		var ok bool
		var err error
		inc, ok, err = get[store.Incident](tx.Bucket(bIncidents), []byte(id))
		if err == nil && !ok {
			err = fmt.Errorf("incident %s: %w", id, store.ErrNotFound)
		}
		return err
	})
	return inc, err
}

// UpdateIncident compare-and-sets an existing incident; ErrNotFound if absent.
func (s *Store) UpdateIncident(ctx context.Context, inc store.Incident) (store.Incident, error) {
	err := s.update(ctx, func(tx *bbolt.Tx) error { return putIncident(tx, inc, false) })
	if err != nil {
		return store.Incident{}, err
	}
	inc.Version++
	return inc, nil
}

// ListIncidents returns matching incidents ordered by OpenedWindow, newest
// first (ties by ID, descending). It walks the endpoint's index when the
// filter names one, the global index otherwise.
func (s *Store) ListIncidents(ctx context.Context, f store.IncidentFilter) ([]store.Incident, error) {
	out := []store.Incident{}
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		b := tx.Bucket(bIncidents)
		var prefix []byte
		c := tx.Bucket(bIncByOpened).Cursor()
		k, _ := c.Last()
		if f.EndpointID != "" {
			prefix = idPrefix(f.EndpointID)
			c = tx.Bucket(bIncByEP).Cursor()
			k, _ = c.Seek(append(append([]byte(nil), prefix...), bytes.Repeat([]byte{0xff}, 9)...))
			if k == nil {
				k, _ = c.Last()
			} else {
				k, _ = c.Prev()
			}
		}
		for ; k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Prev() {
			if len(k) < len(prefix)+8 {
				continue
			}
			inc, ok, err := get[store.Incident](b, k[len(prefix)+8:])
			if err != nil {
				return err
			}
			if !ok || (f.EndpointID != "" && inc.EndpointID != f.EndpointID) || (f.State != "" && inc.State != f.State) {
				continue
			}
			out = append(out, inc)
			if f.Limit > 0 && len(out) >= f.Limit {
				break
			}
		}
		return nil
	})
	return out, err
}

// ---- Ledger

type ledgerState string

const (
	ledgerClaimed ledgerState = "claimed"
	ledgerDone    ledgerState = "done"
)

type ledgerRecord struct {
	State ledgerState `json:"state"`
	Owner string      `json:"owner"`
	// Until is the lease deadline (claimed) or the expiry (done).
	Until time.Time `json:"until"`
	// GCAt is when the sweeper may delete the record: the expiry for done,
	// lease deadline + TTL for an abandoned claim.
	GCAt time.Time `json:"gcAt"`
}

func gcKey(at time.Time, key string) []byte { return append(timeKey(at), key...) }

func (s *Store) putLedger(tx *bbolt.Tx, key string, old *ledgerRecord, rec ledgerRecord) error {
	gc := tx.Bucket(bLedgerGC)
	if old != nil {
		if err := gc.Delete(gcKey(old.GCAt, key)); err != nil {
			return err
		}
	}
	if err := gc.Put(gcKey(rec.GCAt, key), nil); err != nil {
		return err
	}
	return put(tx.Bucket(bLedger), []byte(key), rec)
}

// Claim takes key for owner for lease. Absent keys, done keys past their
// TTL and claims past their lease are acquired; a live claim by the same
// owner is re-acquired (its lease renewed).
func (s *Store) Claim(ctx context.Context, key, owner string, lease time.Duration) (store.ClaimState, error) {
	if key == "" || owner == "" {
		return 0, errors.New("bolt store: claim: key and owner are required")
	}
	if lease <= 0 {
		lease = store.DefaultLease
	}
	var state store.ClaimState
	err := s.update(ctx, func(tx *bbolt.Tx) error {
		now := s.clk.Now()
		cur, ok, err := get[ledgerRecord](tx.Bucket(bLedger), []byte(key))
		if err != nil {
			return err
		}
		if ok && cur.Until.After(now) {
			switch {
			case cur.State == ledgerDone:
				state = store.ClaimDone
				return nil
			case cur.Owner != owner:
				state = store.ClaimHeld
				return nil
			}
		}
		var old *ledgerRecord
		if ok {
			old = &cur
		}
		state = store.ClaimAcquired
		until := now.Add(lease)
		return s.putLedger(tx, key, old, ledgerRecord{State: ledgerClaimed, Owner: owner, Until: until, GCAt: until.Add(s.ttl)})
	})
	if err != nil {
		return 0, err
	}
	return state, nil
}

// Complete marks owner's claim done for the TTL. Completing an already done
// key by the same owner is a no-op; ErrConflict if another owner holds or
// completed the key or it is not claimed. A claim past its lease that nobody
// took over can still be completed.
func (s *Store) Complete(ctx context.Context, key, owner string) error {
	return s.update(ctx, func(tx *bbolt.Tx) error {
		now := s.clk.Now()
		cur, ok, err := get[ledgerRecord](tx.Bucket(bLedger), []byte(key))
		if err != nil {
			return err
		}
		if !ok || cur.Owner != owner || (cur.State == ledgerDone && !cur.Until.After(now)) {
			return fmt.Errorf("complete ledger key %s for %s: claim lost: %w", key, owner, store.ErrConflict)
		}
		if cur.State == ledgerDone {
			return nil
		}
		exp := now.Add(s.ttl)
		return s.putLedger(tx, key, &cur, ledgerRecord{State: ledgerDone, Owner: owner, Until: exp, GCAt: exp})
	})
}

// Release drops owner's claim; a no-op when owner does not hold key (done
// keys are never released).
func (s *Store) Release(ctx context.Context, key, owner string) error {
	return s.update(ctx, func(tx *bbolt.Tx) error {
		cur, ok, err := get[ledgerRecord](tx.Bucket(bLedger), []byte(key))
		if err != nil || !ok || cur.State != ledgerClaimed || cur.Owner != owner {
			return err
		}
		if err := tx.Bucket(bLedgerGC).Delete(gcKey(cur.GCAt, key)); err != nil {
			return err
		}
		return tx.Bucket(bLedger).Delete([]byte(key))
	})
}

// ---- Deliveries

// RecordDelivery merges d into the incident's record in one transaction.
func (s *Store) RecordDelivery(ctx context.Context, incidentID string, d store.Delivery) error {
	if err := store.ValidDelivery(incidentID, d); err != nil {
		return fmt.Errorf("bolt store: %w", err)
	}
	return s.update(ctx, func(tx *bbolt.Tx) error {
		if tx.Bucket(bIncidents).Get([]byte(incidentID)) == nil {
			return fmt.Errorf("record delivery for incident %s: %w", incidentID, store.ErrNotFound)
		}
		b, err := tx.Bucket(bDeliveries).CreateBucketIfNotExists([]byte(incidentID))
		if err != nil {
			return err
		}
		key := []byte(store.DeliveryField(d))
		cur, _, err := get[store.Delivery](b, key)
		if err != nil {
			return err
		}
		return put(b, key, store.MergeDelivery(cur, d))
	})
}

// Deliveries returns the incident's records in store.SortDeliveries order.
func (s *Store) Deliveries(ctx context.Context, incidentID string) ([]store.Delivery, error) {
	out := []store.Delivery{}
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		b := tx.Bucket(bDeliveries).Bucket([]byte(incidentID))
		if b == nil {
			return nil
		}
		return b.ForEach(func(k, _ []byte) error {
			d, _, err := get[store.Delivery](b, k)
			out = append(out, d)
			return err
		})
	})
	if err != nil {
		return nil, err
	}
	store.SortDeliveries(out)
	return out, nil
}

// ---- Objects

// PutObject stores doc under kind/id.
func (s *Store) PutObject(ctx context.Context, kind, id string, doc []byte) error {
	if kind == "" || id == "" {
		return errors.New("bolt store: put object: kind and id are required")
	}
	return s.update(ctx, func(tx *bbolt.Tx) error {
		b, err := tx.Bucket(bObjects).CreateBucketIfNotExists([]byte(kind))
		if err != nil {
			return err
		}
		return b.Put([]byte(id), append([]byte{}, doc...))
	})
}

// GetObject returns the document or ErrNotFound.
func (s *Store) GetObject(ctx context.Context, kind, id string) ([]byte, error) {
	var doc []byte
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		if b := tx.Bucket(bObjects).Bucket([]byte(kind)); b != nil {
			if v := b.Get([]byte(id)); v != nil {
				doc = bytes.Clone(v)
				return nil
			}
		}
		return fmt.Errorf("object %s/%s: %w", kind, id, store.ErrNotFound)
	})
	return doc, err
}

// ListObjects returns every document of kind by ID (empty map if none).
func (s *Store) ListObjects(ctx context.Context, kind string) (map[string][]byte, error) {
	out := map[string][]byte{}
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		b := tx.Bucket(bObjects).Bucket([]byte(kind))
		if b == nil {
			return nil
		}
		return b.ForEach(func(k, v []byte) error {
			out[string(k)] = bytes.Clone(v)
			return nil
		})
	})
	return out, err
}

// DeleteObject removes the document; ErrNotFound if absent.
func (s *Store) DeleteObject(ctx context.Context, kind, id string) error {
	return s.update(ctx, func(tx *bbolt.Tx) error {
		b := tx.Bucket(bObjects).Bucket([]byte(kind))
		if b == nil || b.Get([]byte(id)) == nil {
			return fmt.Errorf("delete object %s/%s: %w", kind, id, store.ErrNotFound)
		}
		return b.Delete([]byte(id))
	})
}

// ---- Sweeping

func (s *Store) sweepLoop(every time.Duration) {
	defer close(s.stopped)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			if n, err := s.Sweep(context.Background()); err != nil {
				s.log.Warn("sweep failed; will retry", "err", err)
			} else if n > 0 {
				s.log.Debug("swept expired records", "count", n)
			}
		}
	}
}

// Sweep deletes ledger keys past their expiry and verdicts older than the
// history retention, and returns how many records it deleted. Expired keys
// already read as absent; sweeping only reclaims space.
func (s *Store) Sweep(ctx context.Context) (int, error) {
	n := 0
	now := s.clk.Now()
	err := s.update(ctx, func(tx *bbolt.Tx) error {
		gc, ledger := tx.Bucket(bLedgerGC), tx.Bucket(bLedger)
		limit := timeKey(now)
		var keys [][]byte
		c := gc.Cursor()
		for k, _ := c.First(); k != nil && bytes.Compare(k[:8], limit) <= 0; k, _ = c.Next() {
			keys = append(keys, append([]byte(nil), k...))
		}
		for _, k := range keys {
			if err := gc.Delete(k); err != nil {
				return err
			}
			if err := ledger.Delete(k[8:]); err != nil {
				return err
			}
			n++
		}
		vb := tx.Bucket(bVerdicts)
		cutoff := now.Add(-s.history)
		keys = keys[:0]
		vc := vb.Cursor()
		for k, _ := vc.First(); k != nil; k, _ = vc.Next() {
			if len(k) >= 9 && keyTime(k[len(k)-8:]).Before(cutoff) {
				keys = append(keys, append([]byte(nil), k...))
			}
		}
		for _, k := range keys {
			if err := vb.Delete(k); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	return n, err
}
