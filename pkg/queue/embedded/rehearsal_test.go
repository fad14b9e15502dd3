package embedded_test

// The five failure rehearsals of an SQS FIFO pipeline (reference: "Rehearse
// the failure windows"), run on the embedded queue with an injected clock or
// testing/synctest: no sleeps, minutes pass in microseconds.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/mcpmon/mcpmon/pkg/clock"
	"github.com/mcpmon/mcpmon/pkg/queue"
	"github.com/mcpmon/mcpmon/pkg/queue/embedded"
)

// errTimeout is a transient (retryable) send error.
var errTimeout = errors.New("read tcp 127.0.0.1: i/o timeout")

// lostResponseTransient makes the first n sends reach the queue but report
// a timeout to the caller: the producer cannot tell whether they succeeded.
type lostResponseTransient struct {
	queue.Queue
	n atomic.Int32
}

func (l *lostResponseTransient) Send(ctx context.Context, in []queue.SendInput) ([]queue.SendResult, error) {
	res, err := l.Queue.Send(ctx, in)
	if err == nil && l.n.Add(-1) >= 0 {
		return nil, errTimeout
	}
	return res, err
}

func depth(t *testing.T, q queue.Queue) queue.Stats {
	t.Helper()
	s, err := q.(queue.StatsReader).Stats(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Rehearsal 1: the producer times out after the queue accepted its send and
// retries with the same dedup ID. Within five minutes the retry collapses
// into the original message; after five minutes it is a second copy (which
// is why consumers keep a long-horizon ledger).
func TestRehearsal1ProducerRetryWithinAndAfterWindow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := clock.NewFake(epoch)
		b, err := embedded.Open("", queue.StageConfigs(), embedded.Options{Clock: clk, PollInterval: 5 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		flaky := &lostResponseTransient{Queue: b.Queue("results")}
		flaky.n.Store(1)
		reg := prometheus.NewRegistry()
		pub := queue.NewPublisher(flaky, queue.PublisherOptions{Metrics: queue.NewMetrics(reg)})
		defer pub.Close()

		in := queue.SendInput{GroupID: "e1", DedupID: "e1-run1", Body: []byte(`{"status":"down"}`)}
		id, err := pub.Publish(t.Context(), in)
		if err != nil {
			t.Fatalf("publish with a lost response: %v (the publisher must retry)", err)
		}
		if s := depth(t, b.Queue("results")); s.Visible != 1 {
			t.Fatalf("within the window: %d messages queued, want 1", s.Visible)
		}
		if dups := counterValue(t, reg, "mcpmon_queue_duplicates_total", "results"); dups != 1 {
			t.Errorf("mcpmon_queue_duplicates_total = %v, want 1 (the retry)", dups)
		}

		// A restart of the producer four minutes later: still one message.
		clk.Advance(4 * time.Minute)
		id2, err := pub.Publish(t.Context(), in)
		if err != nil || id2 != id {
			t.Fatalf("retry at 4m = %q, %v; want original %q", id2, err, id)
		}
		if s := depth(t, b.Queue("results")); s.Visible != 1 {
			t.Fatalf("retry at 4m enqueued a copy: %d messages", s.Visible)
		}

		// Beyond the window the same event becomes a second message.
		clk.Advance(time.Minute)
		id3, err := pub.Publish(t.Context(), in)
		if err != nil || id3 == id {
			t.Fatalf("retry at 5m = %q, %v; want a new message ID", id3, err)
		}
		if s := depth(t, b.Queue("results")); s.Visible != 2 {
			t.Fatalf("after the window: %d messages, want 2", s.Visible)
		}
	})
}

func counterValue(t *testing.T, reg *prometheus.Registry, name, queueName string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "queue" && l.GetValue() == queueName {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	t.Fatalf("metric %s{queue=%q} not found", name, queueName)
	return 0
}

// Rehearsal 2: two messages for one group and one for another. While the
// first group's message is held in flight (its handler is slow), the other
// group progresses, and the first group's second message waits its turn.
func TestRehearsal2GroupHeldInFlightOtherProgresses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, err := embedded.Open("", queue.StageConfigs(), embedded.Options{Clock: clock.Real{}})
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		q := b.Queue("results")
		if _, err := q.Send(t.Context(), []queue.SendInput{
			{GroupID: "A", DedupID: "a1", Body: []byte("A1")},
			{GroupID: "A", DedupID: "a2", Body: []byte("A2")},
			{GroupID: "B", DedupID: "b1", Body: []byte("B1")},
		}); err != nil {
			t.Fatal(err)
		}
		release := make(chan struct{})
		var mu sync.Mutex
		var order []string
		ctx, cancel := context.WithCancel(t.Context())
		h := func(ctx context.Context, m queue.Message) error {
			if string(m.Body) == "A1" {
				<-release
			}
			mu.Lock()
			order = append(order, string(m.Body))
			if len(order) == 3 {
				cancel()
			}
			mu.Unlock()
			return nil
		}
		done := make(chan error)
		go func() { done <- queue.Consume(ctx, q, h, queue.ConsumerOptions{Max: 1, Visibility: 30 * time.Second}) }()

		synctest.Wait() // A1 held, B1 handled
		mu.Lock()
		got := fmt.Sprint(order)
		mu.Unlock()
		if got != "[B1]" {
			t.Fatalf("while A1 is held: handled %s, want [B1]", got)
		}
		// Hold A1 for 10 minutes, far past its 30s visibility: the heartbeat
		// keeps it in flight, so A2 never overtakes it.
		time.Sleep(10 * time.Minute) // synctest: advances the bubble clock only
		synctest.Wait()
		mu.Lock()
		got = fmt.Sprint(order)
		mu.Unlock()
		if got != "[B1]" {
			t.Fatalf("A2 overtook A1 while it was in flight: %s", got)
		}
		close(release)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(order) != "[B1 A1 A2]" {
			t.Fatalf("order = %v, want [B1 A1 A2]", order)
		}
	})
}

// ledger is the consumer's idempotency record (the store's ledger in
// production): an effect is applied once per dedup ID.
type ledger struct {
	mu      sync.Mutex
	done    map[string]bool
	effects int
}

func (l *ledger) apply(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.done[key] {
		return
	}
	l.done[key] = true
	l.effects++
}

// Rehearsal 3: the consumer commits its effect, then the process dies before
// the delete. After restart the message is redelivered (receive count 2) and
// the ledger makes the second run a no-op that still acknowledges.
func TestRehearsal3ConsumerCrashAfterEffectBeforeDelete(t *testing.T) {
	dir := t.TempDir()
	clk := clock.NewFake(epoch)
	b, err := embedded.Open(dir, queue.StageConfigs(), embedded.Options{Clock: clk, PollInterval: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	q := b.Queue("verdicts")
	if _, err := q.Send(t.Context(), []queue.SendInput{{GroupID: "e1", DedupID: "verdict-e1-2026-11-29T1200", Body: []byte("down")}}); err != nil {
		t.Fatal(err)
	}
	l := &ledger{done: map[string]bool{}}
	ms, err := q.Receive(t.Context(), queue.ReceiveInput{Max: 1})
	if err != nil || len(ms) != 1 {
		t.Fatal(ms, err)
	}
	l.apply(ms[0].DedupID)
	// Crash: no delete, process gone.
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}

	b, err = embedded.Open(dir, queue.StageConfigs(), embedded.Options{Clock: clk, PollInterval: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	q = b.Queue("verdicts")
	// No clock advance: a message in flight at open is visible at once.
	ctx, cancel := context.WithCancel(t.Context())
	var redelivery queue.Message
	err = queue.Consume(ctx, q, func(_ context.Context, m queue.Message) error {
		redelivery = m
		l.apply(m.DedupID)
		cancel()
		return nil
	}, queue.ConsumerOptions{Wait: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if redelivery.ReceiveCount != 2 || string(redelivery.Body) != "down" {
		t.Fatalf("redelivery = %+v, want the message with receive count 2", redelivery)
	}
	if l.effects != 1 {
		t.Fatalf("effect applied %d times, want once", l.effects)
	}
	if s := depth(t, q); s.Visible+s.InFlight != 0 {
		t.Fatalf("message not acknowledged after redelivery: %+v", s)
	}
}

// Rehearsal 4: processing outlives the visibility timeout. Without a
// heartbeat a second worker gets the message while the first still works,
// and the first worker's late delete (stale receipt) does not remove it.
// With the heartbeat the message stays with its worker, up to the 12-hour
// cap from its receive, after which it is redelivered.
func TestRehearsal4VisibilityExpiryDuringProcessing(t *testing.T) {
	t.Run("without heartbeat a second worker gets it", func(t *testing.T) {
		clk := clock.NewFake(epoch)
		b, err := embedded.Open("", queue.StageConfigs(), embedded.Options{Clock: clk, PollInterval: 5 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		q := b.Queue("commands")
		if _, err := q.Send(t.Context(), []queue.SendInput{{GroupID: "e1", Body: []byte("probe e1")}}); err != nil {
			t.Fatal(err)
		}
		w1, _ := q.Receive(t.Context(), queue.ReceiveInput{Max: 1, Visibility: 10 * time.Second})
		clk.Advance(11 * time.Second) // w1 still probing
		w2, _ := q.Receive(t.Context(), queue.ReceiveInput{Max: 1})
		if len(w1) != 1 || len(w2) != 1 || w2[0].ID != w1[0].ID || w2[0].ReceiveCount != 2 {
			t.Fatalf("w1=%+v w2=%+v: want the same message to reach a second worker", w1, w2)
		}
		if err := q.Delete(t.Context(), w1[0].ReceiptHandle); err != nil {
			t.Fatal(err)
		}
		if s := depth(t, q); s.InFlight != 1 {
			t.Fatalf("w1's stale delete removed the message w2 holds: %+v", s)
		}
		if err := q.ChangeVisibility(t.Context(), w1[0].ReceiptHandle, time.Minute); !errors.Is(err, queue.ErrInvalidReceipt) {
			t.Fatalf("w1 heartbeat with stale receipt: %v, want ErrInvalidReceipt", err)
		}
	})
	t.Run("heartbeat keeps it until the 12-hour cap", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			b, err := embedded.Open("", queue.StageConfigs(), embedded.Options{Clock: clock.Real{}})
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			q := b.Queue("commands")
			if _, err := q.Send(t.Context(), []queue.SendInput{{GroupID: "e1", Body: []byte("slow probe")}}); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(t.Context())
			started := make(chan queue.Message, 1)
			stop := make(chan struct{})
			done := make(chan error)
			go func() {
				done <- queue.Consume(ctx, q, func(ctx context.Context, m queue.Message) error {
					started <- m
					<-stop
					return nil
				}, queue.ConsumerOptions{Visibility: 30 * time.Second, Concurrency: 1})
			}()
			first := <-started
			receivedAt := time.Now()

			// One hour of work: far past 30s, no redelivery.
			time.Sleep(time.Hour) // synctest: advances the bubble clock only
			if ms, _ := q.Receive(t.Context(), queue.ReceiveInput{Max: 1}); len(ms) != 0 {
				t.Fatalf("redelivered after 1h despite the heartbeat: %+v", ms)
			}
			// Past 12 hours the heartbeat can no longer extend; another
			// worker gets the message with receive count 2.
			ms, err := q.Receive(t.Context(), queue.ReceiveInput{Max: 1, Wait: queue.MaxWait})
			for len(ms) == 0 && err == nil && time.Since(receivedAt) < 13*time.Hour {
				ms, err = q.Receive(t.Context(), queue.ReceiveInput{Max: 1, Wait: queue.MaxWait})
			}
			if err != nil || len(ms) != 1 || ms[0].ID != first.ID || ms[0].ReceiveCount != 2 {
				t.Fatalf("after 12h: %+v, %v; want a redelivery of %s", ms, err, first.ID)
			}
			if held := time.Since(receivedAt); held < 12*time.Hour-30*time.Second || held > 12*time.Hour+time.Minute {
				t.Fatalf("redelivered after %v, want ~12h (the cap)", held)
			}
			close(stop)
			cancel()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
		})
	})
}

// Rehearsal 5: a message that always fails is received MaxReceiveCount
// times, then moved to the DLQ; the rest of its group proceeds (the ordering
// gap the DLQ implies), and the DLQ depth shows up in the metrics for the
// alarm.
func TestRehearsal5PoisonMessageToDLQ(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, err := embedded.Open("", queue.StageConfigs(), embedded.Options{Clock: clock.Real{}})
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		q := b.Queue("results")
		if _, err := q.Send(t.Context(), []queue.SendInput{{GroupID: "e1", DedupID: "poison", Body: []byte("poison")}}); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		attempts := 0
		var handled []string
		err = queue.Consume(ctx, q, func(ctx context.Context, m queue.Message) error {
			if string(m.Body) == "poison" {
				attempts++
				if m.ReceiveCount != attempts {
					t.Errorf("attempt %d has receive count %d", attempts, m.ReceiveCount)
				}
				if attempts == 1 {
					// The next result of the endpoint arrives while the
					// poison message blocks the group. (Had it been queued
					// with the poison message, every failed receive of
					// the group would count against it too, as on SQS,
					// and it would follow the poison message to the DLQ.)
					if _, err := q.Send(ctx, []queue.SendInput{{GroupID: "e1", DedupID: "next", Body: []byte("next")}}); err != nil {
						t.Error(err)
					}
				}
				return errors.New("cannot decode")
			}
			handled = append(handled, string(m.Body))
			cancel()
			return nil
		}, queue.ConsumerOptions{Visibility: 2 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if attempts != queue.DefaultMaxReceiveCount {
			t.Fatalf("poison attempted %d times, want %d", attempts, queue.DefaultMaxReceiveCount)
		}
		if fmt.Sprint(handled) != "[next]" {
			t.Fatalf("handled %v, want [next] after the poison message left the group", handled)
		}
		dead, err := b.DLQ("results").Receive(t.Context(), queue.ReceiveInput{Max: 10})
		if err != nil || len(dead) != 1 || string(dead[0].Body) != "poison" || dead[0].GroupID != "e1" || dead[0].ReceiveCount != 1 {
			t.Fatalf("DLQ = %+v, %v; want the poison message (group e1, fresh receive count)", dead, err)
		}
		reg := prometheus.NewRegistry()
		m := queue.NewMetrics(reg)
		if err := m.UpdateDepth(t.Context(), queue.DepthSource{Name: "results", Queue: q.(queue.StatsReader), DLQ: b.DLQ("results").(queue.StatsReader)}); err != nil {
			t.Fatal(err)
		}
		if n, err := testutil.GatherAndCount(reg, "mcpmon_queue_messages"); err != nil || n == 0 {
			t.Fatalf("mcpmon_queue_messages not exported: %d, %v", n, err)
		}
		const want = `
# HELP mcpmon_queue_messages Approximate messages in the queue by kind (visible, inflight, dlq).
# TYPE mcpmon_queue_messages gauge
mcpmon_queue_messages{kind="dlq",queue="commands"} 0
mcpmon_queue_messages{kind="dlq",queue="results"} 1
mcpmon_queue_messages{kind="dlq",queue="verdicts"} 0
mcpmon_queue_messages{kind="inflight",queue="commands"} 0
mcpmon_queue_messages{kind="inflight",queue="results"} 0
mcpmon_queue_messages{kind="inflight",queue="verdicts"} 0
mcpmon_queue_messages{kind="visible",queue="commands"} 0
mcpmon_queue_messages{kind="visible",queue="results"} 0
mcpmon_queue_messages{kind="visible",queue="verdicts"} 0
`
		if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "mcpmon_queue_messages"); err != nil {
			t.Fatal(err)
		}
	})
}
