package sqs

import (
	"context"
	"strings"
	"sync"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go/middleware"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// Metrics counts SQS API requests by operation and queue: SQS bills per
// request, so mcpmon_sqs_requests_total is the pipeline's cost meter and its
// queue label is the cost of each stage. Every HTTP attempt counts, SDK
// retries included, because every attempt is billed.
type Metrics struct {
	requests *prometheus.CounterVec

	mu       sync.Mutex
	counts   map[string]int // op → requests, a mirror readable without a registry
	perQueue map[string]int // queue → requests
}

// QueueOther labels requests that address no stage queue (GetQueueUrl,
// CreateQueue, ListMessageMoveTasks, …).
const QueueOther = "other"

// NewMetrics registers mcpmon_sqs_requests_total{op,queue} on reg. Label
// values appear as requests are made: the queues a role uses depend on it.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	return &Metrics{
		counts:   map[string]int{},
		perQueue: map[string]int{},
		requests: promauto.With(reg).NewCounterVec(prometheus.CounterOpts{
			Namespace: "mcpmon", Name: "sqs_requests_total",
			Help: "SQS API requests sent, by operation and stage queue (without prefix and .fifo), retries included (SQS bills per request).",
		}, []string{"op", "queue"}),
	}
}

// Requests returns the number of requests counted for op (for tests and
// benchmarks).
func (m *Metrics) Requests(op string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.counts[op]
}

// QueueRequests returns the number of requests counted for a stage queue
// (its name without prefix and .fifo, e.g. "results" or "results-dlq").
func (m *Metrics) QueueRequests(queue string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.perQueue[queue]
}

// Total returns all requests counted.
func (m *Metrics) Total() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, c := range m.counts {
		n += c
	}
	return n
}

// queueKey carries the request's stage queue from the initialize step,
// where the operation's input is visible, to the finalize step, which runs
// once per attempt.
type queueKey struct{}

// middleware returns the counter for a client whose queue names carry
// prefix: an initialize step names the queue the input addresses, and a
// finalize step after the retry middleware counts each attempt.
func (m *Metrics) middleware(prefix string) func(*middleware.Stack) error {
	return func(stack *middleware.Stack) error {
		err := stack.Initialize.Add(middleware.InitializeMiddlewareFunc("mcpmonNameQueue",
			func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				ctx = middleware.WithStackValue(ctx, queueKey{}, stageQueue(prefix, queueURLOf(in.Parameters)))
				return next.HandleInitialize(ctx, in)
			}), middleware.Before)
		if err != nil {
			return err
		}
		return stack.Finalize.Add(middleware.FinalizeMiddlewareFunc("mcpmonCountRequests",
			func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
				op := awsmiddleware.GetOperationName(ctx)
				q, _ := middleware.GetStackValue(ctx, queueKey{}).(string)
				if q == "" {
					q = QueueOther
				}
				m.requests.WithLabelValues(op, q).Inc()
				m.mu.Lock()
				m.counts[op]++
				m.perQueue[q]++
				m.mu.Unlock()
				return next.HandleFinalize(ctx, in)
			}), middleware.After)
	}
}

// queueURLOf returns the queue URL an operation's input addresses, or ""
// for the operations that address none.
func queueURLOf(params any) string {
	var u *string
	switch in := params.(type) {
	case *awssqs.SendMessageBatchInput:
		u = in.QueueUrl
	case *awssqs.SendMessageInput:
		u = in.QueueUrl
	case *awssqs.ReceiveMessageInput:
		u = in.QueueUrl
	case *awssqs.DeleteMessageBatchInput:
		u = in.QueueUrl
	case *awssqs.DeleteMessageInput:
		u = in.QueueUrl
	case *awssqs.ChangeMessageVisibilityInput:
		u = in.QueueUrl
	case *awssqs.ChangeMessageVisibilityBatchInput:
		u = in.QueueUrl
	case *awssqs.GetQueueAttributesInput:
		u = in.QueueUrl
	case *awssqs.SetQueueAttributesInput:
		u = in.QueueUrl
	case *awssqs.PurgeQueueInput:
		u = in.QueueUrl
	}
	if u == nil {
		return ""
	}
	return *u
}

// stageQueue turns a queue URL into its stage name: the last path segment
// without prefix and ".fifo" ("…/123/prod-results-dlq.fifo" → "results-dlq").
// A queue of another prefix keeps its full name; the label stays bounded by
// the queues the deployment has.
func stageQueue(prefix, url string) string {
	if url == "" {
		return ""
	}
	name := url[strings.LastIndexByte(url, '/')+1:]
	name = strings.TrimSuffix(name, ".fifo")
	if rest, ok := strings.CutPrefix(name, prefix); ok && rest != "" {
		return rest
	}
	return name
}
