// Package sqs is mcpmon's Amazon SQS FIFO backend: an adapter that makes an
// SQS FIFO queue a queue.Queue (and queue.StatsReader), provisioning of the
// stage queues and their dead-letter queues (Ensure), and a request counter
// that makes the cost of the pipeline visible.
//
// Data enters through queue.Queue.Send (one SendMessageBatch per call) and
// leaves through Receive (ReceiveMessage with long polling) and Delete
// (DeleteMessageBatch); the batching itself is done by queue.Publisher and
// queue.Consume. Configuration comes from the standard AWS chain (env,
// shared config, IMDS…) plus an endpoint override (a local emulator such as
// fauxqs) and a queue-name prefix. Throttling and 5xx answers are retried by
// the SDK with backoff, resending the same request and so the same dedup ID;
// AWS error codes are mapped to the queue package's sentinels.
package sqs

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/mcpmon/mcpmon/pkg/queue"
)

// Options configure the SQS backend. Zero values fall back to the standard
// AWS configuration chain.
type Options struct {
	// Endpoint overrides the SQS endpoint (--sqs-endpoint /
	// MCPMON_SQS_ENDPOINT), e.g. http://127.0.0.1:4566 for fauxqs.
	Endpoint string
	// Prefix is prepended to every queue name (--sqs-prefix), so several
	// environments can share an account: "staging-" → staging-results.fifo.
	Prefix string
	// Region overrides the region from the chain.
	Region string
	// HighThroughput provisions and expects high-throughput FIFO queues
	// (DeduplicationScope=messageGroup, FifoThroughputLimit=perMessageGroupId).
	// Dedup IDs are then unique per group only, so a retry must reuse both
	// its group ID and its dedup ID (queue.Publisher does).
	HighThroughput bool
	// Credentials overrides the chain's credentials (tests use static
	// dummy ones).
	Credentials aws.CredentialsProvider
	// HTTPClient overrides the SDK's HTTP client. Leave nil, or pass an
	// awshttp.BuildableClient: a plain *http.Client makes LoadDefaultConfig
	// fail where AWS_CA_BUNDLE is set.
	HTTPClient aws.HTTPClient
	// MaxAttempts bounds SDK attempts per call for throttling, 5xx and
	// network errors. Default 5.
	MaxAttempts int
	// MaxBackoff caps the SDK's jittered exponential wait between
	// attempts. Default 5s.
	MaxBackoff time.Duration
	// Metrics counts API calls; nil counts nothing.
	Metrics *Metrics
	Logger  *slog.Logger
}

// Client is a configured SQS API client that opens mcpmon's queues.
type Client struct {
	api    *awssqs.Client
	opts   Options
	logger *slog.Logger

	mu   sync.Mutex
	urls map[string]string // full queue name → URL as SQS returned it
}

// New loads the AWS configuration and builds a Client. It makes no API
// call; Open resolves queues.
func New(ctx context.Context, opts Options) (*Client, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.MaxAttempts <= 0 {
		opts.MaxAttempts = 5
	}
	if opts.MaxBackoff <= 0 {
		opts.MaxBackoff = 5 * time.Second
	}
	if opts.HTTPClient == nil {
		// Buildable, so AWS_CA_BUNDLE still applies; enough idle
		// connections for concurrent long polls and batch calls.
		opts.HTTPClient = awshttp.NewBuildableClient().WithTransportOptions(func(tr *http.Transport) {
			tr.MaxIdleConnsPerHost = 64
		})
	}
	loaders := []func(*config.LoadOptions) error{
		config.WithHTTPClient(opts.HTTPClient),
		config.WithRetryer(func() aws.Retryer {
			return retry.NewStandard(func(o *retry.StandardOptions) {
				o.MaxAttempts = opts.MaxAttempts
				o.MaxBackoff = opts.MaxBackoff
				// No client-side retry quota: under sustained throttling
				// every entry must keep retrying (queue.Publisher backs
				// off on top), not fail fast with "quota exceeded".
				o.RateLimiter = ratelimit.None
				// SQS's query-compatible codes carry a prefix the SDK's
				// throttle list does not know.
				o.Retryables = append([]retry.IsErrorRetryable{retry.IsErrorRetryableFunc(retryableCode)}, o.Retryables...)
			})
		}),
	}
	if opts.Region != "" {
		loaders = append(loaders, config.WithRegion(opts.Region))
	}
	if opts.Credentials != nil {
		loaders = append(loaders, config.WithCredentialsProvider(opts.Credentials))
	}
	cfg, err := config.LoadDefaultConfig(ctx, loaders...)
	if err != nil {
		return nil, fmt.Errorf("sqs: load AWS configuration: %w", err)
	}
	if cfg.Region == "" {
		return nil, errors.New("sqs: no AWS region: set AWS_REGION (or a region in the AWS profile) or sqs.Options.Region")
	}
	api := awssqs.NewFromConfig(cfg, func(o *awssqs.Options) {
		if opts.Endpoint != "" {
			o.BaseEndpoint = aws.String(opts.Endpoint)
		}
		if opts.Metrics != nil {
			o.APIOptions = append(o.APIOptions, opts.Metrics.middleware(opts.Prefix))
		}
	})
	return &Client{
		api:    api,
		opts:   opts,
		logger: opts.Logger.With("component", "sqs"),
		urls:   map[string]string{},
	}, nil
}

// API returns the underlying SDK client.
func (c *Client) API() *awssqs.Client { return c.api }

// QueueName is the SQS name of a stage queue: prefix + name + ".fifo".
func QueueName(prefix, name string) string { return prefix + name + ".fifo" }

// Open resolves the SQS queue for cfg. A missing queue is
// queue.ErrQueueNotFound (run `mcpmon queues ensure`).
func (c *Client) Open(ctx context.Context, cfg queue.Config) (*Queue, error) {
	if c.opts.HighThroughput {
		cfg.DedupScope = queue.DedupScopeMessageGroup
	}
	full := QueueName(c.opts.Prefix, cfg.Name)
	url, err := c.url(ctx, full)
	if err != nil {
		return nil, err
	}
	return &Queue{c: c, cfg: cfg, sqsName: full, url: url}, nil
}

// OpenDLQ resolves the dead-letter queue of the stage queue cfg.
func (c *Client) OpenDLQ(ctx context.Context, cfg queue.Config) (*Queue, error) {
	return c.Open(ctx, queue.DLQConfig(cfg))
}

func (c *Client) url(ctx context.Context, full string) (string, error) {
	c.mu.Lock()
	url, ok := c.urls[full]
	c.mu.Unlock()
	if ok {
		return url, nil
	}
	out, err := c.api.GetQueueUrl(ctx, &awssqs.GetQueueUrlInput{QueueName: aws.String(full)})
	if err != nil {
		return "", mapErr("GetQueueUrl", full, err)
	}
	url = aws.ToString(out.QueueUrl)
	c.mu.Lock()
	c.urls[full] = url
	c.mu.Unlock()
	return url, nil
}

// Queue is one SQS FIFO queue as a queue.Queue. It always addresses the
// queue by the URL SQS returned for it.
type Queue struct {
	c       *Client
	cfg     queue.Config
	sqsName string
	url     string
}

var (
	_ queue.Queue       = (*Queue)(nil)
	_ queue.StatsReader = (*Queue)(nil)
)

// Name is the stage name (without prefix and .fifo), for metric labels.
func (q *Queue) Name() string { return q.cfg.Name }

// URL is the queue URL SQS returned.
func (q *Queue) URL() string { return q.url }

// Send sends up to MaxBatch messages in one SendMessageBatch call. Entries
// that fail validation locally are not sent and carry the error.
func (q *Queue) Send(ctx context.Context, msgs []queue.SendInput) ([]queue.SendResult, error) {
	if len(msgs) == 0 {
		return nil, nil
	}
	if len(msgs) > queue.MaxBatch {
		return nil, fmt.Errorf("sqs queue %s: %d entries: %w", q.sqsName, len(msgs), queue.ErrTooManyEntries)
	}
	out := make([]queue.SendResult, len(msgs))
	entries := make([]types.SendMessageBatchRequestEntry, 0, len(msgs))
	total := 0
	for i, m := range msgs {
		switch {
		case m.GroupID == "":
			out[i].Err = fmt.Errorf("sqs queue %s: entry %d: %w", q.sqsName, i, queue.ErrMissingGroupID)
			continue
		case m.DedupID == "" && !q.cfg.ContentBasedDedup:
			out[i].Err = fmt.Errorf("sqs queue %s: entry %d: %w", q.sqsName, i, queue.ErrMissingDedupID)
			continue
		}
		total += len(m.Body)
		e := types.SendMessageBatchRequestEntry{
			Id:             aws.String(strconv.Itoa(i)),
			MessageBody:    aws.String(string(m.Body)),
			MessageGroupId: aws.String(m.GroupID),
		}
		if m.DedupID != "" {
			e.MessageDeduplicationId = aws.String(m.DedupID)
		}
		entries = append(entries, e)
	}
	if total > queue.MaxBatchBytes {
		return nil, fmt.Errorf("sqs queue %s: batch of %d bytes over %d: %w", q.sqsName, total, queue.MaxBatchBytes, queue.ErrTooLarge)
	}
	if len(entries) == 0 {
		return out, nil
	}
	res, err := q.c.api.SendMessageBatch(ctx, &awssqs.SendMessageBatchInput{QueueUrl: aws.String(q.url), Entries: entries})
	if err != nil {
		return nil, mapErr("SendMessageBatch", q.sqsName, err)
	}
	seen := 0
	for _, s := range res.Successful {
		i, err := strconv.Atoi(aws.ToString(s.Id))
		if err != nil || i < 0 || i >= len(out) {
			continue
		}
		out[i].MessageID = aws.ToString(s.MessageId)
		seen++
	}
	for _, f := range res.Failed {
		i, err := strconv.Atoi(aws.ToString(f.Id))
		if err != nil || i < 0 || i >= len(out) {
			continue
		}
		out[i].Err = entryErr("SendMessageBatch", q.sqsName, f.Code, f.Message, f.SenderFault)
		seen++
	}
	if seen != len(entries) {
		return nil, fmt.Errorf("sqs queue %s: SendMessageBatch answered %d of %d entries", q.sqsName, seen, len(entries))
	}
	return out, nil
}

// seconds rounds d up to whole seconds, as SQS counts them.
func seconds(d time.Duration) int32 {
	return int32(math.Ceil(d.Seconds()))
}

// Receive long-polls for up to in.Max messages.
func (q *Queue) Receive(ctx context.Context, in queue.ReceiveInput) ([]queue.Message, error) {
	n := min(max(in.Max, 1), queue.MaxBatch)
	req := &awssqs.ReceiveMessageInput{
		QueueUrl:            aws.String(q.url),
		MaxNumberOfMessages: int32(n),
		WaitTimeSeconds:     seconds(min(in.Wait, queue.MaxWait)),
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{
			types.MessageSystemAttributeNameApproximateReceiveCount,
			types.MessageSystemAttributeNameSentTimestamp,
			types.MessageSystemAttributeNameMessageGroupId,
			types.MessageSystemAttributeNameMessageDeduplicationId,
		},
	}
	if in.Visibility > 0 {
		req.VisibilityTimeout = seconds(min(in.Visibility, queue.MaxVisibility))
	}
	// The SDK retries a receive whose answer was lost (a reset connection,
	// a 5xx) with this same input. Without an attempt ID the first
	// attempt's messages stay in flight, unseen, for a visibility timeout,
	// blocking their groups; with it SQS returns them again.
	req.ReceiveRequestAttemptId = aws.String(rand.Text())
	res, err := q.c.api.ReceiveMessage(ctx, req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, mapErr("ReceiveMessage", q.sqsName, err)
	}
	out := make([]queue.Message, 0, len(res.Messages))
	for _, m := range res.Messages {
		a := m.Attributes
		rc, _ := strconv.Atoi(a[string(types.MessageSystemAttributeNameApproximateReceiveCount)])
		var sent time.Time
		if ms, err := strconv.ParseInt(a[string(types.MessageSystemAttributeNameSentTimestamp)], 10, 64); err == nil {
			sent = time.UnixMilli(ms).UTC()
		}
		out = append(out, queue.Message{
			ID:            aws.ToString(m.MessageId),
			ReceiptHandle: aws.ToString(m.ReceiptHandle),
			GroupID:       a[string(types.MessageSystemAttributeNameMessageGroupId)],
			DedupID:       a[string(types.MessageSystemAttributeNameMessageDeduplicationId)],
			Body:          []byte(aws.ToString(m.Body)),
			ReceiveCount:  rc,
			SentAt:        sent,
		})
	}
	return out, nil
}

// Delete acknowledges up to MaxBatch messages in one DeleteMessageBatch.
func (q *Queue) Delete(ctx context.Context, receiptHandles ...string) error {
	if len(receiptHandles) == 0 {
		return nil
	}
	if len(receiptHandles) > queue.MaxBatch {
		return fmt.Errorf("sqs queue %s: delete of %d: %w", q.sqsName, len(receiptHandles), queue.ErrTooManyEntries)
	}
	entries := make([]types.DeleteMessageBatchRequestEntry, len(receiptHandles))
	for i, r := range receiptHandles {
		entries[i] = types.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: aws.String(r)}
	}
	res, err := q.c.api.DeleteMessageBatch(ctx, &awssqs.DeleteMessageBatchInput{QueueUrl: aws.String(q.url), Entries: entries})
	if err != nil {
		return mapErr("DeleteMessageBatch", q.sqsName, err)
	}
	var errs []error
	for _, f := range res.Failed {
		errs = append(errs, entryErr("DeleteMessageBatch", q.sqsName, f.Code, f.Message, f.SenderFault))
	}
	return errors.Join(errs...)
}

// ChangeVisibility sets a received message's remaining visibility.
func (q *Queue) ChangeVisibility(ctx context.Context, receiptHandle string, d time.Duration) error {
	if d > queue.MaxVisibility {
		return fmt.Errorf("sqs queue %s: visibility %v: %w", q.sqsName, d, queue.ErrVisibilityCap)
	}
	_, err := q.c.api.ChangeMessageVisibility(ctx, &awssqs.ChangeMessageVisibilityInput{
		QueueUrl:          aws.String(q.url),
		ReceiptHandle:     aws.String(receiptHandle),
		VisibilityTimeout: seconds(max(d, 0)),
	})
	if err != nil {
		return mapErr("ChangeMessageVisibility", q.sqsName, err)
	}
	return nil
}

// Stats reads the approximate depth from the queue attributes. SQS exposes
// the oldest message's age only through CloudWatch, so OldestMessageAge is
// always 0 here.
func (q *Queue) Stats(ctx context.Context) (queue.Stats, error) {
	res, err := q.c.api.GetQueueAttributes(ctx, &awssqs.GetQueueAttributesInput{
		QueueUrl: aws.String(q.url),
		AttributeNames: []types.QueueAttributeName{
			types.QueueAttributeNameApproximateNumberOfMessages,
			types.QueueAttributeNameApproximateNumberOfMessagesNotVisible,
		},
	})
	if err != nil {
		return queue.Stats{}, mapErr("GetQueueAttributes", q.sqsName, err)
	}
	visible, _ := strconv.Atoi(res.Attributes[string(types.QueueAttributeNameApproximateNumberOfMessages)])
	inflight, _ := strconv.Atoi(res.Attributes[string(types.QueueAttributeNameApproximateNumberOfMessagesNotVisible)])
	return queue.Stats{Visible: visible, InFlight: inflight}, nil
}

// Stage is one opened stage queue with its dead-letter queue (nil when the
// stage has no redrive).
type Stage struct {
	Name  string
	Queue *Queue
	DLQ   *Queue
}

// OpenStages opens every queue of cfgs (normally queue.StageConfigs()) and
// its DLQ. It fails with queue.ErrQueueNotFound, naming the queue, when
// `mcpmon queues ensure` has not been run.
func (c *Client) OpenStages(ctx context.Context, cfgs []queue.Config) ([]Stage, error) {
	out := make([]Stage, 0, len(cfgs))
	for _, cfg := range cfgs {
		q, err := c.Open(ctx, cfg)
		if err != nil {
			return nil, err
		}
		s := Stage{Name: cfg.Name, Queue: q}
		if cfg.MaxReceiveCount > 0 {
			if s.DLQ, err = c.OpenDLQ(ctx, cfg); err != nil {
				return nil, err
			}
		}
		out = append(out, s)
	}
	return out, nil
}
