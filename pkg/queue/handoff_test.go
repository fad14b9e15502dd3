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

// TestHandoffValue: PublishValue hands the value itself, with no body,
// and encodes it only for the queue when the handler fails; the consumer
// then sees the encoded body and no value.
func TestHandoffValue(t *testing.T) {
	b := openResults(t)
	q := &countingQueue{Queue: b.Queue("results")}
	qm := queue.NewMetrics(prometheus.NewRegistry())
	pub := queue.NewPublisher(q, queue.PublisherOptions{Metrics: qm})
	defer pub.Close()

	type result struct{ N int }
	var got []queue.Message
	fail := true
	h := func(_ context.Context, m queue.Message) error {
		got = append(got, m)
		if m.DedupID == "ep-2-run" && fail {
			fail = false
			return errors.New("store refused the write")
		}
		return nil
	}
	ho := queue.Handoff{Queue: "results", Handler: h, Fallback: pub, Metrics: qm}
	encoded := 0
	body := func(n int) func() []byte {
		return func() []byte { encoded++; return []byte(`{"N":` + string(rune('0'+n)) + `}`) }
	}

	if _, err := ho.PublishValue(t.Context(), "ep-1", "ep-1-run", result{1}, body(1)); err != nil {
		t.Fatalf("handoff: %v", err)
	}
	if len(got) != 1 || got[0].Value != (result{1}) || got[0].Body != nil {
		t.Fatalf("handler saw %+v, want the value and no body", got)
	}
	if encoded != 0 || q.sends != 0 {
		t.Errorf("%d encodings and %d sends for a value the handler took, want none", encoded, q.sends)
	}

	if _, err := ho.PublishValue(t.Context(), "ep-2", "ep-2-run", result{2}, body(2)); err != nil {
		t.Fatalf("publish with a failing handler: %v", err)
	}
	if encoded != 1 || q.sends != 1 {
		t.Fatalf("%d encodings and %d sends after a failed handoff, want 1 and 1", encoded, q.sends)
	}
	ms, err := q.Receive(t.Context(), queue.ReceiveInput{Max: 10})
	if err != nil || len(ms) != 1 {
		t.Fatalf("receive: %v, %d messages, want the failed one", err, len(ms))
	}
	if string(ms[0].Body) != `{"N":2}` || ms[0].Value != nil || ms[0].GroupID != "ep-2" || ms[0].DedupID != "ep-2-run" {
		t.Errorf("queued %+v, want the encoded value under its group and dedup ID, no value", ms[0])
	}
}
