package prober

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/msg"
	"github.com/mcpmon/mcpmon/pkg/store"
)

// outageEndpoints serves its endpoints until down is set, then fails every
// read with store.ErrUnavailable, as the Redis store does in an outage.
type outageEndpoints struct {
	endpointsFake
	down bool
}

func (o *outageEndpoints) GetEndpoint(ctx context.Context, id string) (model.Endpoint, error) {
	if o.down {
		return model.Endpoint{}, store.ErrUnavailable
	}
	return o.endpointsFake.GetEndpoint(ctx, id)
}

// TestWorkerProbesThroughAStoreOutage: while the store is unavailable the
// worker probes with the endpoint as last loaded and publishes the result
// (the queue is not the store), so an outage of the target that overlaps a
// store outage still gets its down results. An endpoint never loaded
// before the outage is left for redelivery.
func TestWorkerProbesThroughAStoreOutage(t *testing.T) {
	ts := streamable(t, sdkServer(), mcp.StreamableHTTPOptions{JSONResponse: true})
	eps := &outageEndpoints{endpointsFake: endpointsFake{"ep1": endpoint(ts.URL), "ep2": endpoint(ts.URL)}}
	pub := &publisherFake{}
	w := NewWorker(testProber(t, nil), eps, pub, WorkerOptions{Latest: &latestFake{m: map[string]msg.ProbeResult{}}})
	handle := func(id string, slot time.Time) error {
		return w.Handle(context.Background(), message(msg.NewProbeCommand(id, slot)))
	}
	if err := handle("ep1", testSlot); err != nil {
		t.Fatal(err)
	}
	eps.down = true
	if err := handle("ep1", testSlot.Add(time.Minute)); err != nil {
		t.Fatalf("Handle during a store outage = %v, want the probe run from the known endpoint", err)
	}
	if len(pub.sent) != 2 {
		t.Fatalf("%d results published, want 2", len(pub.sent))
	}
	if err := handle("ep2", testSlot); !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("Handle of an endpoint never loaded = %v, want ErrUnavailable (held for redelivery)", err)
	}
}
