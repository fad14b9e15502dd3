package embedded

import (
	"context"
	"fmt"
	"slices"

	"github.com/mcpmon/mcpmon/pkg/queue"
)

var _ queue.FailureRecorder = (*Broker)(nil)

// RecordFailure keeps reason on the message with ID messageID of queueName,
// persisted with it and carried into the dead-letter queue if the message
// is redriven there. A message already gone is not an error.
func (b *Broker) RecordFailure(ctx context.Context, queueName, messageID, reason string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	reason = queue.TruncateReason(queue.ScrubReason(reason))
	q, err := (&handle{b: b, name: queueName}).lookup()
	if err != nil {
		return err
	}
	var bt *batch
	// Linear: a failing message is in flight, near the head of the queue.
	for _, m := range q.msgs {
		if m != nil && m.ID == messageID {
			m.Reason = reason
			b.putMsg(q, m)
			bt = b.barrier()
			break
		}
	}
	b.mu.Unlock()
	if err := await(bt); err != nil {
		return fmt.Errorf("embedded queue %s: persist failure reason: %w", queueName, err)
	}
	return nil
}

// DeadLetters returns the operator's view of the dead-letter queue of the
// stage queue stage: peek, redrive and purge, each one step under the
// broker's lock whose writes commit in one bbolt transaction, so a crash
// moves a message entirely or not at all.
func (b *Broker) DeadLetters(stage string) *DeadLetters {
	return &DeadLetters{b: b, stage: stage}
}

// DeadLetters operates on one stage's dead-letter queue.
type DeadLetters struct {
	b     *Broker
	stage string
}

// lookup returns the stage's fifo and its DLQ with b.mu held; the caller
// unlocks.
func (d *DeadLetters) lookup() (*fifo, *fifo, error) {
	q, err := (&handle{b: d.b, name: d.stage}).lookup()
	if err != nil {
		return nil, nil, err
	}
	if q.dlq == nil {
		d.b.mu.Unlock()
		return nil, nil, fmt.Errorf("embedded queue %s has no dead-letter queue: %w", d.stage, queue.ErrQueueNotFound)
	}
	return q, q.dlq, nil
}

// Stats reports the dead-letter queue's depth and oldest message age.
func (d *DeadLetters) Stats(ctx context.Context) (queue.Stats, error) {
	return d.b.DLQ(d.stage).(queue.StatsReader).Stats(ctx)
}

// Peek returns up to max dead letters, oldest first, without receiving
// them: their receive counts and visibility do not change.
func (d *DeadLetters) Peek(ctx context.Context, max int) ([]queue.DeadLetter, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	_, dlq, err := d.lookup()
	if err != nil {
		return nil, err
	}
	var out []queue.DeadLetter
	for _, m := range dlq.msgs {
		if len(out) == max {
			break
		}
		if m == nil {
			continue
		}
		out = append(out, queue.DeadLetter{ID: m.ID, GroupID: m.GroupID, DedupID: m.DedupID, Body: append([]byte(nil), m.Body...),
			SentAt: m.SentAt, ReceiveCount: m.Receives, Reason: m.Reason})
	}
	// Show only what is on disk: a dead letter being moved in the batch
	// now committing could still vanish in a crash.
	bt := d.b.barrier()
	d.b.mu.Unlock()
	if err := await(bt); err != nil {
		return nil, fmt.Errorf("embedded queue %s: %w", dlq.cfg.Name, err)
	}
	return out, nil
}

// Redrive moves the dead letters with the given IDs (all when ids is empty)
// back to the end of the stage queue. As a move, not a send, it keeps each
// message's ID, group ID and dedup ID and bypasses deduplication; the
// receive count starts again at zero and the retention at now, as SQS's
// redrive does.
func (d *DeadLetters) Redrive(ctx context.Context, ids []string) (queue.RedriveResult, error) {
	if err := ctx.Err(); err != nil {
		return queue.RedriveResult{}, err
	}
	src, dlq, err := d.lookup()
	if err != nil {
		return queue.RedriveResult{}, err
	}
	res, bt := d.redrive(src, dlq, ids)
	d.b.mu.Unlock()
	if err := await(bt); err != nil {
		return queue.RedriveResult{}, fmt.Errorf("embedded queue %s: persist redrive: %w", dlq.cfg.Name, err)
	}
	if res.Moved > 0 {
		d.b.logger.Info("dead letters redriven", "queue", src.cfg.Name, "dlq", dlq.cfg.Name, "messages", res.Moved)
	}
	return res, nil
}

// redrive moves the dead letters with b.mu held.
func (d *DeadLetters) redrive(src, dlq *fifo, ids []string) (queue.RedriveResult, *batch) {
	want := map[string]bool{}
	for _, id := range ids {
		want[id] = true
	}
	var take []*message
	for _, m := range dlq.msgs {
		if m != nil && (len(ids) == 0 || want[m.ID]) {
			take = append(take, m)
			delete(want, m.ID)
		}
	}
	res := queue.RedriveResult{Moved: len(take)}
	for id := range want {
		res.Missing = append(res.Missing, id)
	}
	slices.Sort(res.Missing)
	if len(take) == 0 {
		return res, nil
	}
	now := d.b.clock.Now()
	for _, m := range take {
		moved := &message{Seq: src.nextSeq, ID: m.ID, GroupID: m.GroupID, DedupID: m.DedupID, Body: m.Body, SentAt: now}
		src.nextSeq++
		d.b.delMsg(dlq, m)
		d.b.putMsg(src, moved)
		dlq.remove(m)
		src.append(moved)
	}
	src.notify()
	dlq.notify()
	return res, d.b.barrier()
}

// Purge deletes every dead letter and returns how many there were.
func (d *DeadLetters) Purge(ctx context.Context) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	_, dlq, err := d.lookup()
	if err != nil {
		return 0, err
	}
	var gone []*message
	for _, m := range dlq.msgs {
		if m != nil {
			gone = append(gone, m)
		}
	}
	if len(gone) == 0 {
		d.b.mu.Unlock()
		return 0, nil
	}
	for _, m := range gone {
		d.b.delMsg(dlq, m)
		dlq.remove(m)
	}
	dlq.notify()
	bt := d.b.barrier()
	d.b.mu.Unlock()
	if err := await(bt); err != nil {
		return 0, fmt.Errorf("embedded queue %s: persist purge: %w", dlq.cfg.Name, err)
	}
	d.b.logger.Warn("dead-letter queue purged", "dlq", dlq.cfg.Name, "messages", len(gone))
	return len(gone), nil
}
