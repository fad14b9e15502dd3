package queue

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/mcpmon/mcpmon/pkg/clock"
)

// Handler handles one message. nil acknowledges it (the delete is batched);
// an error leaves it in flight until its visibility expires, so it is
// redelivered with a higher receive count and, after MaxReceiveCount, moved
// to the dead-letter queue. A handler must tolerate a redelivery of a message
// it already acted on: the consumer may crash between effect and delete.
//
// As on SQS, later messages of a failing message's group that arrived in the
// same receive are received again with it, so each failed attempt counts
// against their MaxReceiveCount too: a message queued behind a poison
// message at the time of the first failure follows it to the DLQ.
type Handler func(ctx context.Context, m Message) error

// ConsumerOptions tune Consume.
type ConsumerOptions struct {
	// Max messages per receive, default MaxBatch (10).
	Max int
	// Wait is the long-poll wait, default MaxWait (20s); the embedded queue
	// wakes on send.
	Wait time.Duration
	// Visibility per receive; 0 uses the queue's default.
	Visibility time.Duration
	// Heartbeat extends visibility every Heartbeat while a message waits or
	// is handled (0: a third of Visibility or DefaultVisibility), never past
	// MaxVisibility from the receive.
	Heartbeat time.Duration
	// Concurrency is how many groups are handled in parallel, default 4.
	// Order is kept within a group: when a message fails, later messages of
	// its group in the same batch are not handled and are made visible
	// again.
	Concurrency int
	// DeleteDelay is how long an acknowledged message waits for nine others
	// before its batched delete is sent, default 50ms.
	DeleteDelay time.Duration
	// Transient says whether a handler error means a dependency is down
	// (a store outage) rather than that the message failed. Such a message
	// is retried in place with backoff (TransientBackoff doubling to
	// TransientMaxBackoff) while the
	// heartbeat keeps it in flight, so its receive count does not grow and
	// an outage longer than maxReceiveCount visibility timeouts cannot walk
	// it — and the messages queued behind it in its group — to the DLQ. The
	// dependency logs its own outage; the consumer only at debug.
	Transient func(error) bool
	// TransientBackoff is the first wait before a transient failure is
	// retried (default 1 s); it doubles up to TransientMaxBackoff.
	TransientBackoff time.Duration
	// TransientMaxBackoff caps that wait (default 5 s), so messages held
	// through an outage are handled within seconds of its end: the
	// aggregator waits that long before deciding windows after an outage.
	TransientMaxBackoff time.Duration
	// FinishReceive lets a receive already in flight when ctx ends return,
	// and releases what it got, instead of abandoning it. Set it for SQS: a
	// long poll cancelled on the client may still have received messages on
	// the server, and they would block their FIFO groups until their
	// visibility timeout. Shutdown then takes up to Wait longer.
	FinishReceive bool
	// Failures, when set, is told why a handler failed on a message
	// (FailureReason: scrubbed, truncated), so the reason is shown with the
	// message if it reaches the dead-letter queue (GET
	// /v1/dlq/{queue}/messages); if it is also a FailureForgetter it is
	// told when a redelivered message was handled after all.
	Failures FailureRecorder
	// Clock measures the 12-hour visibility cap. Default: real.
	Clock   clock.Clock
	Logger  *slog.Logger
	Metrics *ConsumerMetrics
}

// DefaultTransientMaxBackoff is ConsumerOptions.TransientMaxBackoff's default.
const DefaultTransientMaxBackoff = 5 * time.Second

// defaultVisibility stands in for the queue's default when computing a
// heartbeat extension with Visibility unset.
const defaultVisibility = DefaultVisibility

// Consume receives from q and runs h until ctx is done, then returns nil
// after acknowledging what was handled. Messages of one group are handled in
// order, different groups concurrently. Receive errors are logged and
// retried with backoff, except a missing or closed queue, which Consume
// returns.
func Consume(ctx context.Context, q Queue, h Handler, opts ConsumerOptions) error {
	if opts.Max <= 0 || opts.Max > MaxBatch {
		opts.Max = MaxBatch
	}
	if opts.Wait <= 0 {
		opts.Wait = MaxWait
	}
	ext := opts.Visibility
	if ext <= 0 {
		ext = defaultVisibility
	}
	if opts.Heartbeat <= 0 {
		opts.Heartbeat = ext / 3
	}
	if opts.Concurrency <= 0 {
		opts.Concurrency = 4
	}
	if opts.DeleteDelay <= 0 {
		opts.DeleteDelay = 50 * time.Millisecond
	}
	if opts.Clock == nil {
		opts.Clock = clock.Real{}
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	c := &consumer{
		q:      q,
		h:      h,
		opts:   opts,
		ext:    ext,
		logger: opts.Logger.With("component", "consumer", "queue", q.Name()),
		work:   make(chan func()),
		free:   make(chan struct{}, 1),
	}
	var workers sync.WaitGroup
	for range opts.Concurrency {
		workers.Go(c.work1)
	}
	// Deletes and visibility resets outlive ctx so handled work is
	// acknowledged on shutdown.
	ackCtx, stopAcks := context.WithCancel(context.WithoutCancel(ctx))
	c.del = newDeleter(ackCtx, q, opts.DeleteDelay, c.logger, opts.Metrics)
	defer func() {
		c.tasks.Wait()
		close(c.work)
		workers.Wait()
		c.del.close()
		stopAcks()
	}()

	failures := 0
	for {
		if ctx.Err() != nil {
			return nil
		}
		// Receive only with a free group slot, so messages do not sit
		// received while every worker is busy.
		for c.active() >= opts.Concurrency {
			select {
			case <-ctx.Done():
				return nil
			case <-c.free:
			}
		}
		// The 12-hour cap counts from the receive; taking the time before
		// the call keeps the last extension safely inside it.
		before := opts.Clock.Now()
		msgs, err := c.receive(ctx)
		if ctx.Err() != nil && len(msgs) > 0 {
			// Received while stopping: hand them straight back so their
			// groups are not blocked until the visibility timeout.
			c.release(msgs, newReceiptSet(msgs))
			return nil
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if errors.Is(err, ErrClosed) || errors.Is(err, ErrQueueNotFound) {
				return err
			}
			failures++
			d := backoff(100*time.Millisecond, 10*time.Second, failures)
			c.logger.Warn("receive failed", "err", err, "retry_in", d)
			t := time.NewTimer(d)
			select {
			case <-ctx.Done():
				t.Stop()
				return nil
			case <-t.C:
			}
			continue
		}
		failures = 0
		opts.Metrics.received(q.Name(), len(msgs))
		c.dispatch(ctx, msgs, before)
	}
}

// receive runs one receive. With FinishReceive it is not cut off when ctx
// ends but allowed to return (within Wait plus a margin), because a long poll
// abandoned on the client may still have received messages on the server.
func (c *consumer) receive(ctx context.Context) ([]Message, error) {
	in := ReceiveInput{Max: c.opts.Max, Wait: c.opts.Wait, Visibility: c.opts.Visibility}
	if !c.opts.FinishReceive {
		return c.q.Receive(ctx, in)
	}
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	stop := context.AfterFunc(ctx, func() {
		t := time.AfterFunc(c.opts.Wait+5*time.Second, cancel)
		context.AfterFunc(rctx, func() { t.Stop() })
	})
	defer stop()
	return c.q.Receive(rctx, in)
}

type consumer struct {
	q      Queue
	h      Handler
	opts   ConsumerOptions
	ext    time.Duration
	logger *slog.Logger
	del    *deleter

	// work hands a group's messages to one of Concurrency long-lived
	// workers (work1). A handler runs deep (HTTP, JSON, bbolt): on a
	// goroutine of its own per group its stack grew from the start size,
	// copied at each doubling, every message — 2.5 % of the pipeline's CPU
	// at 10,000 endpoints; a worker keeps its grown stack.
	work chan func()
	free chan struct{} // pinged when a group task ends
	mu   sync.Mutex
	n    int // group tasks started and not finished
	// outage is set while handlers fail with transient errors.
	outage bool
	tasks  sync.WaitGroup
}

func (c *consumer) active() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// dispatch splits a batch into its groups, in receive order, and starts one
// task per group. A task keeps every message of its group alive with the
// heartbeat from the start, so a message waiting behind its predecessor or
// for a slot does not expire.
func (c *consumer) dispatch(ctx context.Context, msgs []Message, receivedAt time.Time) {
	var order []string
	groups := map[string][]Message{}
	for _, m := range msgs {
		if _, ok := groups[m.GroupID]; !ok {
			order = append(order, m.GroupID)
		}
		groups[m.GroupID] = append(groups[m.GroupID], m)
	}
	for _, g := range order {
		c.mu.Lock()
		c.n++
		c.mu.Unlock()
		c.tasks.Add(1)
		go func(batch []Message) {
			defer func() {
				c.mu.Lock()
				c.n--
				c.mu.Unlock()
				select {
				case c.free <- struct{}{}:
				default:
				}
				c.tasks.Done()
			}()
			c.runGroup(ctx, batch, receivedAt)
		}(groups[g])
	}
}

func (c *consumer) runGroup(ctx context.Context, batch []Message, receivedAt time.Time) {
	hbCtx, stopHB := context.WithCancel(context.WithoutCancel(ctx))
	var hb sync.WaitGroup
	defer func() { stopHB(); hb.Wait() }()
	live := newReceiptSet(batch)
	hb.Go(func() { c.heartbeat(hbCtx, live, receivedAt) })

	done := make(chan struct{})
	select {
	case c.work <- func() { defer close(done); c.handleGroup(ctx, batch, live) }:
	case <-ctx.Done():
		c.release(batch, live)
		return
	}
	<-done
}

// work1 is one worker: it runs the groups handed to it until work closes.
func (c *consumer) work1() {
	for job := range c.work {
		job()
	}
}

// handleGroup handles one group's messages in order, on a worker; the
// first failure leaves it and releases the rest.
func (c *consumer) handleGroup(ctx context.Context, batch []Message, live *receiptSet) {
	for i, m := range batch {
		if ctx.Err() != nil {
			c.release(batch[i:], live)
			return
		}
		err := c.handle(ctx, m)
		live.drop(m.ReceiptHandle)
		if err != nil {
			// Left in flight: it comes back when its visibility expires,
			// which spaces out retries of a failing message.
			c.logger.Warn("handler failed; message will be redelivered",
				"group", m.GroupID, "message_id", m.ID, "receive_count", m.ReceiveCount, "err", err)
			c.recordFailure(m, err)
			c.release(batch[i+1:], live)
			return
		}
		c.del.add(m.ReceiptHandle)
		if m.ReceiveCount > 1 {
			c.forgetFailure(m)
		}
	}
}

// handle runs the handler on m, retrying in place while it fails with a
// transient error (see ConsumerOptions.Transient) and ctx lasts.
func (c *consumer) handle(ctx context.Context, m Message) error {
	wait := c.opts.TransientBackoff
	if wait <= 0 {
		wait = time.Second
	}
	for {
		err := c.h(ctx, m)
		if err == nil || c.opts.Transient == nil || !c.opts.Transient(err) {
			if err == nil {
				c.outageOver()
			}
			return err
		}
		c.outageBegun(err)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		wait = min(wait*2, cmp.Or(c.opts.TransientMaxBackoff, DefaultTransientMaxBackoff))
	}
}

func (c *consumer) outageBegun(err error) {
	c.mu.Lock()
	first := !c.outage
	c.outage = true
	c.mu.Unlock()
	if first {
		// Debug: the dependency (the store) logs its own outage once; a
		// line per layer would say the same thing three times.
		c.logger.Debug("a dependency is unavailable; holding messages in flight and retrying until it returns", "err", err)
	}
}

func (c *consumer) outageOver() {
	c.mu.Lock()
	was := c.outage
	c.outage = false
	c.mu.Unlock()
	if was {
		c.logger.Debug("dependency available again; processing resumed")
	}
}

// recordFailure keeps why m failed for an operator reading the DLQ. It
// runs on a context of its own: the reason of a handler cut off by
// shutdown is worth keeping too, and a failure to record it costs only the
// explanation.
func (c *consumer) recordFailure(m Message, err error) {
	if c.opts.Failures == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if rerr := c.opts.Failures.RecordFailure(ctx, c.q.Name(), m.ID, FailureReason(err)); rerr != nil {
		c.logger.Debug("could not record the failure reason", "message_id", m.ID, "err", rerr)
	}
}

// forgetFailure drops the reason an earlier receive of m may have recorded,
// where reasons are kept beside the messages (FailureForgetter): m was
// handled after all. Best effort, like recordFailure: a reason left behind
// only expires later.
func (c *consumer) forgetFailure(m Message) {
	f, ok := c.opts.Failures.(FailureForgetter)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := f.ForgetFailure(ctx, c.q.Name(), m.ID); err != nil {
		c.logger.Debug("could not forget the failure reason", "message_id", m.ID, "err", err)
	}
}

// release makes unhandled messages visible again at once, in order, so the
// group resumes with the earliest of them.
func (c *consumer) release(msgs []Message, live *receiptSet) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, m := range msgs {
		live.drop(m.ReceiptHandle)
		if err := c.q.ChangeVisibility(ctx, m.ReceiptHandle, 0); err != nil {
			c.logger.Debug("could not release message", "message_id", m.ID, "err", err)
		}
	}
}

// heartbeat extends the visibility of the still-live messages of a group
// every Heartbeat until ctx ends, never past MaxVisibility from the receive.
func (c *consumer) heartbeat(ctx context.Context, live *receiptSet, receivedAt time.Time) {
	t := time.NewTicker(c.opts.Heartbeat)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		left := receivedAt.Add(MaxVisibility).Sub(c.opts.Clock.Now())
		d := min(c.ext, left)
		if d <= 0 {
			c.logger.Warn("message handled for 12 hours: visibility can no longer be extended")
			return
		}
		for _, r := range live.list() {
			if err := c.q.ChangeVisibility(ctx, r, d); err != nil && ctx.Err() == nil {
				c.logger.Warn("visibility heartbeat failed; the message may be redelivered", "err", err)
			}
		}
	}
}

type receiptSet struct {
	mu sync.Mutex
	m  map[string]struct{}
	o  []string
}

func newReceiptSet(batch []Message) *receiptSet {
	s := &receiptSet{m: map[string]struct{}{}}
	for _, m := range batch {
		s.m[m.ReceiptHandle] = struct{}{}
		s.o = append(s.o, m.ReceiptHandle)
	}
	return s
}

func (s *receiptSet) drop(r string) {
	s.mu.Lock()
	delete(s.m, r)
	s.mu.Unlock()
}

func (s *receiptSet) list() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.m))
	for _, r := range s.o {
		if _, ok := s.m[r]; ok {
			out = append(out, r)
		}
	}
	return out
}

// deleter batches acknowledgements into Delete calls of up to MaxBatch
// receipts, sent when ten are pending or DeleteDelay after the first.
type deleter struct {
	q       Queue
	ctx     context.Context
	delay   time.Duration
	logger  *slog.Logger
	metrics *ConsumerMetrics

	in   chan string
	done chan struct{}
}

func newDeleter(ctx context.Context, q Queue, delay time.Duration, logger *slog.Logger, m *ConsumerMetrics) *deleter {
	d := &deleter{q: q, ctx: ctx, delay: delay, logger: logger, metrics: m, in: make(chan string, 2*MaxBatch), done: make(chan struct{})}
	go d.loop()
	return d
}

func (d *deleter) add(r string) { d.in <- r }

// close flushes and stops; no add may follow.
func (d *deleter) close() {
	close(d.in)
	<-d.done
}

func (d *deleter) loop() {
	defer close(d.done)
	var (
		pending []string
		timer   *time.Timer
		timerC  <-chan time.Time
	)
	flush := func() {
		if timer != nil {
			timer.Stop()
			timer, timerC = nil, nil
		}
		if len(pending) == 0 {
			return
		}
		ctx, cancel := context.WithTimeout(d.ctx, sendTimeout)
		err := d.q.Delete(ctx, pending...)
		cancel()
		if err != nil {
			// The messages come back after their visibility expires; the
			// handlers are idempotent, so this costs work, not correctness.
			d.logger.Warn("batched delete failed; messages will be redelivered", "messages", len(pending), "err", err)
		} else {
			d.metrics.deleted(d.q.Name(), len(pending))
		}
		pending = nil
	}
	for {
		select {
		case r, ok := <-d.in:
			if !ok {
				flush()
				return
			}
			pending = append(pending, r)
			if len(pending) >= MaxBatch {
				flush()
			} else if timer == nil {
				timer = time.NewTimer(d.delay)
				timerC = timer.C
			}
		case <-timerC:
			timer, timerC = nil, nil
			flush()
		}
	}
}
