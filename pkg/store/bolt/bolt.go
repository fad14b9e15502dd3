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
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/bbolt"

	"github.com/mcpmon/mcpmon/pkg/clock"
	"github.com/mcpmon/mcpmon/pkg/jsonv"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/store"
	"github.com/mcpmon/mcpmon/pkg/writehealth"
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
	// AuditTTL is how long audit entries are kept (default
	// store.DefaultAuditTTL).
	AuditTTL time.Duration
	// SweepInterval is how often expired ledger keys and aged verdicts are
	// deleted in the background (default 10m; negative disables, Sweep can
	// still be called).
	SweepInterval time.Duration
	// LockTimeout bounds waiting for the file lock held by another process
	// (default 2s), so a second mcpmon on the same data dir fails fast.
	LockTimeout time.Duration
	// CommitInterval is the least time between the starts of two commits
	// of batched writes while writes are concurrent (the last commit
	// carried more than one writer, or one arrived while it ran): the
	// writes that arrive meanwhile share the next commit (commit.go). A
	// lone writer is never paused. Default DefaultCommitInterval (2 ms);
	// longer: fewer fdatasyncs for a longer wait on each durable step, see
	// there. Negative: no pause.
	CommitInterval time.Duration
	Logger         *slog.Logger
}

// Store is the bbolt-backed store.Store.
type Store struct {
	db      *bbolt.DB
	clk     clock.Clock
	ttl     time.Duration
	history time.Duration
	// trimSlack is how far past history an endpoint's oldest verdict may
	// get before its history is trimmed (trimHistory): history/historySlack.
	trimSlack time.Duration
	auditTTL  time.Duration
	log       *slog.Logger
	eps       *store.EndpointDecoder // endpoints.go's endpointAt
	// epGen counts the endpoint writes of this process (endpointWritten),
	// from 1: the file is locked to one process, so a record read at the
	// current generation is still the stored one (EndpointDecoder.Current).
	epGen atomic.Uint64
	// epWriting counts the endpoint writes under way: while one is, a
	// read neither uses nor feeds the decoder (endpointGen).
	epWriting atomic.Int64
	// commits runs the batched writes (batch, BatchOf): commit.go.
	commits *committer
	// health counts the commits that fail (health.go).
	health *writeHealth
	// opened is the file as it was opened: Ping reports it deleted or
	// replaced under the process.
	opened os.FileInfo
	// created is when the file was made (Created).
	created time.Time

	stop      chan struct{}
	stopped   chan struct{}
	closeOnce sync.Once
	closeErr  error
}

var _ store.Store = (*Store)(nil)

// Bucket names. Keys that combine an ID with a time put the ID first and an
// 8-byte big-endian time after a 0 byte, so a cursor walks one endpoint's
// records in time order — except the open windows' (results.go), which
// are time first.
var (
	bEndpoints   = []byte("endpoints")       // id → Endpoint
	bLatest      = []byte("latest")          // endpointID → ProbeResult
	bWinResults  = []byte("resultsByWindow") // window endpointID 0 len(region) region runID → ProbeResult
	bVerdicts    = []byte("verdicts")        // endpointID 0 window → Verdict; endpointID 0 0xfe → fold mark; endpointID 0 0xff → last Verdict
	bTrackers    = []byte("trackers")        // endpointID → Tracker
	bIncidents   = []byte("incidents")       // id → Incident
	bIncByOpened = []byte("incByOpened")     // openedWindow id → nil
	bIncByEP     = []byte("incByEP")         // endpointID 0 openedWindow id → nil
	bIncOpen     = []byte("incOpen")         // id → nil, while not resolved
	bOutboxes    = []byte("outboxes")        // endpointID → nil, while its tracker's Pending > 0
	bLedger      = []byte("ledger")          // key → ledgerRecord
	bLedgerGC    = []byte("ledgerGC")        // gcAt key → nil
	bObjects     = []byte("objects")         // kind → bucket(id → doc)
	bDeliveries  = []byte("deliveries")      // incidentID → bucket(kind:sink → Delivery)
	bEPStamps    = []byte("endpointStamps")  // shard (2 bytes) → writes to its endpoints (8 bytes), EndpointsStampsIn
	bMeta        = []byte("meta")            // "created" → Unix seconds (8 bytes), Created
	allBuckets   = [][]byte{bMeta, bEndpoints, bEPStamps, bLatest, bWinResults, bVerdicts, bRollups, bTrackers, bIncidents, bIncByOpened, bIncByEP, bIncOpen, bOutboxes, bLedger, bLedgerGC, bObjects, bDeliveries}
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
	if opts.AuditTTL <= 0 {
		opts.AuditTTL = store.DefaultAuditTTL
	}
	if opts.SweepInterval == 0 {
		opts.SweepInterval = 10 * time.Minute
	}
	if opts.LockTimeout <= 0 {
		opts.LockTimeout = 2 * time.Second
	}
	if opts.CommitInterval == 0 {
		opts.CommitInterval = DefaultCommitInterval
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
	var created time.Time
	err = db.Update(func(tx *bbolt.Tx) error {
		for _, b := range allBuckets {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		if err := migrateWindows(tx); err != nil { // results.go
			return err
		}
		if err := mergeLastVerdicts(tx); err != nil { // verdicts.go
			return err
		}
		if err := indexTenants(tx); err != nil { // endpoints.go
			return err
		}
		if err := indexIncidentTenants(tx); err != nil { // incidents.go
			return err
		}
		if err := indexObjects(tx); err != nil { // objects.go
			return err
		}
		created, err = markCreated(tx, opts.Clock.Now())
		return err
	})
	if err == nil {
		err = moveRollups(db, opts.Logger) // rollups.go
	}
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("bolt store: initialise %s: %w", path, err)
	}
	health := newWriteHealth(path, opts.Clock.Now, opts.Logger.With("component", "store", "backend", "bolt"))
	opened, err := os.Stat(path)
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("bolt store: %s: %w", path, err)
	}
	s := &Store{
		db:        db,
		health:    health,
		opened:    opened,
		created:   created,
		clk:       opts.Clock,
		ttl:       opts.LedgerTTL,
		history:   opts.VerdictHistory,
		trimSlack: opts.VerdictHistory / historySlack,
		auditTTL:  opts.AuditTTL,
		log:       opts.Logger.With("component", "store", "backend", "bolt"),
		eps:       store.NewEndpointDecoder(),
		commits:   newCommitter(db, opts.CommitInterval, health),
		stop:      make(chan struct{}),
		stopped:   make(chan struct{}),
	}
	s.epGen.Store(1)
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

// DB is the store's open file, for a component that keeps its own buckets
// in it so its commits and the store's share transactions (the embedded
// queue: embedded.Options.DB). Its buckets must not be named as the
// store's. The store owns the file: Close closes it, so close the other
// component first.
func (s *Store) DB() *bbolt.DB { return s.db }

// Ping reports whether the file is open, still has its name and its
// writes succeed: an error while a commit failed in the last
// writehealth.Hold (health.go).
func (s *Store) Ping(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := s.db.View(func(*bbolt.Tx) error { return nil }); err != nil {
		return err
	}
	if err := writehealth.StillNamed(s.opened, s.db.Path()); err != nil {
		return err
	}
	return s.health.Check()
}

// CommitFailures is how many of the file's commits failed since it was
// opened (mcpmon_store_commit_failures_total).
func (s *Store) CommitFailures() uint64 { return s.health.Failures() }

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
	return s.health.update(s.db, fn)
}

// batch is update for the writes every probe makes (latest result, window
// result, verdict, tracker, catalog and server objects): concurrent
// callers share one transaction and one pair of fsyncs (the group commit
// of commit.go), and each returns only after that commit, so the
// durability of each write is the same as update's. fn may run more than
// once — alone after another write of the batch failed — so it must derive
// everything it reports from tx.
//
// An error fn returns fails the whole shared transaction: it is rolled
// back, every other function of the batch runs again in a new one, and
// then fn alone in a transaction (and commit) of its own. A write that is
// refused as a matter of course (a result for a decided window, a tracker
// saved over a newer version) returns refuse(err) instead, before it has
// written anything: the batch commits without it and the caller gets err.
func (s *Store) batch(ctx context.Context, fn func(*bbolt.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	var refused error
	err := s.commits.Batch(func(tx *bbolt.Tx) error {
		refused = nil
		err := fn(tx)
		if r, ok := err.(refusal); ok {
			refused = r.err
			return nil
		}
		return err
	})
	if err != nil {
		return err
	}
	return refused
}

// BatchOf runs fn in a write transaction shared with the store's
// concurrent batched writes and returns once it is committed; for another
// user of the file (DB), such as the embedded queue
// (embedded.Options.Batch). fn carries the writes of writers writers (the
// queue's commit of its callers' operations), so the group commit paces
// the commits after it as it does after concurrent writes. fn may run more
// than once, alone after another function of its batch failed, as with
// bbolt's DB.Batch.
func (s *Store) BatchOf(writers int, fn func(*bbolt.Tx) error) error {
	return s.commits.BatchOf(writers, fn)
}

// refusal is an error a batch function returns through refuse.
type refusal struct{ err error }

func (r refusal) Error() string { return r.err.Error() }

// refuse marks err as the refusal of a batched write that wrote nothing
// (see batch): its batch commits the other writes as if it had not run.
func refuse(err error) error { return refusal{err} }

// ---- transactions, keys and encoding

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
	if err := jsonv.Unmarshal(raw, &v); err != nil {
		return v, false, fmt.Errorf("decode record %q: %w", key, err)
	}
	return v, true, nil
}

// getOne reads one record in a read transaction of its own; what names it
// in the error when it is absent (ErrNotFound).
func getOne[T any](ctx context.Context, s *Store, bucket []byte, key, what string) (T, error) {
	var v T
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		var ok bool
		var err error
		v, ok, err = get[T](tx.Bucket(bucket), []byte(key))
		if err == nil && !ok {
			err = fmt.Errorf("%s: %w", what, model.ErrNotFound)
		}
		return err
	})
	return v, err
}

func put(b *bbolt.Bucket, key []byte, v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode %q: %w", key, err)
	}
	return b.Put(key, raw)
}

// deleteRange deletes id's time-keyed records before `before` and returns
// how many it deleted.
func deleteRange(b *bbolt.Bucket, id string, before time.Time) (int, error) {
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
			return 0, err
		}
	}
	return len(keys), nil
}
