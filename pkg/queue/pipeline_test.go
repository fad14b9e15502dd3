package queue_test

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mcpmon/mcpmon/pkg/clock"
	"github.com/mcpmon/mcpmon/pkg/queue"
	"github.com/mcpmon/mcpmon/pkg/queue/embedded"
)

// countingQueue counts calls so tests can check batching.
type countingQueue struct {
	queue.Queue
	mu                       sync.Mutex
	sends, receives, deletes int
	deleted                  int
}

func (c *countingQueue) Send(ctx context.Context, in []queue.SendInput) ([]queue.SendResult, error) {
	c.mu.Lock()
	c.sends++
	c.mu.Unlock()
	return c.Queue.Send(ctx, in)
}

func (c *countingQueue) Receive(ctx context.Context, in queue.ReceiveInput) ([]queue.Message, error) {
	c.mu.Lock()
	c.receives++
	c.mu.Unlock()
	return c.Queue.Receive(ctx, in)
}

func (c *countingQueue) Delete(ctx context.Context, r ...string) error {
	c.mu.Lock()
	c.deletes++
	c.deleted += len(r)
	c.mu.Unlock()
	return c.Queue.Delete(ctx, r...)
}

func openResults(t *testing.T) *embedded.Broker {
	t.Helper()
	b, err := embedded.Open("", queue.StageConfigs(), embedded.Options{Clock: clock.Real{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

// TestPublishConsumeOrderedAndBatched pushes 500 results for 25 endpoints
// through Publisher → embedded queue → Consume and checks that every result
// is handled once, in order within its endpoint, with batched calls.
func TestPublishConsumeOrderedAndBatched(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const endpoints, perEndpoint = 25, 20
		b := openResults(t)
		q := &countingQueue{Queue: b.Queue("results")}
		reg := prometheus.NewRegistry()
		m := queue.NewMetrics(reg)
		pub := queue.NewPublisher(q, queue.PublisherOptions{Metrics: m})

		var wg sync.WaitGroup
		for e := range endpoints {
			wg.Go(func() {
				for i := range perEndpoint {
					_, err := pub.Publish(t.Context(), queue.SendInput{
						GroupID: fmt.Sprint("e", e),
						DedupID: fmt.Sprintf("e%d-run%d", e, i),
						Body:    []byte(strconv.Itoa(i)),
					})
					if err != nil {
						t.Error(err)
					}
				}
			})
		}
		wg.Wait()
		if err := pub.Close(); err != nil {
			t.Fatal(err)
		}

		ctx, cancel := context.WithCancel(t.Context())
		var mu sync.Mutex
		last := map[string]int{}
		handled := 0
		h := func(_ context.Context, msg queue.Message) error {
			mu.Lock()
			defer mu.Unlock()
			n, _ := strconv.Atoi(string(msg.Body))
			if prev, ok := last[msg.GroupID]; ok && n != prev+1 {
				t.Errorf("group %s: %d after %d", msg.GroupID, n, prev)
			}
			last[msg.GroupID] = n
			handled++
			if handled == endpoints*perEndpoint {
				cancel()
			}
			return nil
		}
		if err := queue.Consume(ctx, q, h, queue.ConsumerOptions{Metrics: m}); err != nil {
			t.Fatal(err)
		}
		if handled != endpoints*perEndpoint {
			t.Fatalf("handled %d, want %d", handled, endpoints*perEndpoint)
		}
		if q.deleted != handled {
			t.Fatalf("deleted %d, want %d", q.deleted, handled)
		}
		total := endpoints * perEndpoint
		if q.sends > total/10+endpoints {
			t.Errorf("%d send calls for %d messages: not batched", q.sends, total)
		}
		if q.deletes > total/5 {
			t.Errorf("%d delete calls for %d messages: not batched", q.deletes, total)
		}
		if got := counter(t, reg, "mcpmon_queue_sends_total", "results"); got != float64(total) {
			t.Errorf("mcpmon_queue_sends_total = %v, want %d", got, total)
		}
		t.Logf("calls for %d messages: %d sends, %d receives, %d deletes", total, q.sends, q.receives, q.deletes)
		if s, _ := b.Queue("results").(queue.StatsReader).Stats(t.Context()); s.Visible+s.InFlight != 0 {
			t.Errorf("queue not empty: %+v", s)
		}
	})
}

// TestConsumerFailureKeepsGroupOrder: a failed message stays in flight, the
// rest of its group in the batch is released, and the group resumes with
// the failed message once its visibility lapses.
func TestConsumerFailureKeepsGroupOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := openResults(t)
		q := b.Queue("results")
		for i := range 3 {
			if _, err := q.Send(t.Context(), []queue.SendInput{{GroupID: "g", DedupID: fmt.Sprint(i), Body: []byte(strconv.Itoa(i))}}); err != nil {
				t.Fatal(err)
			}
		}
		ctx, cancel := context.WithCancel(t.Context())
		var seen []string
		failed := false
		h := func(_ context.Context, m queue.Message) error {
			seen = append(seen, fmt.Sprintf("%s#%d", m.Body, m.ReceiveCount))
			if string(m.Body) == "1" && !failed {
				failed = true
				return fmt.Errorf("transient")
			}
			if string(m.Body) == "2" {
				cancel()
			}
			return nil
		}
		start := time.Now()
		if err := queue.Consume(ctx, q, h, queue.ConsumerOptions{Visibility: 5 * time.Second, Concurrency: 1}); err != nil {
			t.Fatal(err)
		}
		got := strings.Join(seen, " ")
		if got != "0#1 1#1 1#2 2#2" {
			t.Fatalf("handled %q, want \"0#1 1#1 1#2 2#2\"", got)
		}
		if waited := time.Since(start); waited < 5*time.Second {
			t.Errorf("failed message came back after %v, before its 5s visibility", waited)
		}
	})
}

func counter(t *testing.T, reg *prometheus.Registry, name, queueName string) float64 {
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

// TestConsumerConcurrencyAcrossGroups: different groups are handled in
// parallel up to Concurrency, never more.
func TestConsumerConcurrencyAcrossGroups(t *testing.T) {
	for _, conc := range []int{1, 3} {
		t.Run(fmt.Sprint("concurrency=", conc), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := openResults(t)
				q := b.Queue("results")
				var in []queue.SendInput
				for g := range 6 {
					in = append(in, queue.SendInput{GroupID: fmt.Sprint("g", g), DedupID: fmt.Sprint(g), Body: []byte("x")})
				}
				if _, err := q.Send(t.Context(), in); err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithCancel(t.Context())
				var mu sync.Mutex
				running, peak, done := 0, 0, 0
				h := func(context.Context, queue.Message) error {
					mu.Lock()
					running++
					peak = max(peak, running)
					mu.Unlock()
					time.Sleep(time.Second) // synctest: the work takes a second of bubble time
					mu.Lock()
					running--
					if done++; done == 6 {
						cancel()
					}
					mu.Unlock()
					return nil
				}
				start := time.Now()
				if err := queue.Consume(ctx, q, h, queue.ConsumerOptions{Concurrency: conc}); err != nil {
					t.Fatal(err)
				}
				if peak != conc {
					t.Fatalf("peak parallel groups = %d, want %d", peak, conc)
				}
				if took, want := time.Since(start), time.Duration(6/conc)*time.Second; took < want || took > want+time.Second {
					t.Fatalf("6 one-second messages took %v with concurrency %d, want ~%v", took, conc, want)
				}
			})
		})
	}
}

// TestConsumerHandlesOnLongLivedWorkers: every message of every group runs
// on one of Concurrency goroutines that outlive it, so a handler's grown
// stack is kept from one message to the next instead of regrown (and
// copied at each doubling) on a fresh goroutine per group.
func TestConsumerHandlesOnLongLivedWorkers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := openResults(t)
		q := b.Queue("results")
		const conc, groups = 3, 40
		var in []queue.SendInput
		for g := range groups {
			in = append(in, queue.SendInput{GroupID: fmt.Sprint("g", g), DedupID: fmt.Sprint(g), Body: []byte("x")})
			if len(in) == queue.MaxBatch {
				if _, err := q.Send(t.Context(), in); err != nil {
					t.Fatal(err)
				}
				in = nil
			}
		}
		if _, err := q.Send(t.Context(), in); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		var mu sync.Mutex
		seen, done := map[string]bool{}, 0
		h := func(context.Context, queue.Message) error {
			buf := make([]byte, 64)
			id, _, _ := strings.Cut(strings.TrimPrefix(string(buf[:runtime.Stack(buf, false)]), "goroutine "), " ")
			mu.Lock()
			defer mu.Unlock()
			seen[id] = true
			if done++; done == groups {
				cancel()
			}
			return nil
		}
		if err := queue.Consume(ctx, q, h, queue.ConsumerOptions{Concurrency: conc}); err != nil {
			t.Fatal(err)
		}
		if done != groups || len(seen) > conc {
			t.Fatalf("%d messages of %d groups ran on %d goroutines, want at most %d", done, groups, len(seen), conc)
		}
	})
}

// TestConsumerHoldsMessagesThroughAnOutage: while the handler fails with a
// transient error (a store outage) the message is retried in place — never
// redelivered, so its receive count stays 1 and an outage longer than
// maxReceiveCount visibility timeouts cannot move it, or the messages behind
// it in its group, to the dead-letter queue.
func TestConsumerHoldsMessagesThroughAnOutage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, err := embedded.Open("", []queue.Config{{Name: "results", VisibilityTimeout: 5 * time.Second, MaxReceiveCount: 2}}, embedded.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		q := b.Queue("results")
		for i := range 2 {
			if _, err := q.Send(t.Context(), []queue.SendInput{{GroupID: "g", DedupID: fmt.Sprint(i), Body: []byte(strconv.Itoa(i))}}); err != nil {
				t.Fatal(err)
			}
		}
		errDown := fmt.Errorf("store unavailable")
		outageEnds := time.Now().Add(10 * time.Minute) // 120 visibility timeouts
		ctx, cancel := context.WithCancel(t.Context())
		defer time.AfterFunc(15*time.Minute, cancel).Stop() // bound the test if messages are lost
		var handled []string
		h := func(_ context.Context, m queue.Message) error {
			if time.Now().Before(outageEnds) {
				return errDown
			}
			handled = append(handled, fmt.Sprintf("%s#%d", m.Body, m.ReceiveCount))
			if len(handled) == 2 {
				cancel()
			}
			return nil
		}
		err = queue.Consume(ctx, q, h, queue.ConsumerOptions{
			Visibility: 5 * time.Second, Concurrency: 1,
			Transient: func(err error) bool { return err == errDown },
		})
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(handled, " "); got != "0#1 1#1" {
			t.Fatalf("handled %q, want both messages on their first receive (\"0#1 1#1\")", got)
		}
		if dlq, _ := b.DLQ("results").Receive(t.Context(), queue.ReceiveInput{Max: 10}); len(dlq) != 0 {
			t.Fatalf("%d messages in the DLQ after the outage", len(dlq))
		}
	})
}
