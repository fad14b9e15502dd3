package queue

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// ErrMessageNotFound: no dead letter has the given message ID.
var ErrMessageNotFound = errors.New("message not found in the dead-letter queue")

// MaxReasonLen bounds a recorded failure reason, so a handler that fails
// with a huge error cannot bloat the queue's records.
const MaxReasonLen = 512

// MaxMaxReceiveCount is SQS's upper bound on a redrive policy's
// maxReceiveCount.
const MaxMaxReceiveCount = 1000

// WithMaxReceiveCount returns cfgs with every redriving queue's
// MaxReceiveCount set to n (n <= 0 leaves them as they are). Queues without
// redrive keep none: the option tunes the threshold, it does not add DLQs.
func WithMaxReceiveCount(cfgs []Config, n int) []Config {
	out := slices.Clone(cfgs)
	for i := range out {
		if n > 0 && out[i].MaxReceiveCount > 0 {
			out[i].MaxReceiveCount = n
		}
	}
	return out
}

// DeadLetter is a message in a dead-letter queue as an operator sees it.
type DeadLetter struct {
	ID      string
	GroupID string
	// DedupID is the dedup ID the message carries in the DLQ. SQS replaces
	// a FIFO message's dedup ID with its original message ID when it moves
	// it to the DLQ; the embedded queue keeps the original.
	DedupID string
	Body    []byte
	// SentAt is when the message entered the dead-letter queue.
	SentAt time.Time
	// ReceiveCount is how often the message was received: at its source
	// before it was dead-lettered on the embedded queue, SQS's
	// ApproximateReceiveCount on SQS.
	ReceiveCount int
	// Reason is the last failure a consumer recorded for the message ("" when
	// none was recorded): kept on the message by the embedded broker, in
	// the store by a FailureBook on SQS (see deadletter_reasons.go).
	Reason string
}

// RedriveResult is what a redrive did.
type RedriveResult struct {
	// Moved counts the messages returned to the source queue (0 while a
	// native SQS move task runs: Task names it).
	Moved int
	// Missing lists requested IDs that are not in the dead-letter queue.
	Missing []string
	// Task is the handle of SQS's asynchronous message move task, when the
	// native StartMessageMoveTask did the move.
	Task string
}

// Redrive states RedriveStatus adds to SQS's (RUNNING, COMPLETED,
// CANCELLING, CANCELLED, FAILED).
const (
	// RedriveNone: the server keeps no move task for the queue.
	RedriveNone = "none"
	// RedriveUnsupported: the server has no message move tasks (a local
	// emulator); redrives there are receive and resend, done when they
	// return.
	RedriveUnsupported = "unsupported"
)

// RedriveStatus is the state of a dead-letter queue's latest asynchronous
// redrive (SQS's message move task).
type RedriveStatus struct {
	// Status is SQS's task status, RedriveNone or RedriveUnsupported.
	Status string
	// Task is the task handle (SQS gives it only for a running task).
	Task string
	// Moved counts the messages moved so far; ToMove the messages the
	// task set out to move (0 when the server does not say).
	Moved, ToMove int64
	StartedAt     time.Time
	// Failure is why a FAILED task failed.
	Failure string
}

// RedriveStatusReader is implemented by dead-letter queues whose redrive
// runs asynchronously on the server (sqs.DeadLetters). The embedded
// broker's redrive is done when Redrive returns, so it has none.
type RedriveStatusReader interface {
	RedriveStatus(ctx context.Context) (RedriveStatus, error)
}

// DeadLetterQueue is the operator's handle on one stage's dead-letter
// queue. The embedded broker (embedded.Broker.DeadLetters) and the SQS
// adapter (sqs.DeadLetters) implement it; queuetest checks both.
type DeadLetterQueue interface {
	// Stats is the dead-letter queue's depth (OldestMessageAge 0 where the
	// backend cannot tell).
	Stats(ctx context.Context) (Stats, error)
	// Peek returns up to max dead letters, oldest first, leaving them in
	// the queue.
	Peek(ctx context.Context, max int) ([]DeadLetter, error)
	// Redrive returns the dead letters with the given IDs (all when ids is
	// empty) to the stage queue with their group IDs, where the consumer
	// receives them again even within the dedup window of their first
	// send. Unknown IDs are listed in the result, not an error.
	Redrive(ctx context.Context, ids []string) (RedriveResult, error)
	// Purge deletes every dead letter and returns (approximately) how
	// many there were.
	Purge(ctx context.Context) (int, error)
}

// FailureRecorder keeps the last reason a handler failed on a message, so
// an operator peeking at the dead-letter queue sees why it is there.
// The embedded broker implements it on its messages, FailureBook in the
// store for SQS.
type FailureRecorder interface {
	RecordFailure(ctx context.Context, queueName, messageID, reason string) error
}

// TruncateReason cuts reason to MaxReasonLen bytes on a rune boundary.
func TruncateReason(reason string) string {
	if len(reason) <= MaxReasonLen {
		return reason
	}
	return strings.ToValidUTF8(reason[:MaxReasonLen], "")
}

// replayMarker separates a dedup ID from its replay suffix.
const replayMarker = "-replay-"

// ReplayDedupID is the dedup ID a receive-and-resend replay sends a dead
// letter under. The original dedup ID would be dropped by the source's
// five-minute deduplication window if the message failed within it, so the
// replay derives a fresh one from the original (an earlier replay suffix
// stripped) and the dead letter's message ID: a retried replay of the same
// dead letter (a crash between send and delete) is still deduplicated,
// while a later replay of the message after it failed again is not. This is
// safe because the consumers are idempotent by business identity (an
// endpoint's slot, a window's verdict), not by dedup ID.
func ReplayDedupID(dedupID, messageID string) string {
	base, _, _ := strings.Cut(dedupID, replayMarker)
	sum := sha256.Sum256([]byte(messageID))
	id := base + replayMarker + hex.EncodeToString(sum[:6])
	if len(id) > 128 {
		whole := sha256.Sum256([]byte(base))
		id = hex.EncodeToString(whole[:]) + replayMarker + hex.EncodeToString(sum[:6])
	}
	return id
}

// scanVisibility hides a dead letter while a receive-based scan holds it.
const scanVisibility = 30 * time.Second

// PeekByReceive returns up to max dead letters of dlq without taking them:
// it receives them and makes them visible again at once. While a peek holds
// them (a round trip) a concurrent replay does not see them, and each peek
// counts as a receive. It is the SQS way; the embedded broker reads its
// records instead.
func PeekByReceive(ctx context.Context, dlq Queue, max int) ([]DeadLetter, error) {
	var held []Message
	defer func() { release(dlq, held) }()
	var out []DeadLetter
	for len(out) < max {
		msgs, err := dlq.Receive(ctx, ReceiveInput{Max: min(MaxBatch, max-len(out)), Wait: time.Second, Visibility: scanVisibility})
		if err != nil {
			return nil, err
		}
		if len(msgs) == 0 {
			break
		}
		held = append(held, msgs...)
		for _, m := range msgs {
			out = append(out, DeadLetter{ID: m.ID, GroupID: m.GroupID, DedupID: m.DedupID, Body: m.Body, SentAt: m.SentAt, ReceiveCount: m.ReceiveCount})
		}
	}
	return out, nil
}

// ResendDeadLetters moves dead letters from dlq back to src by receiving
// each, sending it to src with its group ID and a ReplayDedupID, then
// deleting it from dlq. With ids it moves only those; the others it holds
// until the scan ends, so (FIFO order) a message queued behind an unselected
// one of its group is not reached and is reported missing. A crash between
// a send and its delete leaves the dead letter in place; replaying it again
// sends the same replay dedup ID, which the source deduplicates within five
// minutes.
func ResendDeadLetters(ctx context.Context, dlq, src Queue, ids []string) (RedriveResult, error) {
	var res RedriveResult
	want := map[string]bool{}
	for _, id := range ids {
		want[id] = true
	}
	var held []Message
	defer func() { release(dlq, held) }()
	for {
		msgs, err := dlq.Receive(ctx, ReceiveInput{Max: MaxBatch, Wait: time.Second, Visibility: scanVisibility})
		if err != nil {
			return res, err
		}
		if len(msgs) == 0 {
			break
		}
		var move []Message
		for _, m := range msgs {
			if len(ids) == 0 || want[m.ID] {
				move = append(move, m)
				delete(want, m.ID)
			} else {
				held = append(held, m)
			}
		}
		if len(move) == 0 {
			continue
		}
		in := make([]SendInput, len(move))
		for i, m := range move {
			in[i] = SendInput{GroupID: m.GroupID, DedupID: ReplayDedupID(m.DedupID, m.ID), Body: m.Body}
		}
		sent, err := src.Send(ctx, in)
		if err != nil {
			held = append(held, move...)
			return res, fmt.Errorf("replay to %s: %w", src.Name(), err)
		}
		var receipts []string
		for i, r := range sent {
			if r.Err != nil {
				held = append(held, move[i])
				return res, fmt.Errorf("replay message %s to %s: %w", move[i].ID, src.Name(), r.Err)
			}
			receipts = append(receipts, move[i].ReceiptHandle)
		}
		if err := dlq.Delete(ctx, receipts...); err != nil {
			return res, fmt.Errorf("delete replayed messages from %s: %w", dlq.Name(), err)
		}
		res.Moved += len(move)
		if len(ids) > 0 && len(want) == 0 {
			break
		}
	}
	for _, id := range ids {
		if want[id] {
			res.Missing = append(res.Missing, id)
		}
	}
	slices.Sort(res.Missing)
	return res, nil
}

// release makes held messages visible again, on a context of its own: it
// runs when the caller's may be done.
func release(q Queue, held []Message) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, m := range held {
		_ = q.ChangeVisibility(ctx, m.ReceiptHandle, 0)
	}
}
