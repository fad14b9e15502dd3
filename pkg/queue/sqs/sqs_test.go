package sqs_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/mcpmon/mcpmon/pkg/queue"
	"github.com/mcpmon/mcpmon/pkg/queue/queuetest"
	"github.com/mcpmon/mcpmon/pkg/queue/sqs"
	"github.com/mcpmon/mcpmon/pkg/store/bolt"
	"github.com/mcpmon/mcpmon/pkg/testpeers"
)

var prefixSeq atomic.Int64

// newClient connects to the fauxqs peer with static dummy credentials and a
// unique queue-name prefix.
func newClient(t testing.TB, opts sqs.Options) *sqs.Client {
	t.Helper()
	opts.Endpoint = testpeers.SQSEndpoint(t)
	opts.Region = "us-east-1"
	opts.Credentials = credentials.NewStaticCredentialsProvider("test", "test", "")
	if opts.Prefix == "" {
		opts.Prefix = fmt.Sprintf("t%d-%d-", time.Now().UnixNano()%1e6, prefixSeq.Add(1))
	}
	c, err := sqs.New(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestConformance(t *testing.T) {
	queuetest.Run(t, func(t *testing.T) queuetest.Backend {
		c := newClient(t, sqs.Options{})
		// SQS keeps no failure reason with a message: the daemon keeps
		// them in its store (here a real bolt file) by message ID.
		book := queue.NewFailureBook(openStore(t), nil)
		return queuetest.Backend{
			NewQueue: func(t *testing.T, cfg queue.Config) (queue.Queue, queue.Queue) {
				if _, err := sqs.Ensure(t.Context(), c, []queue.Config{cfg}); err != nil {
					t.Fatal(err)
				}
				q, err := c.Open(t.Context(), cfg)
				if err != nil {
					t.Fatal(err)
				}
				if cfg.MaxReceiveCount == 0 {
					return q, nil
				}
				dlq, err := c.OpenDLQ(t.Context(), cfg)
				if err != nil {
					t.Fatal(err)
				}
				return q, dlq
			},
			NoGroupDedupScope: "fauxqs 1.9.2 deduplicates per queue even with DeduplicationScope=messageGroup (covered on the embedded queue)",
			DeadLetters: func(t *testing.T, _ queue.Config, q, dlq queue.Queue) queue.DeadLetterQueue {
				d := sqs.NewDeadLetters(q.(*sqs.Queue), dlq.(*sqs.Queue))
				d.Reasons = book
				return d
			},
			Failures: book,
		}
	})
}

// openStore opens a bolt store in t's temp dir, closed at cleanup.
func openStore(t *testing.T) *bolt.Store {
	t.Helper()
	st, err := bolt.Open(filepath.Join(t.TempDir(), "store.db"), bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}

func TestMissingQueueSaysRunEnsure(t *testing.T) {
	c := newClient(t, sqs.Options{})
	_, err := c.Open(t.Context(), queue.Config{Name: "never-created"})
	if !errors.Is(err, queue.ErrQueueNotFound) {
		t.Fatalf("err = %v, want queue.ErrQueueNotFound", err)
	}
	if !strings.Contains(err.Error(), "mcpmon queues ensure") || !strings.Contains(err.Error(), "never-created.fifo") {
		t.Fatalf("error %q does not name the queue and the fix", err)
	}
}

func TestEnsureIdempotentAndReportsDrift(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := sqs.NewMetrics(reg)
	c := newClient(t, sqs.Options{Metrics: m})
	cfgs := queue.StageConfigs()
	rep, err := sqs.Ensure(t.Context(), c, cfgs)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Created) != 6 || len(rep.Existed) != 0 || len(rep.Drift) != 0 {
		t.Fatalf("first ensure = %+v, want 6 queues created", rep)
	}
	rep, err = sqs.Ensure(t.Context(), c, cfgs)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Created) != 0 || len(rep.Existed) != 6 || len(rep.Drift) != 0 {
		t.Fatalf("second ensure = %+v, want 6 existing, no drift", rep)
	}
	// The redrive policy points at the DLQ.
	q, err := c.Open(t.Context(), cfgs[1])
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.API().GetQueueAttributes(t.Context(), getAll(q.URL()))
	if err != nil {
		t.Fatal(err)
	}
	if p := got.Attributes["RedrivePolicy"]; !strings.Contains(p, "results-dlq.fifo") || !strings.Contains(p, "10") {
		t.Fatalf("RedrivePolicy = %q", p)
	}
	// Drift: the visibility timeout changed by hand.
	if _, err := c.API().SetQueueAttributes(t.Context(), setAttr(q.URL(), "VisibilityTimeout", "99")); err != nil {
		t.Fatal(err)
	}
	rep, err = sqs.Ensure(t.Context(), c, cfgs)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Drift) != 1 || rep.Drift[0].Attribute != "VisibilityTimeout" || rep.Drift[0].Got != "99" || rep.Drift[0].Want != "5" {
		t.Fatalf("drift = %+v, want VisibilityTimeout 99 vs 5", rep.Drift)
	}
	if m.Requests("CreateQueue") != 6 {
		t.Errorf("CreateQueue requests = %d, want 6 (ensure must not recreate)", m.Requests("CreateQueue"))
	}
}

func TestHighThroughputAttributes(t *testing.T) {
	c := newClient(t, sqs.Options{HighThroughput: true})
	if _, err := sqs.Ensure(t.Context(), c, queue.StageConfigs()[1:2]); err != nil {
		t.Fatal(err)
	}
	q, err := c.Open(t.Context(), queue.StageConfigs()[1])
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.API().GetQueueAttributes(t.Context(), getAll(q.URL()))
	if err != nil {
		t.Fatal(err)
	}
	if got.Attributes["DeduplicationScope"] != "messageGroup" || got.Attributes["FifoThroughputLimit"] != "perMessageGroupId" {
		t.Fatalf("attributes = %v, want high-throughput FIFO", got.Attributes)
	}
}

func TestDesiredAttributes(t *testing.T) {
	specs := sqs.Desired("prod-", queue.StageConfigs(), false)
	var names []string
	for _, s := range specs {
		names = append(names, s.Name)
	}
	want := "prod-commands-dlq.fifo prod-commands.fifo prod-results-dlq.fifo prod-results.fifo prod-verdicts-dlq.fifo prod-verdicts.fifo"
	if got := strings.Join(names, " "); got != want {
		t.Fatalf("queues = %s, want %s", got, want)
	}
	cmd := specs[1]
	if cmd.Attributes["ContentBasedDeduplication"] != "true" || cmd.DLQ != "prod-commands-dlq.fifo" || cmd.MaxReceiveCount != queue.DefaultMaxReceiveCount {
		t.Fatalf("commands spec = %+v", cmd)
	}
	if specs[3].Attributes["ContentBasedDeduplication"] != "false" || specs[3].Attributes["VisibilityTimeout"] != "5" || specs[3].Attributes["MessageRetentionPeriod"] != "345600" {
		t.Fatalf("results spec = %+v", specs[3])
	}
	if specs[2].Attributes["MessageRetentionPeriod"] != "1209600" || specs[2].DLQ != "" {
		t.Fatalf("results DLQ spec = %+v", specs[2])
	}
	ht := sqs.DesiredAttributes(queue.StageConfigs()[1], true)
	if ht["DeduplicationScope"] != "messageGroup" || ht["FifoThroughputLimit"] != "perMessageGroupId" {
		t.Fatalf("high-throughput attributes = %v", ht)
	}
	if p := sqs.RedrivePolicy("arn:aws:sqs:us-east-1:1:x-dlq.fifo", 10); p != `{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:1:x-dlq.fifo","maxReceiveCount":10}` {
		t.Fatalf("RedrivePolicy = %s", p)
	}
	d := sqs.Compare("q", map[string]string{"RedrivePolicy": `{"deadLetterTargetArn":"a","maxReceiveCount":10}`, "DeduplicationScope": "queue"},
		map[string]string{"RedrivePolicy": `{"maxReceiveCount":"10","deadLetterTargetArn":"a"}`})
	if len(d) != 0 {
		t.Fatalf("equivalent attributes reported as drift: %v", d)
	}
}

func TestRequestCounter(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := sqs.NewMetrics(reg)
	c := newClient(t, sqs.Options{Metrics: m})
	cfg := queue.StageConfigs()[1]
	if _, err := sqs.Ensure(t.Context(), c, []queue.Config{cfg}); err != nil {
		t.Fatal(err)
	}
	q, err := c.Open(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	before, beforeQueue, beforeOther := m.Requests("SendMessageBatch"), m.QueueRequests(cfg.Name), m.QueueRequests(sqs.QueueOther)
	if _, err := q.Send(t.Context(), []queue.SendInput{{GroupID: "g", DedupID: "1", Body: []byte("x")}, {GroupID: "g", DedupID: "2", Body: []byte("y")}}); err != nil {
		t.Fatal(err)
	}
	if got := m.Requests("SendMessageBatch") - before; got != 1 {
		t.Fatalf("two messages cost %d SendMessageBatch requests, want 1", got)
	}
	// The request is billed to its stage queue, named without the
	// client's prefix and .fifo, and to nothing else.
	if got := m.QueueRequests(cfg.Name) - beforeQueue; got != 1 {
		t.Fatalf("queue %q counted %d requests for one batch send, want 1", cfg.Name, got)
	}
	if got := m.QueueRequests(sqs.QueueOther) - beforeOther; got != 0 {
		t.Fatalf("a send to %q counted %d requests as %q", cfg.Name, got, sqs.QueueOther)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, mf := range mfs {
		if mf.GetName() == "mcpmon_sqs_requests_total" {
			for _, mm := range mf.GetMetric() {
				labels := map[string]string{}
				for _, lp := range mm.GetLabel() {
					labels[lp.GetName()] = lp.GetValue()
				}
				if labels["op"] == "SendMessageBatch" && labels["queue"] == cfg.Name && mm.GetCounter().GetValue() >= 1 {
					found = true
				}
			}
		}
	}
	if !found {
		t.Fatalf("mcpmon_sqs_requests_total{op=\"SendMessageBatch\",queue=%q} not exported", cfg.Name)
	}
}

func getAll(url string) *awssqs.GetQueueAttributesInput {
	return &awssqs.GetQueueAttributesInput{QueueUrl: aws.String(url), AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameAll}}
}

func setAttr(url, k, v string) *awssqs.SetQueueAttributesInput {
	return &awssqs.SetQueueAttributesInput{QueueUrl: aws.String(url), Attributes: map[string]string{k: v}}
}

// TestServerErrorsMapToSentinels opens a queue with a config that claims
// content-based dedup the real queue lacks, so the server (not the
// adapter's own check) refuses the send.
func TestServerErrorsMapToSentinels(t *testing.T) {
	c := newClient(t, sqs.Options{})
	cfg := queue.StageConfigs()[1] // results: explicit dedup IDs
	if _, err := sqs.Ensure(t.Context(), c, []queue.Config{cfg}); err != nil {
		t.Fatal(err)
	}
	wrong := cfg
	wrong.ContentBasedDedup = true
	q, err := c.Open(t.Context(), wrong)
	if err != nil {
		t.Fatal(err)
	}
	res, err := q.Send(t.Context(), []queue.SendInput{{GroupID: "g", Body: []byte("no dedup id")}})
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(res[0].Err, queue.ErrMissingDedupID) {
		t.Fatalf("server refusal: %v, want queue.ErrMissingDedupID", res[0].Err)
	}
	err = q.ChangeVisibility(t.Context(), "not-a-receipt", time.Minute)
	if !errors.Is(err, queue.ErrInvalidReceipt) {
		t.Fatalf("unknown receipt: %v, want queue.ErrInvalidReceipt", err)
	}
}

func TestOpenStages(t *testing.T) {
	c := newClient(t, sqs.Options{})
	if _, err := c.OpenStages(t.Context(), queue.StageConfigs()); !errors.Is(err, queue.ErrQueueNotFound) {
		t.Fatalf("before ensure: %v, want ErrQueueNotFound", err)
	}
	if _, err := sqs.Ensure(t.Context(), c, queue.StageConfigs()); err != nil {
		t.Fatal(err)
	}
	stages, err := c.OpenStages(t.Context(), queue.StageConfigs())
	if err != nil {
		t.Fatal(err)
	}
	if len(stages) != 3 || stages[1].Name != "results" || stages[1].Queue.Name() != "results" || stages[1].DLQ.Name() != "results-dlq" {
		t.Fatalf("stages = %+v", stages)
	}
}

// TestRedriveStatusOnAServerWithoutMoveTasks: fauxqs has no
// ListMessageMoveTasks; the redrive status says "unsupported" instead of
// failing, and a redrive of all still works (by receive and resend).
func TestRedriveStatusOnAServerWithoutMoveTasks(t *testing.T) {
	c := newClient(t, sqs.Options{})
	cfg := queue.Config{Name: "moves", VisibilityTimeout: time.Second, MaxReceiveCount: 1}
	if _, err := sqs.Ensure(t.Context(), c, []queue.Config{cfg}); err != nil {
		t.Fatal(err)
	}
	q, err := c.Open(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	dlq, err := c.OpenDLQ(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	d := sqs.NewDeadLetters(q, dlq)
	st, err := d.RedriveStatus(t.Context())
	if err != nil || st.Status != queue.RedriveUnsupported {
		t.Fatalf("redrive status on fauxqs = %+v, %v; want %q", st, err, queue.RedriveUnsupported)
	}
	res, err := d.Redrive(t.Context(), nil)
	if err != nil || res.Task != "" || res.Moved != 0 {
		t.Fatalf("redrive of an empty DLQ on fauxqs = %+v, %v; want nothing moved, no task", res, err)
	}
}
