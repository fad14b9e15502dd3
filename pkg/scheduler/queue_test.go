package scheduler

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/mcpmon/mcpmon/pkg/msg"
	"github.com/mcpmon/mcpmon/pkg/queue"
	"github.com/mcpmon/mcpmon/pkg/queue/embedded"
)

var _ CommandSender = (*queue.Publisher)(nil)

// Two scheduler replicas, started seconds apart and publishing through their
// own publishers to the real (embedded) commands queue, produce one message
// per endpoint slot: their bodies are identical and the queue deduplicates on
// content.
func TestTwoReplicasOneCommandPerSlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		broker, err := embedded.Open("", queue.StageConfigs(), embedded.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer broker.Close()
		q := broker.Queue(msg.QueueCommands)

		var stops []func()
		for i := range 2 {
			pub := queue.NewPublisher(q, queue.PublisherOptions{})
			defer pub.Close()
			s := New(pub, Options{})
			if err := s.Upsert(ep("ep-1", "@every 10s")); err != nil {
				t.Fatal(err)
			}
			if err := s.Upsert(ep("ep-2", "* * * * *")); err != nil {
				t.Fatal(err)
			}
			stops = append(stops, start(t, s))
			if i == 0 {
				time.Sleep(3*time.Second + 250*time.Millisecond) // the second replica starts later
			}
		}
		time.Sleep(2 * time.Minute)
		synctest.Wait()
		for _, stop := range stops {
			stop()
		}

		slots := map[string][]time.Time{}
		for {
			ms, err := q.Receive(t.Context(), queue.ReceiveInput{Max: queue.MaxBatch})
			if err != nil {
				t.Fatal(err)
			}
			if len(ms) == 0 {
				break
			}
			for _, m := range ms {
				var c msg.ProbeCommand
				if err := msg.Decode(m.Body, &c); err != nil {
					t.Fatal(err)
				}
				slots[c.EndpointID] = append(slots[c.EndpointID], c.Slot)
				if err := q.Delete(t.Context(), m.ReceiptHandle); err != nil {
					t.Fatal(err)
				}
			}
		}
		for id, want := range map[string]int{"ep-1": 12, "ep-2": 2} {
			got := slots[id]
			seen := map[time.Time]bool{}
			for _, s := range got {
				if seen[s] {
					t.Errorf("%s: slot %v delivered twice", id, s)
				}
				seen[s] = true
			}
			// ±1: the window's edges may or may not hold a slot.
			if len(got) < want-1 || len(got) > want+1 {
				t.Errorf("%s: %d commands in 2 minutes from two replicas, want ~%d (one per slot): %v", id, len(got), want, got)
			}
		}
	})
}
