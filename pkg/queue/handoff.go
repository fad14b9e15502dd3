package queue

import (
	"context"
	"fmt"
	"log/slog"
	"time"
)

// Sender publishes one message and waits until the queue accepted it;
// *Publisher satisfies it.
type Sender interface {
	Publish(ctx context.Context, in SendInput) (string, error)
}

// Handoff publishes to a stage whose consumer runs in the same process by
// handing the message to the consumer's handler at once, in the caller's
// goroutine: the message is never in the queue. Only when the handler
// fails is the message sent to the queue (Fallback), where the stage's
// consumer retries it as it retries any message, up to the DLQ.
//
// The queue's promise holds because Publish returns only once the handler
// has returned nil, which for a stage handler means its effect is durable
// — what the consumer waits for before it deletes a message. A crash
// before that leaves the caller's own work unacknowledged (a prober's
// command is redelivered and probed again under the same probe run ID,
// which the aggregator's handler is idempotent by). What a handoff skips
// is the queue's part: the send and its dedup record, the receive, the
// delete, and the publisher's batching delay. So it fits a stage whose
// handler does not depend on the queue's order within a group (a
// result's fold is a set add) and a queue that is local anyway (the
// embedded queue, whose commits share the store's file): a remote queue
// is also what spreads the stage's work over replicas.
type Handoff struct {
	// Queue is the stage queue's name, for metrics and errors.
	Queue string
	// Handler is the stage's consumer handler.
	Handler Handler
	// Fallback takes a message the handler failed on.
	Fallback Sender
	Metrics  *Metrics
	Logger   *slog.Logger
	// Now stamps the handed message's SentAt; default time.Now.
	Now func() time.Time
}

// Publish hands in to the handler, or sends it to Fallback when the
// handler fails. A message handed off gets the ID "handoff-" + its dedup ID.
func (h Handoff) Publish(ctx context.Context, in SendInput) (string, error) {
	if len(in.Body) > MaxBatchBytes {
		return "", fmt.Errorf("publish to %s: body of %d bytes: %w", h.Queue, len(in.Body), ErrTooLarge)
	}
	return h.hand(ctx, in.GroupID, in.DedupID, in.Body, nil, func() []byte { return in.Body })
}

// PublishValue is Publish for a value the handler takes as it is
// (Message.Value, with no Body): in one process, encoding it for the
// handler to decode a copy was the whole of the handoff's own cost. Only
// when the handler fails is v encoded (body) and sent to Fallback, where
// the consumer's handler decodes it as any message of the queue.
func (h Handoff) PublishValue(ctx context.Context, groupID, dedupID string, v any, body func() []byte) (string, error) {
	return h.hand(ctx, groupID, dedupID, nil, v, body)
}

// ValueSender is a Sender that can also take a message's value as it is
// (Handoff).
type ValueSender interface {
	Sender
	PublishValue(ctx context.Context, groupID, dedupID string, v any, body func() []byte) (string, error)
}

// SendValue publishes v through s: as the value itself when s takes values
// (a Handoff), else encoded by body. The one way a stage's producer sends
// a message a consumer in its process may take unencoded.
func SendValue(ctx context.Context, s Sender, groupID, dedupID string, v any, body func() []byte) (string, error) {
	if vs, ok := s.(ValueSender); ok {
		return vs.PublishValue(ctx, groupID, dedupID, v, body)
	}
	return s.Publish(ctx, SendInput{GroupID: groupID, DedupID: dedupID, Body: body()})
}

func (h Handoff) hand(ctx context.Context, groupID, dedupID string, b []byte, v any, body func() []byte) (string, error) {
	now := time.Now
	if h.Now != nil {
		now = h.Now
	}
	m := Message{ID: "handoff-" + dedupID, GroupID: groupID, DedupID: dedupID, Body: b, Value: v, ReceiveCount: 1, SentAt: now()}
	err := h.Handler(ctx, m)
	if err == nil {
		h.Metrics.handedOff(h.Queue)
		return m.ID, nil
	}
	if ctx.Err() != nil {
		return "", fmt.Errorf("publish to %s: %w (handler: %w)", h.Queue, ctx.Err(), err)
	}
	if h.Logger != nil {
		h.Logger.Debug("handoff failed; the message goes to the queue", "queue", h.Queue, "dedup_id", dedupID, "err", err)
	}
	return h.Fallback.Publish(ctx, SendInput{GroupID: groupID, DedupID: dedupID, Body: body()})
}
