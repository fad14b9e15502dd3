package scheduler

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/msg"
	"github.com/mcpmon/mcpmon/pkg/queue"
	"github.com/mcpmon/mcpmon/pkg/queue/embedded"
)

// receiveCommands drains q and returns its commands.
func receiveCommands(t *testing.T, q queue.Queue) []msg.ProbeCommand {
	t.Helper()
	var out []msg.ProbeCommand
	for {
		ms, err := q.Receive(t.Context(), queue.ReceiveInput{Max: queue.MaxBatch})
		if err != nil {
			t.Fatal(err)
		}
		if len(ms) == 0 {
			return out
		}
		for _, m := range ms {
			var c msg.ProbeCommand
			if err := msg.Decode(m.Body, &c); err != nil {
				t.Fatal(err)
			}
			out = append(out, c)
			if err := q.Delete(t.Context(), m.ReceiptHandle); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestProbeNowPublishesToEachDueRegion: a probe on demand is an ordinary
// command for the whole second, sent to the queues of the regions the
// endpoint is probed from, and two calls in one second are one command
// (the queue's content dedup).
func TestProbeNowPublishesToEachDueRegion(t *testing.T) {
	regions := []string{"eu", "us", "ap"}
	broker, err := embedded.Open("", queue.StageConfigs(regions...), embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer broker.Close()
	var rs []Region
	for _, r := range regions {
		pub := queue.NewPublisher(broker.Queue(msg.CommandsQueue(r)), queue.PublisherOptions{})
		defer pub.Close()
		rs = append(rs, Region{Name: r, Sender: pub})
	}
	s := New(nil, Options{Regions: rs})
	e := ep("some", "@every 1h")
	e.Regions = []string{"ap", "eu"}
	at := time.Date(2026, 3, 1, 12, 0, 7, 400e6, time.UTC)
	for range 2 {
		if err := s.ProbeNow(t.Context(), e, at); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range regions {
		got := receiveCommands(t, broker.Queue(msg.CommandsQueue(r)))
		if r == "us" {
			if len(got) != 0 {
				t.Errorf("region us: %d commands of an endpoint probed from ap and eu", len(got))
			}
			continue
		}
		if len(got) != 1 || got[0] != msg.NewProbeCommand("some", at.Truncate(time.Second)) {
			t.Errorf("region %s: commands %+v, want one for slot %s", r, got, at.Truncate(time.Second))
		}
	}
}

type failingSender struct{}

func (failingSender) Publish(context.Context, queue.SendInput) (string, error) {
	return "", errors.New("queue down")
}

// TestProbeNowReportsAFailedSend: the caller learns that no probe was
// asked for, and of which endpoint.
func TestProbeNowReportsAFailedSend(t *testing.T) {
	s := New(failingSender{}, Options{})
	err := s.ProbeNow(t.Context(), ep("ep1", "@every 1m"), time.Now())
	if err == nil || !strings.Contains(err.Error(), "ep1") || !strings.Contains(err.Error(), "queue down") {
		t.Fatalf("ProbeNow with a failing queue = %v, want the endpoint and the cause", err)
	}
}
