package sqs

import (
	"context"
	"errors"
	"fmt"
	"strings"

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
}

// NewDeadLetters pairs a stage queue with its dead-letter queue.
func NewDeadLetters(src, dlq *Queue) *DeadLetters { return &DeadLetters{Source: src, DLQ: dlq} }

// Stats reports the dead-letter queue's approximate depth. SQS exposes the
// oldest message's age only through CloudWatch, so it is 0.
func (d *DeadLetters) Stats(ctx context.Context) (queue.Stats, error) { return d.DLQ.Stats(ctx) }

// Peek receives up to max dead letters and makes them visible again
// (queue.PeekByReceive): SQS has no read without receive. Reason is always
// empty: SQS keeps no failure reason with a message.
func (d *DeadLetters) Peek(ctx context.Context, max int) ([]queue.DeadLetter, error) {
	return queue.PeekByReceive(ctx, d.DLQ, max)
}

// Redrive returns dead letters to the stage queue. All of them: with
// StartMessageMoveTask, which moves asynchronously (the result names the
// task; ListMessageMoveTasks reports its progress), keeping each message's
// group ID and the dedup ID it has in the DLQ (SQS replaced it with the
// original message ID). Where the server does not implement move tasks (a
// local emulator), and always for a selection of IDs, it falls back to
// queue.ResendDeadLetters, which sends under queue.ReplayDedupID.
func (d *DeadLetters) Redrive(ctx context.Context, ids []string) (queue.RedriveResult, error) {
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
// (ListMessageMoveTasks): status, messages moved and to move.
func (d *DeadLetters) MoveTasks(ctx context.Context) ([]types.ListMessageMoveTasksResultEntry, error) {
	src, err := d.DLQ.arn(ctx)
	if err != nil {
		return nil, err
	}
	out, err := d.DLQ.c.api.ListMessageMoveTasks(ctx, &awssqs.ListMessageMoveTasksInput{SourceArn: aws.String(src), MaxResults: aws.Int32(10)})
	if err != nil {
		return nil, mapErr("ListMessageMoveTasks", d.DLQ.sqsName, err)
	}
	return out.Results, nil
}

// Purge deletes every dead letter (PurgeQueue, which SQS allows once a
// minute per queue) and returns the approximate depth before it.
func (d *DeadLetters) Purge(ctx context.Context) (int, error) {
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
