// Package embedded is mcpmon's in-process FIFO queue broker with the
// semantics of Amazon SQS FIFO queues, so `mcpmon run` needs no AWS account
// and tests run the real pipeline in one process.
//
// Data enters through queue.Queue.Send on a Broker's queues and leaves through
// Receive/Delete; messages that exhaust their receives move to the stage's
// dead-letter queue (Broker.DLQ). It reproduces what mcpmon relies on: a
// five-minute deduplication window measured from acceptance on the injected
// clock that survives delete, a duplicate send that succeeds with the
// original message ID, content-based deduplication on SHA-256 of the body,
// per-group ordering with a group blocked while any of its messages is in
// flight, visibility timeouts with redelivery and an increasing receive
// count, redrive after MaxReceiveCount, and a queue or message-group
// deduplication scope.
//
// With a data directory every accepted message, dedup record, receive count
// and delete is written to a bbolt file (dir/queue.db, or the store's file
// given as Options.DB) before the call returns, so a crash loses nothing the
// broker acknowledged. Concurrent calls share one transaction (group commit,
// see commit.go), committed outside the broker's lock; in a shared file that
// transaction also carries the store's concurrent writes. The file is locked to one process, so a message in flight
// when the broker opens was held by a process that is gone: it is visible
// again at once, with its receive count kept, rather than blocking its group
// until its deadline. That is also why a visibility change is not written:
// a restart releases every in-flight message whatever its deadline.
// Time comes only from Options.Clock; long-poll waits use real timers
// bounded by the requested wait (with Options.PollInterval a long poll
// re-checks that often, so a test advancing a fake clock releases it).
package embedded

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	bolt "go.etcd.io/bbolt"

	"github.com/mcpmon/mcpmon/pkg/clock"
	"github.com/mcpmon/mcpmon/pkg/queue"
	"github.com/mcpmon/mcpmon/pkg/writehealth"
)

// FileName is the bbolt file the broker keeps in its data directory.
const FileName = "queue.db"

// maxIDLen is SQS's limit on group and deduplication IDs.
const maxIDLen = 128

// Options tune a Broker.
type Options struct {
	// Clock drives dedup windows, visibility and retention. Default: real.
	Clock clock.Clock
	// Logger receives redrive and recovery events. Default: discard.
	Logger *slog.Logger
	// PollInterval, when set, makes a waiting long poll re-check visibility
	// at least this often instead of sleeping until the next visibility
	// deadline by real time. Set it when Clock can jump (a test advancing
	// a fake clock); leave it zero with the real clock.
	PollInterval time.Duration
	// CommitInterval is the least time between the starts of two commits
	// to the data file: calls that arrive meanwhile wait and share the
	// next one; a call after a quiet spell is committed at once. Zero (the
	// default) commits whenever the previous commit is done, which already
	// groups every call that arrived during it. Each commit costs two
	// fdatasyncs whatever it carries, so an interval buys CPU with latency:
	// 25 ms took 5–17 % off the fleet load's CPU per probe (2,000 endpoints
	// every 10 s), but the aggregator publishes each verdict and waits, so
	// at 10,000 endpoints it decided fewer windows and the probe → verdict
	// delay tripled (12–14 s to 35–42 s). Worth it only where no caller
	// waits on the queue one message at a time. In the store's file (DB
	// with Batch, as `mcpmon run` opens it) leave it zero: the store's
	// group commit paces the shared commits, and only while writes are
	// concurrent (bolt.Options.CommitInterval).
	CommitInterval time.Duration
	// DB, when set, is an open bbolt file the broker keeps its buckets in
	// (all named "q/<queue>") beside another user's — the embedded store's
	// — instead of dir/queue.db. Its commits then go through DB.Batch, so
	// a commit of the broker's and the concurrent writes of the other user
	// share one transaction and one pair of fdatasyncs. Close leaves DB
	// open: its owner closes it. A dir/queue.db left from before is moved
	// into DB at Open and removed.
	DB *bolt.DB
	// Batch, with DB, commits the broker's writes in place of DB.Batch:
	// the owner's group commit (the embedded store's Store.BatchOf), so
	// the broker's commits share its transactions and its pacing. writers
	// is how many queue operations the commit carries.
	Batch func(writers int, fn func(*bolt.Tx) error) error
}

// Broker owns the stage queues and their dead-letter queues.
type Broker struct {
	clock  clock.Clock
	poll   time.Duration // Options.PollInterval
	logger *slog.Logger
	db     *bolt.DB // nil when in-memory
	// shared says db is Options.DB: commits use batch, Close leaves the
	// file open.
	shared bool
	// batch is Options.Batch, or DB.Batch.
	batch func(writers int, fn func(*bolt.Tx) error) error
	// perOp commits each call's writes in its own transaction under mu,
	// as the broker did before group commit; for benchmarks.
	perOp bool
	// interval is Options.CommitInterval.
	interval time.Duration
	// beforeCommit, when set (by tests), runs in each commit's
	// transaction before its writes; an error fails the commit.
	beforeCommit func(writes int) error

	// The committer: kick wakes it, stop ends it after a last commit,
	// loopDone tells Close it has.
	kick     chan struct{}
	stop     chan struct{}
	loopDone chan struct{}

	mu     sync.Mutex
	closed bool
	// health counts the failed commits of the broker's own file (nil in
	// memory or in a shared file, whose owner counts them).
	health *writehealth.Health
	// opened is the own file as it was opened: Check reports it deleted
	// or replaced under the process.
	opened os.FileInfo
	// failed is set when a commit failed and the file could not be read
	// back: every call fails with it.
	failed error
	queues map[string]*fifo
	done   chan struct{}
	open   *batch // the batch calls append their writes to
	last   *batch // the latest batch with a write, or nil
}

// fifo is one queue's state; every field is guarded by Broker.mu.
type fifo struct {
	cfg     queue.Config
	dlq     *fifo // nil when redrive is off
	nextSeq uint64
	msgs    []*message // by seq; deleted entries are nil until compaction
	live    int
	bySeq   map[uint64]*message
	// flight holds every message of msgs whose VisibleAt is after now
	// (in flight), and some whose VisibleAt has passed since, dropped by
	// the next receive: a receive finds the blocked groups without
	// walking every message.
	flight map[*message]struct{}
	dedup  map[string]dedupRecord
	dedupQ []dedupEntry // acceptance order, for expiry
	stale  []dedupEntry // expired dedup records still in the file
	wake   chan struct{}
}

type message struct {
	Seq          uint64    `json:"seq"`
	ID           string    `json:"id"`
	GroupID      string    `json:"group"`
	DedupID      string    `json:"dedup"`
	Body         []byte    `json:"body"`
	SentAt       time.Time `json:"sent"`
	ReceiveCount int       `json:"rc"`
	ReceivedAt   time.Time `json:"received,omitzero"`
	VisibleAt    time.Time `json:"visible,omitzero"`
	// Reason is the last failure a consumer recorded (RecordFailure).
	Reason string `json:"reason,omitempty"`
	// Receives is, in a dead-letter queue, the receive count the message
	// had at its source.
	Receives int `json:"receives,omitempty"`
	idx      int
}

type dedupRecord struct {
	ID string    `json:"id"`
	At time.Time `json:"at"`
}

type dedupEntry struct {
	key string
	at  time.Time
}

// Open starts a broker for cfgs, each with its dead-letter queue
// (queue.DLQConfig) when MaxReceiveCount > 0. dir == "" keeps everything in
// memory; otherwise state is loaded from and written to dir/queue.db.
func Open(dir string, cfgs []queue.Config, opts Options) (*Broker, error) {
	if opts.Clock == nil {
		opts.Clock = clock.Real{}
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	b := &Broker{
		interval: opts.CommitInterval,
		clock:    opts.Clock,
		poll:     opts.PollInterval,
		logger:   opts.Logger.With("component", "queue"),
		queues:   map[string]*fifo{},
		done:     make(chan struct{}),
	}
	for _, cfg := range cfgs {
		if cfg.Name == "" {
			return nil, errors.New("embedded queue: a queue config has no name")
		}
		if cfg.VisibilityTimeout <= 0 {
			cfg.VisibilityTimeout = 30 * time.Second
		}
		if cfg.DedupScope == "" {
			cfg.DedupScope = queue.DedupScopeQueue
		}
		q := newFIFO(cfg)
		b.queues[cfg.Name] = q
		if cfg.MaxReceiveCount > 0 {
			d := newFIFO(queue.DLQConfig(cfg))
			q.dlq = d
			b.queues[d.cfg.Name] = d
		}
	}
	path := filepath.Join(dir, FileName)
	switch {
	case opts.DB != nil:
		b.db, b.shared, b.batch = opts.DB, true, opts.Batch
		if b.batch == nil {
			b.batch = func(_ int, fn func(*bolt.Tx) error) error { return opts.DB.Batch(fn) }
		}
		path = opts.DB.Path()
		if dir != "" {
			if err := adoptFile(opts.DB, filepath.Join(dir, FileName), b.logger); err != nil {
				return nil, fmt.Errorf("embedded queue: move %s into %s: %w", filepath.Join(dir, FileName), path, err)
			}
		}
	case dir == "":
		return b, nil
	default:
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("embedded queue: create data dir %s: %w", dir, err)
		}
		db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: 5 * time.Second})
		if errors.Is(err, bolt.ErrTimeout) {
			return nil, fmt.Errorf("embedded queue: %s is locked by another process (is another mcpmon using this data dir?): %w", path, err)
		}
		if err != nil {
			return nil, fmt.Errorf("embedded queue: open %s: %w", path, err)
		}
		b.db = db
		if b.opened, err = os.Stat(path); err != nil {
			_ = db.Close()
			return nil, fmt.Errorf("embedded queue: %s: %w", path, err)
		}
		b.health = writehealth.New(writehealth.Options{What: "the queue's file " + path,
			Fix: "free space on its disk or check the disk", Now: opts.Clock.Now, Log: b.logger})
	}
	if err := b.load(); err != nil {
		if !b.shared {
			_ = b.db.Close()
		}
		return nil, fmt.Errorf("embedded queue: load %s: %w", path, err)
	}
	b.open = newBatch()
	b.kick = make(chan struct{}, 1)
	b.stop = make(chan struct{})
	b.loopDone = make(chan struct{})
	go b.commitLoop()
	return b, nil
}

func newFIFO(cfg queue.Config) *fifo {
	return &fifo{
		cfg:     cfg,
		nextSeq: 1,
		bySeq:   map[uint64]*message{},
		flight:  map[*message]struct{}{},
		dedup:   map[string]dedupRecord{},
		wake:    make(chan struct{}),
	}
}

// Close releases the data file. Calls on the broker's queues then fail with
// queue.ErrClosed and pending long polls return.
func (b *Broker) Close() error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil
	}
	b.closed = true
	close(b.done)
	b.mu.Unlock()
	if b.db == nil {
		return nil
	}
	// Calls that wrote before closed was set are waiting for their
	// batch: commit it, then release the file.
	close(b.stop)
	<-b.loopDone
	if b.shared {
		return nil
	}
	return b.db.Close()
}

// Check reports whether the broker's file takes writes (readiness): an
// error while a commit of its own file failed in the last
// writehealth.Hold, or for good once the file could not be read back
// after one.
func (b *Broker) Check() error {
	b.mu.Lock()
	failed := b.failed
	b.mu.Unlock()
	if failed != nil {
		return fmt.Errorf("the queue's file is unusable until mcpmon restarts: %w", failed)
	}
	if b.health == nil {
		return nil
	}
	if err := writehealth.StillNamed(b.opened, b.db.Path()); err != nil {
		return err
	}
	return b.health.Check()
}

// CommitFailures is how many commits of the broker's own file failed
// since it was opened: 0 in memory or in a shared file, whose owner
// counts them.
func (b *Broker) CommitFailures() uint64 {
	if b.health == nil {
		return 0
	}
	return b.health.Failures()
}

// Queue returns the named stage queue. An unknown name yields a queue whose
// calls fail with queue.ErrQueueNotFound.
func (b *Broker) Queue(name string) queue.Queue { return &handle{b: b, name: name} }

// DLQ returns the dead-letter queue of the named stage queue.
func (b *Broker) DLQ(name string) queue.Queue { return b.Queue(queue.DLQName(name)) }

// handle is the queue.Queue view of one fifo.
type handle struct {
	b    *Broker
	name string
}

var (
	_ queue.Queue       = (*handle)(nil)
	_ queue.StatsReader = (*handle)(nil)
)

func (h *handle) Name() string { return h.name }

// lookup returns the fifo with b.mu held; the caller unlocks.
func (h *handle) lookup() (*fifo, error) {
	h.b.mu.Lock()
	if h.b.closed {
		h.b.mu.Unlock()
		return nil, fmt.Errorf("embedded queue %s: %w", h.name, queue.ErrClosed)
	}
	if h.b.failed != nil {
		h.b.mu.Unlock()
		return nil, fmt.Errorf("embedded queue %s: %w", h.name, h.b.failed)
	}
	q, ok := h.b.queues[h.name]
	if !ok {
		h.b.mu.Unlock()
		return nil, fmt.Errorf("embedded queue %s: %w", h.name, queue.ErrQueueNotFound)
	}
	return q, nil
}

func (h *handle) Send(ctx context.Context, in []queue.SendInput) ([]queue.SendResult, error) {
	if len(in) == 0 {
		return nil, nil
	}
	if len(in) > queue.MaxBatch {
		return nil, fmt.Errorf("embedded queue %s: %d entries: %w", h.name, len(in), queue.ErrTooManyEntries)
	}
	total := 0
	for _, m := range in {
		total += len(m.Body)
	}
	if total > queue.MaxBatchBytes {
		return nil, fmt.Errorf("embedded queue %s: batch of %d bytes over %d: %w", h.name, total, queue.MaxBatchBytes, queue.ErrTooLarge)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	q, err := h.lookup()
	if err != nil {
		return nil, err
	}
	out, bt := h.b.send(q, in)
	h.b.mu.Unlock()
	if err := await(bt); err != nil {
		return nil, fmt.Errorf("embedded queue %s: persist send: %w", h.name, err)
	}
	return out, nil
}

// send accepts in with b.mu held and returns the batch to wait for before
// the results may be given out: the new messages' batch, or for a duplicate
// the one that may still hold the original.
func (b *Broker) send(q *fifo, in []queue.SendInput) ([]queue.SendResult, *batch) {
	now := b.clock.Now()
	q.expireDedup(now)

	out := make([]queue.SendResult, len(in))
	added := 0
	for i, m := range in {
		if err := validate(q.cfg, m); err != nil {
			out[i].Err = fmt.Errorf("embedded queue %s: entry %d: %w", q.cfg.Name, i, err)
			continue
		}
		dedupID := m.DedupID
		if dedupID == "" {
			sum := sha256.Sum256(m.Body)
			dedupID = hex.EncodeToString(sum[:])
		}
		key := q.dedupKey(m.GroupID, dedupID)
		if rec, ok := q.dedup[key]; ok && now.Sub(rec.At) < queue.DedupWindow {
			out[i] = queue.SendResult{MessageID: rec.ID, Duplicate: true}
			continue
		}
		msg := &message{
			Seq:     q.nextSeq,
			ID:      newID(),
			GroupID: m.GroupID,
			DedupID: dedupID,
			Body:    append([]byte(nil), m.Body...),
			SentAt:  now,
		}
		q.nextSeq++
		if added == 0 {
			// Expired records go with the first write that follows.
			for _, e := range q.stale {
				b.enqueue(write{queue: q.cfg.Name, sub: dedupTimeBucket, key: dedupFileKey(e.at, e.key)})
			}
			q.stale = q.stale[:0]
		}
		added++
		rec := dedupRecord{ID: msg.ID, At: now}
		q.dedup[key] = rec
		q.dedupQ = append(q.dedupQ, dedupEntry{key: key, at: now})
		b.putMsg(q, msg)
		if b.db != nil {
			b.enqueue(write{queue: q.cfg.Name, sub: dedupTimeBucket, key: dedupFileKey(now, key), val: []byte(msg.ID)})
		}
		q.append(msg)
		out[i].MessageID = msg.ID
	}
	if added > 0 {
		q.notify()
	}
	return out, b.barrier()
}

func validate(cfg queue.Config, m queue.SendInput) error {
	switch {
	case m.GroupID == "":
		return queue.ErrMissingGroupID
	case m.DedupID == "" && !cfg.ContentBasedDedup:
		return queue.ErrMissingDedupID
	case len(m.GroupID) > maxIDLen || len(m.DedupID) > maxIDLen:
		return fmt.Errorf("group or dedup ID over %d characters: %w", maxIDLen, queue.ErrInvalidMessage)
	case len(m.Body) == 0:
		return fmt.Errorf("empty body: %w", queue.ErrInvalidMessage)
	case len(m.Body) > queue.MaxBatchBytes:
		return fmt.Errorf("body of %d bytes over %d: %w", len(m.Body), queue.MaxBatchBytes, queue.ErrTooLarge)
	case !validBody(m.Body):
		return fmt.Errorf("body has characters outside the SQS allowed set: %w", queue.ErrInvalidMessage)
	}
	return nil
}

// validBody applies SQS's character rule: #x9 | #xA | #xD | #x20-#xD7FF |
// #xE000-#xFFFD | #x10000-#x10FFFF, in valid UTF-8.
func validBody(b []byte) bool {
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		if r == utf8.RuneError && n <= 1 {
			return false
		}
		switch {
		case r == 0x9, r == 0xA, r == 0xD:
		case r >= 0x20 && r <= 0xD7FF:
		case r >= 0xE000 && r <= 0xFFFD:
		case r >= 0x10000 && r <= 0x10FFFF:
		default:
			return false
		}
		b = b[n:]
	}
	return true
}

func (h *handle) Receive(ctx context.Context, in queue.ReceiveInput) ([]queue.Message, error) {
	n := min(max(in.Max, 1), queue.MaxBatch)
	wait := min(in.Wait, queue.MaxWait)
	var timer *time.Timer
	var deadline <-chan time.Time
	if wait > 0 {
		timer = time.NewTimer(wait)
		defer timer.Stop()
		deadline = timer.C
	}
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		q, err := h.lookup()
		if err != nil {
			return nil, err
		}
		msgs, next, bt := h.b.receive(q, n, in.Visibility)
		wake := q.wake
		h.b.mu.Unlock()
		if err := await(bt); err != nil {
			return nil, fmt.Errorf("embedded queue %s: persist receive: %w", h.name, err)
		}
		if len(msgs) > 0 || deadline == nil {
			return msgs, nil
		}
		// Sleep until a send/visibility change, the next visibility expiry
		// (real time, so a fake clock only shortens nothing), the wait's
		// end, or ctx.
		var expiry <-chan time.Time
		var t *time.Timer
		if h.b.poll > 0 {
			// The clock can jump at any moment (a test's Advance):
			// re-check often instead of trusting a real-time deadline.
			next = h.b.poll
		}
		if next > 0 {
			t = time.NewTimer(next)
			expiry = t.C
		}
		select {
		case <-ctx.Done():
			err = ctx.Err()
		case <-h.b.done:
			err = fmt.Errorf("embedded queue %s: %w", h.name, queue.ErrClosed)
		case <-deadline:
			deadline = nil // one last look, then return
		case <-wake:
		case <-expiry:
		}
		if t != nil {
			t.Stop()
		}
		if err != nil {
			return nil, err
		}
	}
}

// receive takes up to limit messages with b.mu held. It also applies
// retention and redrive. next is how long until the earliest in-flight
// message becomes visible (0 if none); bt is the batch to wait for before
// the messages are handed out.
//
// The raised receive count must be on disk before a message is handed out:
// a message whose handler crashes the process would otherwise come back
// after every restart with the same count and never reach
// MaxReceiveCount, the dead-letter queue or an operator. Its visibility
// deadline is written with it but matters little: a restart releases
// in-flight messages at once.
func (b *Broker) receive(q *fifo, limit int, visibility time.Duration) ([]queue.Message, time.Duration, *batch) {
	now := b.clock.Now()
	if visibility <= 0 {
		visibility = q.cfg.VisibilityTimeout
	}
	visibility = min(visibility, queue.MaxVisibility)

	// A group is blocked while any of its messages is in flight.
	blocked := map[string]bool{}
	var next time.Duration
	for m := range q.flight {
		if !m.VisibleAt.After(now) {
			delete(q.flight, m) // visible again
			continue
		}
		blocked[m.GroupID] = true
		if d := m.VisibleAt.Sub(now); next == 0 || d < next {
			next = d
		}
	}
	var taken, expired, redriven []*message
	for _, m := range q.msgs {
		if len(taken) == limit {
			break
		}
		if m == nil || blocked[m.GroupID] {
			continue
		}
		if q.cfg.Retention > 0 && now.Sub(m.SentAt) >= q.cfg.Retention {
			expired = append(expired, m)
			continue
		}
		if q.dlq != nil && q.cfg.MaxReceiveCount > 0 && m.ReceiveCount >= q.cfg.MaxReceiveCount {
			redriven = append(redriven, m)
			continue
		}
		taken = append(taken, m)
	}
	if len(taken)+len(expired)+len(redriven) == 0 {
		return nil, next, nil
	}
	for _, m := range expired {
		b.delMsg(q, m)
		q.remove(m)
		b.logger.Warn("message expired unconsumed", "queue", q.cfg.Name, "group", m.GroupID, "message_id", m.ID)
	}
	for _, m := range redriven {
		// SQS keeps the message ID, resets the receive count and the
		// enqueue time on a FIFO redrive.
		moved := &message{Seq: q.dlq.nextSeq, ID: m.ID, GroupID: m.GroupID, DedupID: m.DedupID, Body: m.Body, SentAt: now,
			Reason: m.Reason, Receives: m.ReceiveCount}
		q.dlq.nextSeq++
		b.delMsg(q, m)
		b.putMsg(q.dlq, moved)
		q.remove(m)
		q.dlq.append(moved)
		b.logger.Warn("message moved to dead-letter queue", "queue", q.cfg.Name, "dlq", q.dlq.cfg.Name,
			"group", m.GroupID, "message_id", m.ID, "receive_count", m.ReceiveCount)
	}
	if len(redriven) > 0 {
		q.dlq.notify()
	}
	out := make([]queue.Message, len(taken))
	for i, m := range taken {
		m.ReceiveCount++
		m.ReceivedAt, m.VisibleAt = now, now.Add(visibility)
		q.flight[m] = struct{}{}
		b.putMsg(q, m)
		out[i] = queue.Message{
			ID:            m.ID,
			ReceiptHandle: receipt(m),
			GroupID:       m.GroupID,
			DedupID:       m.DedupID,
			Body:          append([]byte(nil), m.Body...),
			ReceiveCount:  m.ReceiveCount,
			SentAt:        m.SentAt,
		}
	}
	return out, next, b.barrier()
}

// A receipt names one receive of one message: "<seq>.<receiveCount>". A
// later receive of the same message makes an earlier receipt stale.
func receipt(m *message) string { return fmt.Sprintf("%d.%d", m.Seq, m.ReceiveCount) }

func parseReceipt(r string) (seq uint64, rc int, ok bool) {
	a, c, found := strings.Cut(r, ".")
	if !found {
		return 0, 0, false
	}
	s, err1 := strconv.ParseUint(a, 10, 64)
	n, err2 := strconv.Atoi(c)
	return s, n, err1 == nil && err2 == nil
}

// Delete acknowledges messages. As on SQS, deleting a message that is
// already gone succeeds, and a stale receipt (the message was received again
// since) succeeds without deleting.
func (h *handle) Delete(ctx context.Context, receipts ...string) error {
	if len(receipts) == 0 {
		return nil
	}
	if len(receipts) > queue.MaxBatch {
		return fmt.Errorf("embedded queue %s: delete of %d: %w", h.name, len(receipts), queue.ErrTooManyEntries)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	type parsed struct {
		seq uint64
		rc  int
	}
	ps := make([]parsed, len(receipts))
	for i, r := range receipts {
		seq, rc, ok := parseReceipt(r)
		if !ok {
			return fmt.Errorf("embedded queue %s: receipt %q: %w", h.name, r, queue.ErrInvalidReceipt)
		}
		ps[i] = parsed{seq, rc}
	}
	q, err := h.lookup()
	if err != nil {
		return err
	}
	deleted := false
	for _, p := range ps {
		if m := q.bySeq[p.seq]; m != nil && m.ReceiveCount == p.rc {
			h.b.delMsg(q, m)
			q.remove(m)
			deleted = true
		}
	}
	if !deleted {
		h.b.mu.Unlock()
		return nil
	}
	q.notify()
	bt := h.b.barrier()
	h.b.mu.Unlock()
	if err := await(bt); err != nil {
		return fmt.Errorf("embedded queue %s: persist delete: %w", h.name, err)
	}
	return nil
}

// ChangeVisibility sets the remaining visibility of an in-flight message. It
// fails with queue.ErrInvalidReceipt when the receipt is stale or the message
// is no longer in flight, and with queue.ErrVisibilityCap past 12 hours from
// the receive. The new deadline is kept in memory only.
func (h *handle) ChangeVisibility(ctx context.Context, r string, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if d < 0 {
		d = 0
	}
	q, err := h.lookup()
	if err != nil {
		return err
	}
	defer h.b.mu.Unlock()
	seq, rc, ok := parseReceipt(r)
	if !ok {
		return fmt.Errorf("embedded queue %s: receipt %q: %w", h.name, r, queue.ErrInvalidReceipt)
	}
	now := h.b.clock.Now()
	m := q.bySeq[seq]
	if m == nil || m.ReceiveCount != rc || !m.VisibleAt.After(now) {
		return fmt.Errorf("embedded queue %s: receipt %q: message not in flight: %w", h.name, r, queue.ErrInvalidReceipt)
	}
	visible := now.Add(d)
	if visible.After(m.ReceivedAt.Add(queue.MaxVisibility)) {
		return fmt.Errorf("embedded queue %s: message %s: %w", h.name, m.ID, queue.ErrVisibilityCap)
	}
	// Not written: a restart releases in-flight messages whatever their
	// deadline (see load), so a heartbeat costs no transaction.
	m.VisibleAt = visible
	q.flight[m] = struct{}{}
	if d == 0 {
		q.notify()
	}
	return nil
}

// Stats reports the queue's depth.
func (h *handle) Stats(ctx context.Context) (queue.Stats, error) {
	if err := ctx.Err(); err != nil {
		return queue.Stats{}, err
	}
	q, err := h.lookup()
	if err != nil {
		return queue.Stats{}, err
	}
	defer h.b.mu.Unlock()
	now := h.b.clock.Now()
	var s queue.Stats
	for _, m := range q.msgs {
		if m == nil {
			continue
		}
		if m.VisibleAt.After(now) {
			s.InFlight++
		} else {
			s.Visible++
		}
		if age := now.Sub(m.SentAt); age > s.OldestMessageAge {
			s.OldestMessageAge = age
		}
	}
	return s, nil
}

func (q *fifo) dedupKey(group, dedupID string) string {
	if q.cfg.DedupScope == queue.DedupScopeMessageGroup {
		return group + "\x00" + dedupID
	}
	return dedupID
}

// expireDedup drops dedup records older than the window from memory; their
// stored copies are dropped with them, lazily, on the next write.
func (q *fifo) expireDedup(now time.Time) {
	i := 0
	for ; i < len(q.dedupQ); i++ {
		e := q.dedupQ[i]
		if now.Sub(e.at) < queue.DedupWindow {
			break
		}
		if rec, ok := q.dedup[e.key]; ok && rec.At.Equal(e.at) {
			delete(q.dedup, e.key)
			q.stale = append(q.stale, e)
		}
	}
	q.dedupQ = q.dedupQ[i:]
}

func (q *fifo) append(m *message) {
	m.idx = len(q.msgs)
	q.msgs = append(q.msgs, m)
	q.bySeq[m.Seq] = m
	q.live++
	if !m.VisibleAt.IsZero() { // in flight, or was: receive sorts it out
		q.flight[m] = struct{}{}
	}
}

func (q *fifo) remove(m *message) {
	if q.bySeq[m.Seq] != m {
		return
	}
	delete(q.bySeq, m.Seq)
	delete(q.flight, m)
	q.msgs[m.idx] = nil
	q.live--
	if len(q.msgs) > 64 && q.live < len(q.msgs)/2 {
		kept := q.msgs[:0]
		for _, x := range q.msgs {
			if x != nil {
				x.idx = len(kept)
				kept = append(kept, x)
			}
		}
		clear(q.msgs[len(kept):])
		q.msgs = kept
	}
}

// notify wakes every long poll waiting on q.
func (q *fifo) notify() {
	close(q.wake)
	q.wake = make(chan struct{})
}

func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

// Storage layout: one bucket per queue ("q/<name>") holding a "msgs" bucket
// (8-byte big-endian seq → message record) and a "dedupt" bucket (acceptance
// time + dedup key → message ID); record.go has the encodings. Dedup records
// are kept after delete, which is what makes the window survive a delete and
// a restart. "dedup" is the dedup bucket of files from before (dedup key →
// JSON record), moved into "dedupt" at open.
var (
	msgsBucket      = []byte("msgs")
	dedupTimeBucket = []byte("dedupt")
	dedupBucket     = []byte("dedup")
)

func bucketName(queueName string) []byte { return []byte("q/" + queueName) }

func seqKey(seq uint64) []byte {
	var k [8]byte
	binary.BigEndian.PutUint64(k[:], seq)
	return k[:]
}

// putMsg writes m's current state to q's stored messages, in the open
// batch. Called with b.mu held.
func (b *Broker) putMsg(q *fifo, m *message) {
	if b.db == nil {
		return
	}
	b.enqueue(write{queue: q.cfg.Name, sub: msgsBucket, key: seqKey(m.Seq), val: encodeMessage(m)})
}

// delMsg removes m from q's stored messages, in the open batch.
func (b *Broker) delMsg(q *fifo, m *message) {
	if b.db == nil {
		return
	}
	b.enqueue(write{queue: q.cfg.Name, sub: msgsBucket, key: seqKey(m.Seq)})
}

// load restores every configured queue from the file and prunes expired
// dedup records. A message in flight is released: whoever held it died
// with the process that last had the file.
func (b *Broker) load() error {
	return b.db.Update(func(tx *bolt.Tx) error {
		for name, q := range b.queues {
			if err := b.loadQueue(tx, name, q, nil); err != nil {
				return err
			}
		}
		return nil
	})
}

// reload replaces the in-memory state with the file's after a failed
// commit. Messages the file and memory agree were received the same number
// of times keep their in-memory visibility: their receivers are alive. Called
// with b.mu held.
func (b *Broker) reload() error {
	err := b.db.View(func(tx *bolt.Tx) error {
		for name, q := range b.queues {
			old := q.bySeq
			q.reset()
			if err := b.loadQueue(tx, name, q, old); err != nil {
				return err
			}
		}
		return nil
	})
	for _, q := range b.queues {
		q.notify()
	}
	return err
}

// reset empties q's state, keeping its configuration and waiters.
func (q *fifo) reset() {
	q.nextSeq, q.live = 1, 0
	q.msgs, q.dedupQ, q.stale = nil, nil, nil
	q.bySeq, q.dedup = map[uint64]*message{}, map[string]dedupRecord{}
	q.flight = map[*message]struct{}{}
}

// loadQueue reads queue name into q. With kept nil (at open) in-flight
// messages are released and expired dedup records deleted (tx is
// writable); otherwise in-flight state is taken from kept and expired
// records are left for the next send to delete.
func (b *Broker) loadQueue(tx *bolt.Tx, name string, q *fifo, kept map[uint64]*message) error {
	now := b.clock.Now()
	bk := tx.Bucket(bucketName(name))
	if bk == nil && tx.Writable() {
		var err error
		if bk, err = tx.CreateBucketIfNotExists(bucketName(name)); err != nil {
			return err
		}
	}
	if bk == nil {
		return nil
	}
	var mb, tb, db *bolt.Bucket
	if tx.Writable() {
		var err error
		if mb, err = bk.CreateBucketIfNotExists(msgsBucket); err != nil {
			return err
		}
		if tb, err = bk.CreateBucketIfNotExists(dedupTimeBucket); err != nil {
			return err
		}
	} else {
		mb, tb = bk.Bucket(msgsBucket), bk.Bucket(dedupTimeBucket)
	}
	db = bk.Bucket(dedupBucket) // a file from before
	inflight := 0
	if mb != nil {
		err := mb.ForEach(func(k, v []byte) error {
			m, err := decodeMessage(v)
			if err != nil {
				return fmt.Errorf("queue %s message %x: %w", name, k, err)
			}
			switch old := kept[m.Seq]; {
			case old != nil && old.ReceiveCount == m.ReceiveCount:
				m.ReceivedAt, m.VisibleAt = old.ReceivedAt, old.VisibleAt
			case m.VisibleAt.After(now):
				// The file is locked to one process, so whoever held
				// this message died with the last one (or, on a reload,
				// never got it): waiting out its visibility would only
				// block the group.
				m.VisibleAt = time.Time{}
				inflight++
			}
			q.append(&m)
			if m.Seq >= q.nextSeq {
				q.nextSeq = m.Seq + 1
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	// keep records a dedup record read from the file; stale collects the
	// expired ones of the time-ordered bucket.
	var stale []dedupEntry
	keep := func(key string, rec dedupRecord) {
		if now.Sub(rec.At) >= queue.DedupWindow {
			return
		}
		if old, ok := q.dedup[key]; ok && !rec.At.After(old.At) {
			return
		}
		q.dedup[key] = rec
		q.dedupQ = append(q.dedupQ, dedupEntry{key: key, at: rec.At})
	}
	if tb != nil {
		err := tb.ForEach(func(k, v []byte) error {
			at, key, ok := parseDedupFileKey(k)
			if !ok {
				return fmt.Errorf("queue %s dedup key %x: %w", name, k, errRecord)
			}
			if now.Sub(at) >= queue.DedupWindow {
				stale = append(stale, dedupEntry{key: key, at: at})
				return nil
			}
			keep(key, dedupRecord{ID: string(v), At: at})
			return nil
		})
		if err != nil {
			return err
		}
	}
	if db != nil {
		var moved []dedupEntry
		err := db.ForEach(func(k, v []byte) error {
			var rec dedupRecord
			if err := json.Unmarshal(v, &rec); err != nil {
				return fmt.Errorf("queue %s dedup %q: %w", name, k, err)
			}
			rec.At = rec.At.UTC()
			keep(string(k), rec)
			moved = append(moved, dedupEntry{key: string(k), at: rec.At})
			return nil
		})
		if err != nil {
			return err
		}
		if tx.Writable() {
			// Moved into the time-ordered bucket once, at open.
			for _, e := range moved {
				if rec, ok := q.dedup[e.key]; ok && rec.At.Equal(e.at) {
					if err := tb.Put(dedupFileKey(rec.At, e.key), []byte(rec.ID)); err != nil {
						return err
					}
				}
			}
			if err := bk.DeleteBucket(dedupBucket); err != nil {
				return err
			}
		}
	}
	for _, e := range stale {
		if !tx.Writable() {
			q.stale = append(q.stale, e)
			continue
		}
		if err := tb.Delete(dedupFileKey(e.at, e.key)); err != nil {
			return err
		}
	}
	sort.Slice(q.dedupQ, func(i, j int) bool { return q.dedupQ[i].at.Before(q.dedupQ[j].at) })
	if q.live > 0 && kept == nil {
		b.logger.Info("queue restored", "queue", name, "messages", q.live, "released_in_flight", inflight, "dedup_records", len(q.dedup))
	}
	return nil
}
