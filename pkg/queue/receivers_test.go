package queue_test

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/mcpmon/mcpmon/pkg/queue"
)

// waitingQueue counts the receives waiting at once.
type waitingQueue struct {
	queue.Queue
	mu            sync.Mutex
	waiting, most int
}

func (w *waitingQueue) Receive(ctx context.Context, in queue.ReceiveInput) ([]queue.Message, error) {
	w.mu.Lock()
	w.waiting++
	w.most = max(w.most, w.waiting)
	w.mu.Unlock()
	defer func() {
		w.mu.Lock()
		w.waiting--
		w.mu.Unlock()
	}()
	return w.Queue.Receive(ctx, in)
}

// TestReceiversWaitAtOnce: a consumer with Receivers 3 keeps three
// receives waiting on an empty queue (one by default), and with them
// handles every message once, in order within its group.
func TestReceiversWaitAtOnce(t *testing.T) {
	for _, receivers := range []int{0, 3} {
		t.Run(fmt.Sprint("receivers=", receivers), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const groups, perGroup = 20, 10
				q := &waitingQueue{Queue: openResults(t).Queue("results")}
				var mu sync.Mutex
				got := map[string][]int{}
				handled := make(chan struct{}, groups*perGroup)
				ctx, cancel := context.WithCancel(t.Context())
				done := make(chan error, 1)
				go func() {
					done <- queue.Consume(ctx, q, func(_ context.Context, m queue.Message) error {
						n, _ := strconv.Atoi(string(m.Body))
						mu.Lock()
						got[m.GroupID] = append(got[m.GroupID], n)
						mu.Unlock()
						handled <- struct{}{}
						return nil
					}, queue.ConsumerOptions{Concurrency: 30, Receivers: receivers})
				}()
				synctest.Wait()
				q.mu.Lock()
				waiting := q.waiting
				q.mu.Unlock()
				if want := max(1, receivers); waiting != want {
					t.Fatalf("%d receives waiting on an empty queue, want %d", waiting, want)
				}
				for i := range perGroup {
					for g := range groups {
						_, err := q.Send(t.Context(), []queue.SendInput{{GroupID: fmt.Sprint("g", g), DedupID: fmt.Sprintf("g%d-%d", g, i), Body: []byte(strconv.Itoa(i))}})
						if err != nil {
							t.Fatal(err)
						}
					}
				}
				for range groups * perGroup {
					<-handled
				}
				cancel()
				if err := <-done; err != nil {
					t.Fatal(err)
				}
				for g, ns := range got {
					for i, n := range ns {
						if n != i {
							t.Fatalf("group %s handled %v, want 0..%d in order, once each", g, ns, perGroup-1)
						}
					}
					if len(ns) != perGroup {
						t.Fatalf("group %s handled %v, want %d messages", g, ns, perGroup)
					}
				}
			})
		})
	}
}
