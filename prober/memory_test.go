package prober

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmon/mcpmon/pkg/msg"
	"github.com/mcpmon/mcpmon/pkg/queue"
)

// flakyPublisher fails its first fails publishes, then records.
type flakyPublisher struct {
	publisherFake
	fails int
}

func (p *flakyPublisher) Publish(ctx context.Context, in queue.SendInput) (string, error) {
	if p.fails > 0 {
		p.fails--
		return "", errors.New("queue unavailable")
	}
	return p.publisherFake.Publish(ctx, in)
}

// TestCatalogChangeSurvivesAFailedPublish: the probe that sees a changed tool
// catalog fails to publish its result; the redelivered command probes again
// and its result still carries the change, exactly once across the run. The
// new catalog is remembered only after a publish succeeds.
func TestCatalogChangeSurvivesAFailedPublish(t *testing.T) {
	srv := sdkServer()
	ts := streamable(t, srv, mcp.StreamableHTTPOptions{JSONResponse: true})
	ep := endpoint(ts.URL)
	objs := &objectsFake{m: map[string][]byte{}}
	pub := &flakyPublisher{}
	w := NewWorker(testProber(t, func(o *Options) { o.Catalogs = objs }), endpointsFake{"ep1": ep}, pub, WorkerOptions{})
	handle := func(slot time.Time) error {
		return w.Handle(context.Background(), message(msg.NewProbeCommand("ep1", slot)))
	}

	if err := handle(testSlot); err != nil { // first sight: remembered, no event
		t.Fatal(err)
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "search", Description: "Search the docs."},
		func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{}, nil, nil
		})
	next := testSlot.Add(time.Minute)
	pub.fails = 1
	if err := handle(next); err == nil {
		t.Fatal("Handle with a failing publish = nil, want an error (left for redelivery)")
	}
	if err := handle(next); err != nil { // the redelivery
		t.Fatal(err)
	}
	if err := handle(next.Add(time.Minute)); err != nil { // unchanged since
		t.Fatal(err)
	}

	changes := 0
	for _, in := range pub.sent {
		var r msg.ProbeResult
		if err := msg.Decode(in.Body, &r); err != nil {
			t.Fatal(err)
		}
		for _, ev := range r.Events {
			if ev.Kind == EventCatalogChanged {
				changes++
			}
		}
	}
	if len(pub.sent) != 3 || changes != 1 {
		t.Fatalf("%d results published with %d catalog_changed events, want 3 results and exactly 1 event", len(pub.sent), changes)
	}
}
