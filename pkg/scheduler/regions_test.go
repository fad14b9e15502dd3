package scheduler

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/mcpmon/mcpmon/pkg/msg"
	"github.com/mcpmon/mcpmon/pkg/queue"
	"github.com/mcpmon/mcpmon/pkg/queue/embedded"
)

// With a region set every slot reaches each due region's own commands
// queue once (two schedulers, content dedup per queue), and an endpoint
// that chose its regions reaches only those.
func TestSlotsFanOutToEachDueRegionsQueue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		regions := []string{"eu", "us", "ap"}
		broker, err := embedded.Open("", queue.StageConfigs(regions...), embedded.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer broker.Close()
		var stops []func()
		for range 2 {
			var rs []Region
			for _, r := range regions {
				pub := queue.NewPublisher(broker.Queue(msg.CommandsQueue(r)), queue.PublisherOptions{})
				defer pub.Close()
				rs = append(rs, Region{Name: r, Sender: pub})
			}
			s := New(nil, Options{Regions: rs})
			if err := s.Upsert(ep("all", "@every 10s")); err != nil {
				t.Fatal(err)
			}
			some := ep("some", "@every 10s")
			some.Regions = []string{"ap", "eu"}
			if err := s.Upsert(some); err != nil {
				t.Fatal(err)
			}
			stops = append(stops, start(t, s))
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		for _, stop := range stops {
			stop()
		}
		for _, r := range regions {
			got := map[string]int{}
			for {
				ms, err := broker.Queue(msg.CommandsQueue(r)).Receive(t.Context(), queue.ReceiveInput{Max: queue.MaxBatch})
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
					got[c.EndpointID]++
					if err := broker.Queue(msg.CommandsQueue(r)).Delete(t.Context(), m.ReceiptHandle); err != nil {
						t.Fatal(err)
					}
				}
			}
			if got["all"] != 6 {
				t.Errorf("region %s: %d commands of the endpoint of every region in a minute of @every 10s, want 6 (one per slot)", r, got["all"])
			}
			want := 6
			if r == "us" {
				want = 0
			}
			if got["some"] != want {
				t.Errorf("region %s: %d commands of the endpoint probed from ap and eu, want %d", r, got["some"], want)
			}
		}
	})
}
