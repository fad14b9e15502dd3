package queue

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"
)

// PublisherOptions tune a Publisher.
type PublisherOptions struct {
	// FlushDelay is how long the first message of a batch waits for
	// company before the batch is sent; it bounds the latency batching adds
	// when traffic is low. Default 10ms.
	FlushDelay time.Duration
	// MaxInFlight is how many batch sends may run at once. Default 4.
	MaxInFlight int
	// BackoffMin and BackoffMax bound the jittered exponential wait before
	// a failed entry is retried. Defaults 100ms and 5s.
	BackoffMin, BackoffMax time.Duration
	Logger                 *slog.Logger
	Metrics                *PublisherMetrics
}

// sendTimeout bounds one batch send so a hung connection turns into a retry.
const sendTimeout = 30 * time.Second

// Publisher batches sends from many goroutines into Send calls of at most
// MaxBatch entries and MaxBatchBytes, which is what makes SQS cheap: one
// SendMessageBatch request per ten messages instead of ten SendMessage
// requests. An entry that fails with a transient error (throttling, 5xx, a
// broken connection) is retried alone, with the same group and dedup ID, so
// the queue's dedup window collapses a retry of a send that had in fact
// succeeded.
type Publisher struct {
	q      Queue
	opts   PublisherOptions
	logger *slog.Logger

	reqs    chan *pubReq
	retries chan *pubReq
	closing chan struct{}
	stop    chan struct{}
	loopEnd chan struct{}

	mu          sync.Mutex
	closed      bool
	outstanding sync.WaitGroup
	closeOnce   sync.Once
}

type pubReq struct {
	ctx     context.Context
	in      SendInput
	res     chan pubRes
	attempt int

	mu      sync.Mutex
	lastErr error // the latest transient failure, for the caller's error
}

func (r *pubReq) setErr(err error) {
	r.mu.Lock()
	r.lastErr = err
	r.mu.Unlock()
}

// ctxErr is the error Publish returns when its context ends first.
func (r *pubReq) ctxErr() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.lastErr != nil {
		return fmt.Errorf("%w (last send error: %w)", r.ctx.Err(), r.lastErr)
	}
	return r.ctx.Err()
}

type pubRes struct {
	id  string
	err error
}

// NewPublisher starts a publisher on q. Close it to flush.
func NewPublisher(q Queue, opts PublisherOptions) *Publisher {
	if opts.FlushDelay <= 0 {
		opts.FlushDelay = 10 * time.Millisecond
	}
	if opts.MaxInFlight <= 0 {
		opts.MaxInFlight = 4
	}
	if opts.BackoffMin <= 0 {
		opts.BackoffMin = 100 * time.Millisecond
	}
	if opts.BackoffMax < opts.BackoffMin {
		opts.BackoffMax = max(5*time.Second, opts.BackoffMin)
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	p := &Publisher{
		q:       q,
		opts:    opts,
		logger:  opts.Logger.With("component", "publisher", "queue", q.Name()),
		reqs:    make(chan *pubReq),
		retries: make(chan *pubReq),
		closing: make(chan struct{}),
		stop:    make(chan struct{}),
		loopEnd: make(chan struct{}),
	}
	go p.loop()
	return p
}

// Publish sends in as part of a batch and blocks until the queue accepted it
// (returning its message ID, the original one for a duplicate), a permanent
// error, or ctx ends. Transient failures are retried until ctx ends. When ctx
// ends first the message may still be sent.
func (p *Publisher) Publish(ctx context.Context, in SendInput) (string, error) {
	if len(in.Body) > MaxBatchBytes {
		return "", fmt.Errorf("publish to %s: body of %d bytes: %w", p.q.Name(), len(in.Body), ErrTooLarge)
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return "", fmt.Errorf("publish to %s: publisher closed: %w", p.q.Name(), ErrClosed)
	}
	p.outstanding.Add(1)
	p.mu.Unlock()

	r := &pubReq{ctx: ctx, in: in, res: make(chan pubRes, 1)}
	select {
	case p.reqs <- r:
	case <-ctx.Done():
		p.outstanding.Done()
		return "", ctx.Err()
	}
	select {
	case res := <-r.res:
		return res.id, res.err
	case <-ctx.Done():
		select {
		case res := <-r.res:
			return res.id, res.err
		default:
		}
		return "", fmt.Errorf("publish to %s: %w", p.q.Name(), r.ctxErr())
	}
}

// Close sends what is pending, waits for every Publish in progress to
// finish (an entry that fails now is not retried again) and stops.
func (p *Publisher) Close() error {
	p.closeOnce.Do(func() {
		p.mu.Lock()
		p.closed = true
		p.mu.Unlock()
		close(p.closing)
		p.outstanding.Wait()
		close(p.stop)
		<-p.loopEnd
	})
	return nil
}

func (p *Publisher) reply(r *pubReq, id string, err error) {
	r.res <- pubRes{id: id, err: err}
	p.outstanding.Done()
}

func (p *Publisher) loop() {
	defer close(p.loopEnd)
	var (
		pending []*pubReq
		bytes   int
		timer   *time.Timer
		timerC  <-chan time.Time
		sem     = make(chan struct{}, p.opts.MaxInFlight)
		senders sync.WaitGroup
		closing = p.closing
	)
	defer senders.Wait()
	flush := func() {
		if timer != nil {
			timer.Stop()
			timer, timerC = nil, nil
		}
		batch := pending[:0:0]
		for _, r := range pending {
			if err := r.ctx.Err(); err != nil {
				p.reply(r, "", err)
				continue
			}
			batch = append(batch, r)
		}
		pending, bytes = nil, 0
		if len(batch) == 0 {
			return
		}
		sem <- struct{}{}
		senders.Add(1)
		go func() {
			defer func() { <-sem; senders.Done() }()
			p.send(batch)
		}()
	}
	add := func(r *pubReq) {
		if bytes+len(r.in.Body) > MaxBatchBytes {
			flush()
		}
		pending = append(pending, r)
		bytes += len(r.in.Body)
		if len(pending) >= MaxBatch || closing == nil {
			flush()
			return
		}
		if timer == nil {
			timer = time.NewTimer(p.opts.FlushDelay)
			timerC = timer.C
		}
	}
	for {
		select {
		case r := <-p.reqs:
			add(r)
		case r := <-p.retries:
			add(r)
		case <-timerC:
			timer, timerC = nil, nil
			flush()
		case <-closing:
			closing = nil // from now on every entry is sent at once
			flush()
		case <-p.stop:
			flush()
			return
		}
	}
}

func (p *Publisher) send(batch []*pubReq) {
	in := make([]SendInput, len(batch))
	for i, r := range batch {
		in[i] = r.in
	}
	ctx, cancel := context.WithTimeout(context.Background(), sendTimeout)
	defer cancel()
	res, err := p.q.Send(ctx, in)
	if err == nil && len(res) != len(batch) {
		err = fmt.Errorf("send to %s: %d results for %d entries", p.q.Name(), len(res), len(batch))
	}
	if err != nil {
		p.logger.Warn("batch send failed", "entries", len(batch), "err", err)
		for _, r := range batch {
			p.retryOrFail(r, err)
		}
		return
	}
	// Counted before any caller is answered: a caller that reads the
	// metrics once Publish returned finds its send in them.
	sent, dups := 0, 0
	for i := range batch {
		if res[i].Err == nil {
			sent++
			if res[i].Duplicate {
				dups++
			}
		}
	}
	p.opts.Metrics.sent(p.q.Name(), sent, dups)
	for i, r := range batch {
		if res[i].Err != nil {
			p.retryOrFail(r, res[i].Err)
			continue
		}
		p.reply(r, res[i].MessageID, nil)
	}
}

// Permanent reports whether err will not go away on retry: a malformed
// message, a missing queue, a closed queue or an ended context.
func Permanent(err error) bool {
	for _, target := range []error{
		ErrMissingDedupID, ErrMissingGroupID, ErrTooLarge, ErrTooManyEntries, ErrInvalidMessage,
		ErrQueueNotFound, ErrClosed, context.Canceled, context.DeadlineExceeded,
	} {
		if errors.Is(err, target) {
			return true
		}
	}
	return false
}

func (p *Publisher) retryOrFail(r *pubReq, err error) {
	if Permanent(err) {
		p.reply(r, "", err)
		return
	}
	if cerr := r.ctx.Err(); cerr != nil {
		p.reply(r, "", fmt.Errorf("%w (last send error: %w)", cerr, err))
		return
	}
	select {
	case <-p.closing:
		p.reply(r, "", fmt.Errorf("publisher for %s closed before a retry: %w", p.q.Name(), err))
		return
	default:
	}
	r.setErr(err)
	r.attempt++
	d := backoff(p.opts.BackoffMin, p.opts.BackoffMax, r.attempt)
	p.logger.Debug("retrying send", "group", r.in.GroupID, "dedup_id", r.in.DedupID, "attempt", r.attempt, "in", d, "err", err)
	go func() {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-r.ctx.Done():
			p.reply(r, "", fmt.Errorf("%w (last send error: %w)", r.ctx.Err(), err))
			return
		case <-p.closing:
			p.reply(r, "", fmt.Errorf("publisher for %s closed before a retry: %w", p.q.Name(), err))
			return
		}
		select {
		case p.retries <- r:
		case <-p.closing:
			p.reply(r, "", fmt.Errorf("publisher for %s closed before a retry: %w", p.q.Name(), err))
		}
	}()
}

// backoff returns a jittered exponential delay for attempt n ≥ 1: uniformly
// in [d/2, d] where d = lo·2^(n-1) capped at hi.
func backoff(lo, hi time.Duration, n int) time.Duration {
	d := lo
	for i := 1; i < n && d < hi; i++ {
		d *= 2
	}
	d = min(d, hi)
	return d/2 + rand.N(d/2+1)
}
