package prober

import (
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/mcpmon/mcpmon/pkg/clock"
	"github.com/mcpmon/mcpmon/pkg/msg"
	"github.com/mcpmon/mcpmon/pkg/schedule"
)

// TestWorkerSkipsSupersededSlot: a command whose endpoint's next slot is
// already due is dropped without probing (a hung probe, a killed replica or
// a store outage left it queued), counted, and the current slot's command
// is probed as usual.
func TestWorkerSkipsSupersededSlot(t *testing.T) {
	ts := streamable(t, sdkServer(), mcp.StreamableHTTPOptions{JSONResponse: true})
	ep := endpoint(ts.URL)
	ep.Schedule = "@every 2s"
	sl, err := schedule.New(ep.ID, ep.Schedule)
	if err != nil {
		t.Fatal(err)
	}
	slot := sl.Next(testSlot)
	clk := clock.NewFake(slot)
	pub := &publisherFake{}
	m := NewWorkerMetrics(prometheus.NewRegistry())
	w := NewWorker(testProber(t, nil), endpointsFake{"ep1": ep}, pub, WorkerOptions{Clock: clk, Metrics: m})

	for _, tc := range []struct {
		name      string
		late      time.Duration
		published int
		skipped   float64
	}{
		{"received at its slot", 0, 1, 0},
		{"received late but before the next slot", 1900 * time.Millisecond, 2, 0},
		{"received at the next slot", 2 * time.Second, 2, 1},
		{"received minutes late", 3 * time.Minute, 2, 2},
	} {
		clk.Set(slot.Add(tc.late))
		if err := w.Handle(context.Background(), message(msg.NewProbeCommand("ep1", slot))); err != nil {
			t.Fatalf("%s: Handle = %v, want nil", tc.name, err)
		}
		if len(pub.sent) != tc.published {
			t.Errorf("%s: %d results published, want %d", tc.name, len(pub.sent), tc.published)
		}
		if got := testutil.ToFloat64(m.skipped.WithLabelValues(SkipSuperseded)); got != tc.skipped {
			t.Errorf("%s: skipped counter %v, want %v", tc.name, got, tc.skipped)
		}
	}
}

func TestProbeDeadline(t *testing.T) {
	slot := testSlot
	for _, tc := range []struct {
		name     string
		received time.Duration // after the slot
		timeout  time.Duration
		want     time.Duration // deadline after the slot
	}{
		{"on time: slot + timeout", 0, 5 * time.Second, 5 * time.Second},
		{"a little late: still slot + timeout", time.Second, 5 * time.Second, 5 * time.Second},
		{"very late: half the timeout from receipt", 4 * time.Second, 5 * time.Second, 6500 * time.Millisecond},
	} {
		got := ProbeDeadline(slot, slot.Add(tc.received), tc.timeout).Sub(slot)
		if got != tc.want {
			t.Errorf("%s: deadline slot+%s, want slot+%s", tc.name, got, tc.want)
		}
	}
}

// TestWorkerHungTargetIsDownAtSlotPlusTimeout: a target that accepts and
// never answers yields a published timeout result (down), not an
// interrupted probe left for redelivery, and the probe ends at the slot's
// deadline rather than a full timeout after a late receipt.
func TestWorkerHungTargetIsDownAtSlotPlusTimeout(t *testing.T) {
	ep := handlerEP(t, func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		<-r.Context().Done()
	})
	ep.Timeout = 2 * time.Second
	ep.Schedule = "@every 2s"
	// The command is received 1.5 s after its slot: the probe has 0.5 s
	// left before slot + timeout, but at least half the timeout (1 s).
	sl, err := schedule.New(ep.ID, ep.Schedule)
	if err != nil {
		t.Fatal(err)
	}
	slot := sl.Next(time.Now().Add(-2 * time.Second))
	now := slot.Add(1500 * time.Millisecond)
	pub := &publisherFake{}
	w := NewWorker(testProber(t, nil), endpointsFake{ep.ID: ep}, pub, WorkerOptions{Clock: clock.NewFake(now)})
	c := msg.NewProbeCommand(ep.ID, slot)
	if err := w.Handle(context.Background(), message(c)); err != nil {
		t.Fatalf("Handle = %v, want nil (a timeout is a result)", err)
	}
	if len(pub.sent) != 1 {
		t.Fatalf("%d results published, want 1", len(pub.sent))
	}
	var r msg.ProbeResult
	if err := msg.Decode(pub.sent[0].Body, &r); err != nil {
		t.Fatal(err)
	}
	if r.Status != msg.StatusDown || r.Class != ClassTimeout {
		t.Fatalf("status %s class %s (%s), want down/timeout", r.Status, r.Class, r.Error)
	}
	deadline := ProbeDeadline(slot, now, ep.Timeout)
	if over := r.FinishedAt.Sub(deadline); over > ep.Timeout/2 {
		t.Errorf("probe finished %s after its deadline; it should end at the deadline", over)
	}
}
