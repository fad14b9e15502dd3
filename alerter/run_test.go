package alerter

import (
	"context"
	"encoding/json"
	"path/filepath"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mcpmon/mcpmon/pkg/alert"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/msg"
	"github.com/mcpmon/mcpmon/pkg/queue"
	"github.com/mcpmon/mcpmon/pkg/store/bolt"
)

// memSink records notifications in memory: inside a synctest bubble a
// network round trip would not let fake time advance deterministically.
type memSink struct {
	mu  sync.Mutex
	got []alert.Notification
}

func (s *memSink) Name() string { return "mem" }

func (s *memSink) Notify(_ context.Context, n alert.Notification) error {
	s.mu.Lock()
	s.got = append(s.got, n)
	s.mu.Unlock()
	return nil
}

func (s *memSink) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.got)
}

// TestRunSweepsDeferredAtMaintenanceEnd: no verdict arrives after the
// maintenance window, yet Run's own ticker delivers the deferred open
// within one sweep interval of the window's end.
func TestRunSweepsDeferredAtMaintenanceEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		st, err := bolt.Open(filepath.Join(t.TempDir(), "s.db"), bolt.Options{SweepInterval: -1})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		if _, err := st.CreateEndpoint(ctx, model.Endpoint{ID: "ep1", URL: "https://ep1.example/mcp"}); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		doc, _ := json.Marshal(model.Maintenance{ID: "m", EndpointIDs: []string{"ep1"}, Start: start.Add(-time.Minute), End: start.Add(3 * time.Minute)})
		if err := st.PutObject(ctx, model.MaintenanceKind, "m", doc); err != nil {
			t.Fatal(err)
		}
		sink := &memSink{}
		a, err := New(Options{Store: st, Sinks: []alert.Sink{sink}, Owner: "a", SweepInterval: 30 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		w := start.Truncate(time.Minute)
		for i := range 2 {
			v := verdict("ep1", w.Add(time.Duration(i-2)*time.Minute), msg.StateDown)
			if err := a.Handle(ctx, queue.Message{ID: v.DedupID(), Body: v.Body()}); err != nil {
				t.Fatal(err)
			}
		}
		runCtx, cancel := context.WithCancel(ctx)
		done := make(chan error)
		go func() { done <- a.Run(runCtx) }()

		time.Sleep(2*time.Minute + 50*time.Second) // inside the window
		synctest.Wait()
		if n := sink.count(); n != 0 {
			t.Fatalf("%d notifications during maintenance, want 0", n)
		}
		time.Sleep(time.Minute) // past the end by more than one sweep interval
		synctest.Wait()
		if n := sink.count(); n != 1 {
			t.Fatalf("%d notifications after maintenance, want the deferred open once", n)
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("Run = %v, want nil on cancel", err)
		}
	})
}
