package embedded_test

import (
	"context"
	"fmt"

	"github.com/mcpmon/mcpmon/pkg/queue"
	"github.com/mcpmon/mcpmon/pkg/queue/embedded"
)

// A producer retry within five minutes collapses into the original message;
// a consumer handles each message of a group in order.
func Example() {
	ctx := context.Background()
	b, err := embedded.Open("", queue.StageConfigs(), embedded.Options{}) // "" = in memory; a dir persists
	if err != nil {
		panic(err)
	}
	defer b.Close()
	results := b.Queue("results")

	pub := queue.NewPublisher(results, queue.PublisherOptions{})
	first, _ := pub.Publish(ctx, queue.SendInput{GroupID: "ep-1", DedupID: "ep-1-run-1", Body: []byte("down")})
	retry, _ := pub.Publish(ctx, queue.SendInput{GroupID: "ep-1", DedupID: "ep-1-run-1", Body: []byte("down")})
	_, _ = pub.Publish(ctx, queue.SendInput{GroupID: "ep-1", DedupID: "ep-1-run-2", Body: []byte("up")})
	pub.Close()
	fmt.Println("retry returned the original ID:", retry == first)

	ctx, cancel := context.WithCancel(ctx)
	n := 0
	_ = queue.Consume(ctx, results, func(_ context.Context, m queue.Message) error {
		fmt.Println(m.DedupID, string(m.Body))
		if n++; n == 2 {
			cancel()
		}
		return nil
	}, queue.ConsumerOptions{})
	// Output:
	// retry returned the original ID: true
	// ep-1-run-1 down
	// ep-1-run-2 up
}
