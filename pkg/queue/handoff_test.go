package queue_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mcpmon/mcpmon/pkg/queue"
)

// TestHandoff: a message the handler takes never reaches the queue; one it
// fails on is sent there, whole, and the stage's consumer handles it; a
// caller whose context ended gets an error and nothing is sent.
func TestHandoff(t *testing.T) {
	b := openResults(t)
	q := &countingQueue{Queue: b.Queue("results")}
	reg := prometheus.NewRegistry()
	qm := queue.NewMetrics(reg)
	pub := queue.NewPublisher(q, queue.PublisherOptions{Metrics: qm})
	defer pub.Close()

	var mu sync.Mutex
	handled := map[string]queue.Message{}
	failing := map[string]bool{"ep-2-run": true}
	retried := make(chan queue.Message, 1)
	h := func(ctx context.Context, m queue.Message) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		if failing[m.DedupID] {
			delete(failing, m.DedupID) // fails once: the consumer's retry takes it
			return errors.New("store refused the write")
		}
		handled[m.DedupID] = m
		if m.DedupID == "ep-2-run" {
			retried <- m
		}
		return nil
	}
	sentAt := time.Date(2026, 12, 7, 6, 0, 0, 0, time.UTC)
	ho := queue.Handoff{Queue: "results", Handler: h, Fallback: pub, Metrics: qm, Now: func() time.Time { return sentAt }}

	id, err := ho.Publish(t.Context(), queue.SendInput{GroupID: "ep-1", DedupID: "ep-1-run", Body: []byte(`{"n":1}`)})
	if err != nil {
		t.Fatalf("handoff: %v", err)
	}
	m := handled["ep-1-run"]
	if id != m.ID || m.GroupID != "ep-1" || string(m.Body) != `{"n":1}` || m.ReceiveCount != 1 || !m.SentAt.Equal(sentAt) {
		t.Errorf("handed %+v (id %q), want group ep-1, the body, one receive, SentAt %v", m, id, sentAt)
	}
	if q.sends != 0 {
		t.Errorf("%d sends after a handoff, want none", q.sends)
	}
	if got := counter(t, reg, "mcpmon_queue_handoffs_total", "results"); got != 1 {
		t.Errorf("mcpmon_queue_handoffs_total = %v, want 1", got)
	}

	// The handler fails: the message goes to the queue, and the consumer's
	// handler (the same one) takes it from there.
	if _, err := ho.Publish(t.Context(), queue.SendInput{GroupID: "ep-2", DedupID: "ep-2-run", Body: []byte(`{"n":2}`)}); err != nil {
		t.Fatalf("publish with a failing handler: %v", err)
	}
	if q.sends != 1 || counter(t, reg, "mcpmon_queue_sends_total", "results") != 1 {
		t.Fatalf("%d sends after a failed handoff, want 1", q.sends)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- queue.Consume(ctx, q, h, queue.ConsumerOptions{Wait: 10 * time.Millisecond}) }()
	select {
	case got := <-retried:
		if string(got.Body) != `{"n":2}` || got.GroupID != "ep-2" {
			t.Errorf("the consumer handled %+v, want the failed message whole", got)
		}
	case err := <-done:
		t.Fatalf("consumer stopped: %v", err)
	}
	cancel()
	<-done

	// A caller whose context ended: an error, no send.
	ended, stop := context.WithCancel(t.Context())
	stop()
	if _, err := ho.Publish(ended, queue.SendInput{GroupID: "ep-3", DedupID: "ep-3-run", Body: []byte(`{}`)}); !errors.Is(err, context.Canceled) {
		t.Errorf("publish on an ended context: %v, want context.Canceled", err)
	}
	if q.sends != 1 {
		t.Errorf("%d sends, want still 1", q.sends)
	}

	// Bounded like a send.
	big := strings.Repeat("x", queue.MaxBatchBytes+1)
	if _, err := ho.Publish(t.Context(), queue.SendInput{GroupID: "ep-4", DedupID: "ep-4-run", Body: []byte(big)}); !errors.Is(err, queue.ErrTooLarge) {
		t.Errorf("oversized body: %v, want ErrTooLarge", err)
	}
}
