package embedded_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mcpmon/mcpmon/pkg/clock"
	"github.com/mcpmon/mcpmon/pkg/queue"
	"github.com/mcpmon/mcpmon/pkg/queue/embedded"
	"github.com/mcpmon/mcpmon/pkg/queue/queuetest"
)

var epoch = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

func TestConformance(t *testing.T) {
	queuetest.Run(t, func(t *testing.T) queuetest.Backend {
		clk := clock.NewFake(epoch)
		brokers := map[string]*embedded.Broker{}
		return queuetest.Backend{
			NewQueue: func(t *testing.T, cfg queue.Config) (queue.Queue, queue.Queue) {
				b, err := embedded.Open("", []queue.Config{cfg}, embedded.Options{Clock: clk, PollInterval: 5 * time.Millisecond})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = b.Close() })
				brokers[cfg.Name] = b
				var dlq queue.Queue
				if cfg.MaxReceiveCount > 0 {
					dlq = b.DLQ(cfg.Name)
				}
				return b.Queue(cfg.Name), dlq
			},
			Advance: clk.Advance,
			DeadLetters: func(t *testing.T, cfg queue.Config, _, _ queue.Queue) queue.DeadLetterQueue {
				return brokers[cfg.Name].DeadLetters(cfg.Name)
			},
			Failures: failureRecorder(brokers),
		}
	})
}

// TestConformancePersistent runs the suite on the bbolt-backed broker too.
func TestConformancePersistent(t *testing.T) {
	queuetest.Run(t, func(t *testing.T) queuetest.Backend {
		clk := clock.NewFake(epoch)
		brokers := map[string]*embedded.Broker{}
		return queuetest.Backend{
			NewQueue: func(t *testing.T, cfg queue.Config) (queue.Queue, queue.Queue) {
				b, err := embedded.Open(t.TempDir(), []queue.Config{cfg}, embedded.Options{Clock: clk, PollInterval: 5 * time.Millisecond})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = b.Close() })
				brokers[cfg.Name] = b
				var dlq queue.Queue
				if cfg.MaxReceiveCount > 0 {
					dlq = b.DLQ(cfg.Name)
				}
				return b.Queue(cfg.Name), dlq
			},
			Advance: clk.Advance,
			DeadLetters: func(t *testing.T, cfg queue.Config, _, _ queue.Queue) queue.DeadLetterQueue {
				return brokers[cfg.Name].DeadLetters(cfg.Name)
			},
			Failures: failureRecorder(brokers),
		}
	})
}

// failureRecorder routes a recorded failure to the broker of its queue.
type failureRecorder map[string]*embedded.Broker

func (f failureRecorder) RecordFailure(ctx context.Context, queueName, messageID, reason string) error {
	return f[queueName].RecordFailure(ctx, queueName, messageID, reason)
}

func open(t *testing.T, dir string, clk clock.Clock) *embedded.Broker {
	t.Helper()
	b, err := embedded.Open(dir, queue.StageConfigs(), embedded.Options{Clock: clk, PollInterval: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestRestartLosesNothingAcknowledged(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	clk := clock.NewFake(epoch)
	b := open(t, dir, clk)
	q := b.Queue("results")
	res, err := q.Send(ctx, []queue.SendInput{
		{GroupID: "e1", DedupID: "e1-r1", Body: []byte("r1")},
		{GroupID: "e1", DedupID: "e1-r2", Body: []byte("r2")},
		{GroupID: "e2", DedupID: "e2-r1", Body: []byte("e2")},
	})
	if err != nil {
		t.Fatal(err)
	}
	// e1-r1 is handled and deleted; e2 is in flight when the process dies.
	ms, err := q.Receive(ctx, queue.ReceiveInput{Max: 1})
	if err != nil || len(ms) != 1 || string(ms[0].Body) != "r1" {
		t.Fatalf("receive = %v, %v", ms, err)
	}
	if err := q.Delete(ctx, ms[0].ReceiptHandle); err != nil {
		t.Fatal(err)
	}
	inflight, err := q.Receive(ctx, queue.ReceiveInput{Max: 10, Visibility: 30 * time.Second})
	if err != nil || len(inflight) != 2 {
		t.Fatalf("receive = %v, %v", inflight, err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := q.Send(ctx, []queue.SendInput{{GroupID: "x", DedupID: "x", Body: []byte("x")}}); !errors.Is(err, queue.ErrClosed) {
		t.Fatalf("send after close: %v, want ErrClosed", err)
	}

	b = open(t, dir, clk)
	defer b.Close()
	q = b.Queue("results")
	// Dedup survived the restart, including for the deleted message.
	again, err := q.Send(ctx, []queue.SendInput{{GroupID: "e1", DedupID: "e1-r1", Body: []byte("r1")}})
	if err != nil || again[0].MessageID != res[0].MessageID || !again[0].Duplicate {
		t.Fatalf("resend after restart = %+v, %v; want duplicate of %s", again, err, res[0].MessageID)
	}
	// The process that held them is gone: visible at once, without waiting
	// out the 30 s deadline the dead process asked for.
	ms, err = q.Receive(ctx, queue.ReceiveInput{Max: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 2 {
		t.Fatalf("right after restart: %d in-flight messages visible, want 2", len(ms))
	}
	for _, m := range ms {
		if m.ReceiveCount != 2 {
			t.Errorf("message %s receive count %d, want 2 (counts persist)", m.Body, m.ReceiveCount)
		}
	}
	// A receipt from before the restart still identifies the receive
	// only if it is the latest one.
	if err := q.ChangeVisibility(ctx, inflight[0].ReceiptHandle, time.Minute); !errors.Is(err, queue.ErrInvalidReceipt) {
		t.Fatalf("stale pre-restart receipt: %v", err)
	}
}

func TestDedupRecordExpiresAcrossRestart(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	clk := clock.NewFake(epoch)
	b := open(t, dir, clk)
	q := b.Queue("commands")
	first, err := q.Send(ctx, []queue.SendInput{{GroupID: "e1", Body: []byte(`{"slot":1}`)}})
	if err != nil || first[0].Err != nil {
		t.Fatal(err, first)
	}
	b.Close()
	clk.Advance(queue.DedupWindow)
	b = open(t, dir, clk)
	defer b.Close()
	q = b.Queue("commands")
	again, err := q.Send(ctx, []queue.SendInput{{GroupID: "e1", Body: []byte(`{"slot":1}`)}})
	if err != nil || again[0].Duplicate || again[0].MessageID == first[0].MessageID {
		t.Fatalf("send after window across restart = %+v, %v; want a new message", again, err)
	}
}

func TestUnknownQueue(t *testing.T) {
	b := open(t, "", clock.NewFake(epoch))
	defer b.Close()
	_, err := b.Queue("nope").Receive(t.Context(), queue.ReceiveInput{Max: 1})
	if !errors.Is(err, queue.ErrQueueNotFound) {
		t.Fatalf("err = %v, want ErrQueueNotFound", err)
	}
}

func TestVisibilityCap(t *testing.T) {
	ctx := t.Context()
	clk := clock.NewFake(epoch)
	b := open(t, "", clk)
	defer b.Close()
	q := b.Queue("results")
	if _, err := q.Send(ctx, []queue.SendInput{{GroupID: "g", DedupID: "d", Body: []byte("b")}}); err != nil {
		t.Fatal(err)
	}
	ms, _ := q.Receive(ctx, queue.ReceiveInput{Max: 1, Visibility: 12 * time.Hour})
	clk.Advance(11 * time.Hour)
	if err := q.ChangeVisibility(ctx, ms[0].ReceiptHandle, 30*time.Minute); err != nil {
		t.Fatalf("extension within 12h: %v", err)
	}
	clk.Advance(20 * time.Minute)
	if err := q.ChangeVisibility(ctx, ms[0].ReceiptHandle, time.Hour); !errors.Is(err, queue.ErrVisibilityCap) {
		t.Fatalf("extension past 12h: err = %v, want ErrVisibilityCap", err)
	}
}

func TestReceiveHonoursContext(t *testing.T) {
	b := open(t, "", clock.Real{})
	defer b.Close()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := b.Queue("results").Receive(ctx, queue.ReceiveInput{Max: 1, Wait: 20 * time.Second}); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

// TestLongPollSeesFakeClockAdvance: a long poll on an injected clock returns
// once the clock is advanced past a message's visibility, without waiting
// for the poll's real-time end.
func TestLongPollSeesFakeClockAdvance(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := clock.NewFake(epoch)
		b := open(t, "", clk)
		defer b.Close()
		q := b.Queue("results")
		if _, err := q.Send(t.Context(), []queue.SendInput{{GroupID: "g", DedupID: "d", Body: []byte("b")}}); err != nil {
			t.Fatal(err)
		}
		if ms, _ := q.Receive(t.Context(), queue.ReceiveInput{Max: 1}); len(ms) != 1 {
			t.Fatal("nothing received")
		}
		got := make(chan []queue.Message)
		go func() {
			ms, _ := q.Receive(t.Context(), queue.ReceiveInput{Max: 1, Wait: queue.MaxWait})
			got <- ms
		}()
		start := time.Now()
		synctest.Wait()
		clk.Advance(31 * time.Second)
		ms := <-got
		if len(ms) != 1 || ms[0].ReceiveCount != 2 {
			t.Fatalf("long poll after Advance = %+v, want the redelivery", ms)
		}
		if waited := time.Since(start); waited > 100*time.Millisecond {
			t.Fatalf("long poll took %v of real time to notice the clock", waited)
		}
	})
}
