package prober

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/mcpmon/mcpmon/pkg/clock"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/msg"
	"github.com/mcpmon/mcpmon/pkg/schedule"
)

func TestOverShare(t *testing.T) {
	for _, tc := range []struct {
		name        string
		held, slots int
		late        time.Duration
		others      int
		want        bool
	}{
		{"under its share", 11, 16, time.Minute, 1, false},
		{"at its share, contended", 12, 16, 2 * time.Second, 1, true},
		{"at its share, on time", 12, 16, time.Second, 1, false},
		{"alone: every slot", 15, 16, time.Minute, 0, false},
		{"one slot: an idle tenant may take it", 0, 1, time.Minute, 3, false},
		{"two slots: one each", 1, 2, time.Minute, 1, true},
	} {
		if got := OverShare(tc.held, tc.slots, tc.late, tc.others); got != tc.want {
			t.Errorf("%s: OverShare(%d, %d, %v, %d) = %v, want %v", tc.name, tc.held, tc.slots, tc.late, tc.others, got, tc.want)
		}
	}
}

// TestTenantOverItsShareIsSkipped: with probe slots contended (commands
// received late), a tenant whose targets hang holds at most its share of
// the slots; its next command is skipped at once and counted, and another
// tenant's command is still probed. Alone, a tenant may hold every slot.
func TestTenantOverItsShareIsSkipped(t *testing.T) {
	arrived, release := make(chan struct{}, 8), make(chan struct{})
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		select {
		case <-release:
		case <-r.Context().Done():
		}
		http.Error(w, "gone", http.StatusServiceUnavailable)
	}))
	t.Cleanup(hang.Close)
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	t.Cleanup(free) // before hang.Close, which waits for its handlers
	ok := streamable(t, sdkServer(), mcp.StreamableHTTPOptions{JSONResponse: true})

	// A fixed future time: deadlines are real-clock contexts, and the
	// hanging probes must last until released.
	now := time.Date(2030, 1, 1, 0, 0, 30, 0, time.UTC)
	slot := now.Add(-3 * time.Second) // received 3 s late: contended
	eps := endpointsFake{}
	add := func(id, tenant, url string) {
		e := model.Endpoint{ID: id, Tenant: tenant, URL: url, Transport: TransportAuto, Timeout: 5 * time.Second, Schedule: "@every 1h"}
		sl, err := schedule.New(id, e.Schedule)
		if err != nil || Superseded(sl, slot, now) {
			t.Fatalf("endpoint %s: its slot is superseded at the test's time (%v); pick another ID", id, err)
		}
		eps[id] = e
	}
	for _, id := range []string{"a1", "a2", "a3", "a4"} {
		add(id, "hostile", hang.URL)
	}
	add("b1", "other", ok.URL)

	handle := func(w *Worker, id string) <-chan error {
		done := make(chan error, 1)
		go func() { done <- w.Handle(context.Background(), message(msg.NewProbeCommand(id, slot))) }()
		return done
	}
	pub := &publisherFake{}
	m := NewWorkerMetrics(prometheus.NewRegistry())
	w := NewWorker(testProber(t, nil), eps, pub, WorkerOptions{Clock: clock.NewFake(now), Metrics: m, Slots: 4})
	if err := <-handle(w, "b1"); err != nil || len(pub.sent) != 1 {
		t.Fatalf("the other tenant's first command: %v, %d published", err, len(pub.sent))
	}
	var held sync.WaitGroup
	for _, id := range []string{"a1", "a2", "a3"} { // ShareOf(4) = 3
		done := handle(w, id)
		held.Go(func() { <-done })
		<-arrived
	}
	select {
	case err := <-handle(w, "a4"):
		if err != nil {
			t.Fatalf("a4: %v, want nil (skipped)", err)
		}
	case <-arrived:
		t.Fatal("a4 was probed although its tenant held its share of contended slots")
	}
	if got := testutil.ToFloat64(m.skipped.WithLabelValues(SkipTenantShare)); got != 1 {
		t.Errorf("tenant_share skips = %v, want 1", got)
	}
	if err := <-handle(w, "b1"); err != nil || len(pub.sent) != 2 {
		t.Fatalf("the other tenant's command while the hostile one holds its share: %v, %d published, want probed", err, len(pub.sent))
	}

	// Alone (no other tenant seen), the tenant may take every slot.
	alone := NewWorker(testProber(t, nil), eps, &publisherFake{}, WorkerOptions{Clock: clock.NewFake(now), Metrics: m, Slots: 4})
	for _, id := range []string{"a1", "a2", "a3", "a4"} {
		done := handle(alone, id)
		held.Go(func() { <-done })
		<-arrived
	}
	free()
	held.Wait()
}
