package sqs_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mcpmon/mcpmon/pkg/queue"
	"github.com/mcpmon/mcpmon/pkg/queue/sqs"
)

// BenchmarkRequestsPerResult measures what the pipeline pays SQS per probe
// result, end to end: 50 endpoints publish 1,000 results through
// queue.Publisher into the results queue on fauxqs while queue.Consume
// receives, handles and batch-deletes them. Every SQS request after
// provisioning (send, receive, delete, visibility) is counted by the SDK
// middleware. Naive use (one SendMessage, one ReceiveMessage, one
// DeleteMessage per result) costs 3.0; batches of ten make the floor 0.3.
//
//	make bench, or:
//	eval "$(.ci/start-fauxqs.sh /tmp/peers)"
//	go test -run '^$' -bench RequestsPerResult -benchtime 1x ./pkg/queue/sqs/
func BenchmarkRequestsPerResult(b *testing.B) {
	const endpoints, perEndpoint = 50, 20
	const results = endpoints * perEndpoint
	var totalReqs, totalResults int
	var sends, receives, deletes, visibility int
	for b.Loop() {
		m := sqs.NewMetrics(prometheus.NewRegistry())
		c := newClient(b, sqs.Options{Metrics: m})
		cfg := queue.StageConfigs()[1] // results
		if _, err := sqs.Ensure(b.Context(), c, []queue.Config{cfg}); err != nil {
			b.Fatal(err)
		}
		q, err := c.Open(b.Context(), cfg)
		if err != nil {
			b.Fatal(err)
		}
		base := m.Total()
		s0, r0, d0, v0 := m.Requests("SendMessageBatch"), m.Requests("ReceiveMessage"), m.Requests("DeleteMessageBatch"), m.Requests("ChangeMessageVisibility")

		ctx, cancel := context.WithCancel(b.Context())
		var handled atomic.Int64
		seen := sync.Map{}
		consumed := make(chan error, 1)
		go func() {
			consumed <- queue.Consume(ctx, q, func(_ context.Context, msg queue.Message) error {
				if _, dup := seen.LoadOrStore(msg.DedupID, true); !dup && handled.Add(1) == results {
					cancel()
				}
				return nil
			}, queue.ConsumerOptions{})
		}()

		pub := queue.NewPublisher(q, queue.PublisherOptions{})
		var wg sync.WaitGroup
		for e := range endpoints {
			wg.Go(func() {
				for i := range perEndpoint {
					_, err := pub.Publish(ctx, queue.SendInput{
						GroupID: fmt.Sprintf("ep-%02d", e),
						DedupID: fmt.Sprintf("ep-%02d-run-%d", e, i),
						Body:    fmt.Appendf(nil, `{"schema":1,"endpointId":"ep-%02d","probeRunId":"run-%d","status":"up"}`, e, i),
					})
					if err != nil {
						b.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		_ = pub.Close()
		if err := <-consumed; err != nil {
			b.Fatal(err)
		}
		if n := handled.Load(); n != results {
			b.Fatalf("handled %d results, want %d", n, results)
		}
		totalReqs += m.Total() - base
		totalResults += results
		sends += m.Requests("SendMessageBatch") - s0
		receives += m.Requests("ReceiveMessage") - r0
		deletes += m.Requests("DeleteMessageBatch") - d0
		visibility += m.Requests("ChangeMessageVisibility") - v0
	}
	per := float64(totalReqs) / float64(totalResults)
	b.ReportMetric(per, "requests/result")
	b.ReportMetric(float64(sends)/float64(totalResults), "sends/result")
	b.ReportMetric(float64(receives)/float64(totalResults), "receives/result")
	b.ReportMetric(float64(deletes)/float64(totalResults), "deletes/result")
	b.Logf("%d results over %d endpoints: %d SQS requests (%d SendMessageBatch, %d ReceiveMessage, %d DeleteMessageBatch, %d ChangeMessageVisibility) = %.3f requests/result (target ≤ 0.35)",
		totalResults, endpoints, totalReqs, sends, receives, deletes, visibility, per)
}
