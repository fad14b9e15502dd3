package sqs

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"

	"github.com/mcpmon/mcpmon/pkg/queue"
)

// DeadLetters operates on one stage's dead-letter queue: peek, redrive
// (SQS's native StartMessageMoveTask where the server has it, receive and
// resend where it does not) and purge.
type DeadLetters struct {
	Source, DLQ *Queue
	// Reasons, when set, gives peek the failure reasons the consumers
	// recorded (a queue.FailureBook), and is swept on redrive and purge.
	Reasons Reasons
}

// Reasons is where the SQS deployment keeps failure reasons beside the
// messages: queue.FailureBook.
type Reasons interface {
	queue.FailureReasons
	Sweep(ctx context.Context, queueName string) (int, error)
}

var (
	_ queue.DeadLetterQueue     = (*DeadLetters)(nil)
	_ queue.RedriveStatusReader = (*DeadLetters)(nil)
	_ Reasons                   = (*queue.FailureBook)(nil)
)

// NewDeadLetters pairs a stage queue with its dead-letter queue (set
// Reasons to show failure reasons).
func NewDeadLetters(src, dlq *Queue) *DeadLetters { return &DeadLetters{Source: src, DLQ: dlq} }

// Stats reports the dead-letter queue's approximate depth. SQS exposes the
// oldest message's age only through CloudWatch, so it is 0.
func (d *DeadLetters) Stats(ctx context.Context) (queue.Stats, error) { return d.DLQ.Stats(ctx) }

// Peek receives up to max dead letters and makes them visible again
// (queue.PeekByReceive): SQS has no read without receive. SQS keeps no
// failure reason with a message; Reason comes from Reasons, by message ID,
// which SQS keeps when it dead-letters a message (and puts in the dead
// letter's dedup ID). A reason that cannot be read is logged and left
// out: the dead letters matter more.
func (d *DeadLetters) Peek(ctx context.Context, max int) ([]queue.DeadLetter, error) {
	out, err := queue.PeekByReceive(ctx, d.DLQ, max)
	if err != nil || d.Reasons == nil || len(out) == 0 {
		return out, err
	}
	// SQS documents that a FIFO message moved to a DLQ gets its original
	// message ID as dedup ID; so where a server gave the dead letter an ID
	// of its own, the dedup ID still finds the reason.
	var ids []string
	for _, m := range out {
		ids = append(ids, m.ID)
		if m.DedupID != "" && m.DedupID != m.ID {
			ids = append(ids, m.DedupID)
		}
	}
	why, err := d.Reasons.FailureReasons(ctx, d.Source.Name(), ids)
	if err != nil {
		d.DLQ.c.logger.Warn("dead letters shown without their failure reasons", "dlq", d.DLQ.sqsName, "err", err)
		return out, nil
	}
	for i, m := range out {
		out[i].Reason = cmp.Or(why[m.ID], why[m.DedupID])
	}
	return out, nil
}

// sweep drops reasons older than the DLQ's retention after an operator
// action; best effort.
func (d *DeadLetters) sweep(ctx context.Context) {
	if d.Reasons == nil {
		return
	}
	if _, err := d.Reasons.Sweep(ctx, d.Source.Name()); err != nil {
		d.DLQ.c.logger.Warn("could not sweep expired failure reasons", "queue", d.Source.Name(), "err", err)
	}
}

// Redrive returns dead letters to the stage queue. All of them: with
// StartMessageMoveTask, which moves asynchronously (the result names the
// task; ListMessageMoveTasks reports its progress), keeping each message's
// group ID and the dedup ID it has in the DLQ (SQS replaced it with the
// original message ID). Where the server does not implement move tasks (a
// local emulator), and always for a selection of IDs, it falls back to
// queue.ResendDeadLetters, which sends under queue.ReplayDedupID.
func (d *DeadLetters) Redrive(ctx context.Context, ids []string) (queue.RedriveResult, error) {
	defer d.sweep(ctx)
	if len(ids) == 0 {
		task, err := d.startMoveTask(ctx)
		if err == nil {
			return queue.RedriveResult{Task: task}, nil
		}
		if !errors.Is(err, errMoveUnsupported) {
			return queue.RedriveResult{}, err
		}
		d.DLQ.c.logger.Info("the SQS server has no message move tasks: redriving by receive and resend", "dlq", d.DLQ.sqsName, "err", err)
	}
	return queue.ResendDeadLetters(ctx, d.DLQ, d.Source, ids)
}

// errMoveUnsupported marks a server without StartMessageMoveTask.
var errMoveUnsupported = errors.New("message move tasks not supported")

func (d *DeadLetters) startMoveTask(ctx context.Context) (string, error) {
	src, err := d.DLQ.arn(ctx)
	if err != nil {
		return "", err
	}
	dst, err := d.Source.arn(ctx)
	if err != nil {
		return "", err
	}
	out, err := d.DLQ.c.api.StartMessageMoveTask(ctx, &awssqs.StartMessageMoveTaskInput{SourceArn: aws.String(src), DestinationArn: aws.String(dst)})
	if err != nil {
		if moveUnsupported(err) {
			return "", fmt.Errorf("sqs StartMessageMoveTask on %s: %w: %v", d.DLQ.sqsName, errMoveUnsupported, err)
		}
		return "", mapErr("StartMessageMoveTask", d.DLQ.sqsName, err)
	}
	return aws.ToString(out.TaskHandle), nil
}

// moveUnsupported says whether err is a server's way of saying it does not
// know the operation: an emulator answers with an unknown-operation code,
// a 404 or a 501 rather than with an SQS error.
func moveUnsupported(err error) bool {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		code := strings.TrimPrefix(ae.ErrorCode(), queryPrefix)
		switch code {
		case "UnsupportedOperation", "InvalidAction", "UnknownOperation", "UnknownOperationException", "NotImplemented", "InvalidParameterValue":
			return true
		}
	}
	var re interface{ HTTPStatusCode() int }
	if errors.As(err, &re) {
		switch re.HTTPStatusCode() {
		case 404, 405, 501:
			return !errors.Is(mapErr("", "", err), queue.ErrQueueNotFound)
		}
	}
	return false
}

// MoveTasks lists the recent message move tasks of the dead-letter queue
// (ListMessageMoveTasks), newest first: status, messages moved and to
// move. A server without move tasks answers an error wrapping
// errMoveUnsupported.
func (d *DeadLetters) MoveTasks(ctx context.Context) ([]types.ListMessageMoveTasksResultEntry, error) {
	src, err := d.DLQ.arn(ctx)
	if err != nil {
		return nil, err
	}
	out, err := d.DLQ.c.api.ListMessageMoveTasks(ctx, &awssqs.ListMessageMoveTasksInput{SourceArn: aws.String(src), MaxResults: aws.Int32(10)})
	if err != nil {
		if moveUnsupported(err) {
			return nil, fmt.Errorf("sqs ListMessageMoveTasks on %s: %w: %v", d.DLQ.sqsName, errMoveUnsupported, err)
		}
		return nil, mapErr("ListMessageMoveTasks", d.DLQ.sqsName, err)
	}
	return out.Results, nil
}

// RedriveStatus reports the latest move task of the dead-letter queue
// (SQS lists the newest first): RUNNING with its progress while a redrive
// runs, its final status after; queue.RedriveNone without any, and
// queue.RedriveUnsupported on a server without move tasks.
func (d *DeadLetters) RedriveStatus(ctx context.Context) (queue.RedriveStatus, error) {
	tasks, err := d.MoveTasks(ctx)
	if errors.Is(err, errMoveUnsupported) {
		return queue.RedriveStatus{Status: queue.RedriveUnsupported}, nil
	}
	if err != nil {
		return queue.RedriveStatus{}, err
	}
	return latestMoveTask(tasks), nil
}

// latestMoveTask turns ListMessageMoveTasks' results into the status of
// the newest task: the latest started (SQS lists the most recent first,
// but the order is not part of its contract).
func latestMoveTask(tasks []types.ListMessageMoveTasksResultEntry) queue.RedriveStatus {
	if len(tasks) == 0 {
		return queue.RedriveStatus{Status: queue.RedriveNone}
	}
	t := tasks[0]
	for _, o := range tasks[1:] {
		if o.StartedTimestamp > t.StartedTimestamp {
			t = o
		}
	}
	st := queue.RedriveStatus{
		Status:  aws.ToString(t.Status),
		Task:    aws.ToString(t.TaskHandle),
		Moved:   t.ApproximateNumberOfMessagesMoved,
		Failure: aws.ToString(t.FailureReason),
	}
	if t.ApproximateNumberOfMessagesToMove != nil {
		st.ToMove = *t.ApproximateNumberOfMessagesToMove
	}
	if t.StartedTimestamp > 0 {
		st.StartedAt = time.UnixMilli(t.StartedTimestamp).UTC()
	}
	if st.Status == "" {
		st.Status = "UNKNOWN"
	}
	return st
}

// Purge deletes every dead letter (PurgeQueue, which SQS allows once a
// minute per queue) and returns the approximate depth before it.
func (d *DeadLetters) Purge(ctx context.Context) (int, error) {
	defer d.sweep(ctx)
	st, err := d.DLQ.Stats(ctx)
	if err != nil {
		return 0, err
	}
	if _, err := d.DLQ.c.api.PurgeQueue(ctx, &awssqs.PurgeQueueInput{QueueUrl: aws.String(d.DLQ.url)}); err != nil {
		return 0, mapErr("PurgeQueue", d.DLQ.sqsName, err)
	}
	return st.Visible + st.InFlight, nil
}

// arn reads the queue's ARN.
func (q *Queue) arn(ctx context.Context) (string, error) {
	res, err := q.c.api.GetQueueAttributes(ctx, &awssqs.GetQueueAttributesInput{
		QueueUrl: aws.String(q.url), AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn},
	})
	if err != nil {
		return "", mapErr("GetQueueAttributes", q.sqsName, err)
	}
	return res.Attributes[string(types.QueueAttributeNameQueueArn)], nil
}
