package prober

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmon/mcpmon/pkg/msg"
	"github.com/mcpmon/mcpmon/pkg/queue"
	"github.com/mcpmon/mcpmon/pkg/queue/embedded"
	"github.com/mcpmon/mcpmon/pkg/store"
	"github.com/mcpmon/mcpmon/pkg/store/bolt"
)

// TestWorkerRunOnEmbeddedQueue wires the worker the way `mcpmon run` does:
// embedded commands/results queues, the bbolt store, a go-sdk server,
// the worker's handler under queue.Consume.
func TestWorkerRunOnEmbeddedQueue(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	broker, err := embedded.Open("", queue.StageConfigs(), embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer broker.Close()
	st, err := bolt.Open(filepath.Join(t.TempDir(), "mcpmon.db"), bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()

	ts := streamable(t, sdkServer(), mcp.StreamableHTTPOptions{})
	ep, err := st.CreateEndpoint(ctx, endpoint(ts.URL))
	if err != nil {
		t.Fatal(err)
	}
	pub := queue.NewPublisher(broker.Queue(msg.QueueResults), queue.PublisherOptions{})
	defer pub.Close()
	w := NewWorker(testProber(t, func(o *Options) { o.Catalogs = st }), st, pub, WorkerOptions{Latest: st})
	// The consumer loop of Worker.Run, with a word when the handler is
	// done: cancelling as soon as the result arrives would race the end of
	// Publish (the message is out before Publish returns, and a cancel then
	// makes it report the context's error and skip Remember — the
	// documented shutdown trade-off, not what this test is about).
	handled := make(chan error, 1)
	h := func(ctx context.Context, m queue.Message) error {
		err := w.Handle(ctx, m)
		handled <- err
		return err
	}
	done := make(chan error, 1)
	go func() {
		done <- queue.Consume(ctx, broker.Queue(msg.QueueCommands), h, queue.ConsumerOptions{Wait: time.Second})
	}()

	c := msg.NewProbeCommand(ep.ID, testSlot)
	if _, err := broker.Queue(msg.QueueCommands).Send(ctx, []queue.SendInput{{GroupID: c.GroupID(), Body: c.Body()}}); err != nil {
		t.Fatal(err)
	}
	got, err := broker.Queue(msg.QueueResults).Receive(ctx, queue.ReceiveInput{Max: 1, Wait: 10 * time.Second})
	if err != nil || len(got) != 1 {
		t.Fatalf("receive result: %v (%d messages)", err, len(got))
	}
	var r msg.ProbeResult
	if err := msg.Decode(got[0].Body, &r); err != nil {
		t.Fatal(err)
	}
	if r.Status != msg.StatusUp || got[0].GroupID != ep.ID || got[0].DedupID != ep.ID+"-"+c.ProbeRunID() {
		t.Fatalf("result %+v group %s dedup %s", r, got[0].GroupID, got[0].DedupID)
	}
	if err := <-handled; err != nil {
		t.Fatalf("Handle: %v", err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Consume: %v", err)
	}
	latest, err := st.LatestResult(context.Background(), ep.ID)
	if err != nil || latest.ProbeRunID != c.ProbeRunID() {
		t.Fatalf("latest result %+v %v", latest, err)
	}
	if _, err := st.GetObject(context.Background(), store.KindCatalog, ep.ID); err != nil {
		t.Fatalf("catalog not stored: %v", err)
	}
}
