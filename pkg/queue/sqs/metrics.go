package sqs

import (
	"context"
	"sync"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/smithy-go/middleware"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// Metrics counts SQS API requests by operation: SQS bills per request, so
// mcpmon_sqs_requests_total is the pipeline's cost meter. Every HTTP attempt
// counts, SDK retries included, because every attempt is billed.
type Metrics struct {
	requests *prometheus.CounterVec

	mu     sync.Mutex
	counts map[string]int // mirror of requests, readable without a registry
}

// Operations mcpmon calls; their label values are pre-created.
var operations = []string{
	"SendMessageBatch", "ReceiveMessage", "DeleteMessageBatch", "ChangeMessageVisibility",
	"GetQueueUrl", "GetQueueAttributes", "CreateQueue", "SetQueueAttributes",
}

// NewMetrics registers mcpmon_sqs_requests_total{op} on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		counts: map[string]int{},
		requests: promauto.With(reg).NewCounterVec(prometheus.CounterOpts{
			Namespace: "mcpmon", Name: "sqs_requests_total",
			Help: "SQS API requests sent, by operation, retries included (SQS bills per request).",
		}, []string{"op"}),
	}
	for _, op := range operations {
		m.requests.WithLabelValues(op)
	}
	return m
}

// Requests returns the number of requests counted for op (for tests and
// benchmarks).
func (m *Metrics) Requests(op string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.counts[op]
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

// middleware adds the counter to a client's stack, in the finalize step
// after the retry middleware so that each attempt is counted.
func (m *Metrics) middleware(stack *middleware.Stack) error {
	return stack.Finalize.Add(middleware.FinalizeMiddlewareFunc("mcpmonCountRequests",
		func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
			op := awsmiddleware.GetOperationName(ctx)
			m.requests.WithLabelValues(op).Inc()
			m.mu.Lock()
			m.counts[op]++
			m.mu.Unlock()
			return next.HandleFinalize(ctx, in)
		}), middleware.After)
}
