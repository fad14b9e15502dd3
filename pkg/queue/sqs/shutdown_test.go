package sqs_test

import (
	"context"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/queue"
	"github.com/mcpmon/mcpmon/pkg/queue/sqs"
)

// TestShutdownDuringLongPollLeavesNothingInFlight: a consumer stopped while
// its long poll is open must not leave a message stuck in flight. On SQS a
// receive abandoned by the client can still take messages on the server,
// which then block their FIFO group for the whole visibility timeout — a
// restarted process would see its endpoint stall for a minute.
func TestShutdownDuringLongPollLeavesNothingInFlight(t *testing.T) {
	c := newClient(t, sqs.Options{})
	cfg := queue.Config{Name: "stop", VisibilityTimeout: 60 * time.Second}
	if _, err := sqs.Ensure(t.Context(), c, []queue.Config{cfg}); err != nil {
		t.Fatal(err)
	}
	q, err := c.Open(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	send := func(dedup string) {
		t.Helper()
		res, err := q.Send(t.Context(), []queue.SendInput{{GroupID: "g", DedupID: dedup, Body: []byte(dedup)}})
		if err != nil || res[0].Err != nil {
			t.Fatalf("send %s: %v %v", dedup, err, res)
		}
	}

	ctx, cancel := context.WithCancel(t.Context())
	handled := make(chan string, 10)
	done := make(chan error, 1)
	watched := &receiveSignal{Queue: q, entered: make(chan struct{}, 10)}
	go func() {
		done <- queue.Consume(ctx, watched, func(_ context.Context, m queue.Message) error {
			handled <- string(m.Body)
			return nil
		}, queue.ConsumerOptions{Wait: 2 * time.Second, FinishReceive: true, DeleteDelay: time.Millisecond})
	}()
	<-watched.entered // the first, empty long poll is open
	send("first")
	if got := <-handled; got != "first" {
		t.Fatalf("handled %q", got)
	}
	<-watched.entered // the next long poll is open: stop now
	cancel()
	send("second")
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-handled:
		t.Fatalf("handled %q after stop", got)
	default:
	}
	msgs, err := q.Receive(t.Context(), queue.ReceiveInput{Max: 10, Wait: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 1 || string(msgs[0].Body) != "second" {
		t.Fatalf("after the consumer stopped, receive got %d messages (%v): the second message is stuck in flight", len(msgs), msgs)
	}
}

// receiveSignal is the real queue, reporting each time a receive starts.
type receiveSignal struct {
	queue.Queue
	entered chan struct{}
}

func (r *receiveSignal) Receive(ctx context.Context, in queue.ReceiveInput) ([]queue.Message, error) {
	r.entered <- struct{}{}
	return r.Queue.Receive(ctx, in)
}
