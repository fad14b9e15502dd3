// Package queue defines the FIFO queue mcpmon's roles talk through, with the
// semantics of Amazon SQS FIFO queues: per-group ordering, a group blocked
// while its earlier message is in flight, a five-minute send-deduplication
// window, visibility timeouts with redelivery, receive counts and redrive to a
// dead-letter queue.
//
// Two implementations satisfy Queue: the embedded in-process queue
// (pkg/queue/embedded, persisted in the data dir) and the SQS adapter
// (pkg/queue/sqs). The conformance suite in pkg/queue/queuetest runs against
// both. Send deduplication is only the send half of idempotency; consumers
// must still tolerate a message received twice (see pkg/store's ledger).
package queue

import (
	"context"
	"errors"
	"time"
)

// Limits shared with SQS.
const (
	// DedupWindow is SQS's fixed deduplication interval.
	DedupWindow = 5 * time.Minute
	// MaxBatch is the most entries one send, receive or delete call carries.
	MaxBatch = 10
	// MaxBatchBytes is the most payload one batch send carries.
	MaxBatchBytes = 256 * 1024
	// MaxVisibility is SQS's cap on total visibility from the first receive.
	MaxVisibility = 12 * time.Hour
	// MaxWait is the longest long-poll wait.
	MaxWait = 20 * time.Second
)

// Sentinel errors. Implementations wrap them with the queue's name.
var (
	// ErrMissingDedupID: a send without a dedup ID to a queue without
	// content-based deduplication.
	ErrMissingDedupID = errors.New("message deduplication ID required: the queue does not use content-based deduplication")
	// ErrMissingGroupID: a send without a message group ID.
	ErrMissingGroupID = errors.New("message group ID required on a FIFO queue")
	// ErrQueueNotFound: the queue does not exist (run `mcpmon queues ensure`).
	ErrQueueNotFound = errors.New("queue not found: run `mcpmon queues ensure` to create the queues")
	// ErrInvalidReceipt: a receipt handle that is unknown or expired.
	ErrInvalidReceipt = errors.New("receipt handle invalid or expired")
	// ErrTooLarge: a message or batch over the size limit.
	ErrTooLarge = errors.New("message too large")
	// ErrClosed: the queue was closed.
	ErrClosed = errors.New("queue closed")
	// ErrTooManyEntries: a batch of more than MaxBatch entries.
	ErrTooManyEntries = errors.New("too many entries in one batch (max 10)")
	// ErrInvalidMessage: a body with characters SQS refuses, an empty body,
	// or a group/dedup ID over 128 characters.
	ErrInvalidMessage = errors.New("invalid message contents")
	// ErrVisibilityCap: a visibility change past MaxVisibility from the
	// receive.
	ErrVisibilityCap = errors.New("visibility timeout would exceed the 12-hour cap")
)

// DedupScope says where deduplication IDs are unique.
type DedupScope string

const (
	DedupScopeQueue        DedupScope = "queue"
	DedupScopeMessageGroup DedupScope = "messageGroup" // high-throughput FIFO
)

// Config describes one FIFO queue. The same values drive the embedded queue
// and `mcpmon queues ensure`.
type Config struct {
	// Name without the .fifo suffix, e.g. "commands".
	Name string
	// ContentBasedDedup derives the dedup ID from SHA-256 of the body when a
	// send carries none.
	ContentBasedDedup bool
	// DedupScope is queue (default) or messageGroup.
	DedupScope DedupScope
	// VisibilityTimeout is the default visibility after a receive.
	VisibilityTimeout time.Duration
	// MaxReceiveCount moves a message to the DLQ once it has been received
	// this many times and is received again; 0 disables redrive.
	MaxReceiveCount int
	// Retention is how long an unconsumed message is kept.
	Retention time.Duration
}

// SendInput is one message to send.
type SendInput struct {
	GroupID string
	// DedupID may be empty on a content-based-dedup queue.
	DedupID string
	Body    []byte
}

// SendResult is the outcome of one entry of a batch send. A duplicate send
// succeeds and returns the original message's ID, as SQS does.
type SendResult struct {
	MessageID string
	Err       error
	// Duplicate is true when the queue recognised the send as a duplicate
	// within the dedup window. Only the embedded queue can tell; SQS answers
	// a duplicate exactly like a first send, so the SQS adapter leaves it
	// false.
	Duplicate bool
}

// ReceiveInput tunes one receive.
type ReceiveInput struct {
	// Max messages, 1..MaxBatch.
	Max int
	// Wait is the long-poll wait when nothing is visible (0 returns at once).
	Wait time.Duration
	// Visibility overrides the queue's visibility timeout when > 0.
	Visibility time.Duration
}

// Message is a received message.
type Message struct {
	ID            string
	ReceiptHandle string
	GroupID       string
	DedupID       string
	Body          []byte
	// Value is the sender's value itself, for a message handed over in
	// the process (Handoff.PublishValue): Body is then empty, and the
	// handler takes Value instead of decoding a copy. The sender may still
	// hold it: read it, do not change it. Nil for a message from a queue.
	Value any
	// ReceiveCount counts receives including this one.
	ReceiveCount int
	// SentAt is when the queue accepted the message.
	SentAt time.Time
}

// Queue is one FIFO queue.
type Queue interface {
	// Name is the queue's configured name.
	Name() string
	// Send sends up to MaxBatch messages. The returned slice has one result
	// per input, in order; err is non-nil only when the call as a whole failed.
	Send(ctx context.Context, msgs []SendInput) ([]SendResult, error)
	// Receive returns up to in.Max visible messages, honouring group order.
	Receive(ctx context.Context, in ReceiveInput) ([]Message, error)
	// Delete acknowledges messages by receipt handle.
	Delete(ctx context.Context, receiptHandles ...string) error
	// ChangeVisibility sets a received message's remaining visibility.
	ChangeVisibility(ctx context.Context, receiptHandle string, d time.Duration) error
}

// Stats is a queue's approximate depth, for metrics and autoscaling.
type Stats struct {
	Visible          int
	InFlight         int
	OldestMessageAge time.Duration
}

// StatsReader is implemented by queues that can report their depth.
type StatsReader interface {
	Stats(ctx context.Context) (Stats, error)
}
