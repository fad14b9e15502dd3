package hostcheck_test

import (
	"bytes"
	"context"
	"encoding/json"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mcpmon/mcpmon/pkg/hostcheck"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/store"
)

// memPages is a store of status pages in memory.
type memPages struct {
	mu   sync.Mutex
	docs map[string][]byte
	puts int
}

func (m *memPages) ListObjects(_ context.Context, kind string) (map[string][]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string][]byte{}
	for id, d := range m.docs {
		out[id] = d
	}
	return out, nil
}

func (m *memPages) GetObject(_ context.Context, kind, id string) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	d, ok := m.docs[id]
	if !ok {
		return nil, model.ErrNotFound
	}
	return d, nil
}

func (m *memPages) PutObject(_ context.Context, kind, id string, doc []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if kind != store.KindStatusPage {
		panic(kind)
	}
	m.docs[id] = doc
	m.puts++
	return nil
}

func (m *memPages) SwapObject(_ context.Context, kind, id string, old, doc []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	cur, ok := m.docs[id]
	switch {
	case kind != store.KindStatusPage:
		panic(kind)
	case !ok:
		return model.ErrNotFound
	case !bytes.Equal(cur, old):
		return store.ErrConflict
	}
	m.docs[id] = doc
	m.puts++
	return nil
}

func (m *memPages) writes() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.puts
}

type txt []string

func (r txt) LookupTXT(context.Context, string) ([]string, error) { return r, nil }

// TestRunLooksAgainEachInterval: Run does a round at once and then one
// every `every`, so a host falls due and is looked at within a round of
// its due time, and Run returns when its context ends.
func TestRunLooksAgainEachInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		p := page("p1", "status.run.test", "tok", start.Add(-pol.Interval))
		doc, _ := json.Marshal(p)
		st := &memPages{docs: map[string][]byte{"p1": doc}}
		c := hostcheck.New(hostcheck.Options{Store: st, Resolver: txt{"mcpmon-verify=tok"}, Policy: pol, NewToken: func() string { return "x" }})
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error)
		go func() { done <- c.Run(ctx, time.Minute) }()

		synctest.Wait()
		if st.writes() != 1 {
			t.Fatalf("%d writes after the first round, want the due host looked at once", st.writes())
		}
		time.Sleep(pol.Interval - time.Second) // within the bubble: the fake clock, no real wait
		synctest.Wait()
		if st.writes() != 1 {
			t.Fatalf("%d writes before the host is due again", st.writes())
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		if st.writes() != 2 {
			t.Fatalf("%d writes a round after the host fell due again, want 2", st.writes())
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("Run: %v", err)
		}
	})
}
