package queue_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mcpmon/mcpmon/pkg/queue"
)

// flakyEntries fails chosen dedup IDs once with a transient, server-side
// error (as SendMessageBatch reports a per-entry InternalError) and records
// every batch the publisher sends.
type flakyEntries struct {
	queue.Queue
	mu      sync.Mutex
	failOne map[string]bool
	batches [][]queue.SendInput
}

func (f *flakyEntries) Send(ctx context.Context, in []queue.SendInput) ([]queue.SendResult, error) {
	f.mu.Lock()
	f.batches = append(f.batches, append([]queue.SendInput(nil), in...))
	var pass []queue.SendInput
	var idx []int
	out := make([]queue.SendResult, len(in))
	for i, m := range in {
		if f.failOne[m.DedupID] {
			delete(f.failOne, m.DedupID)
			out[i].Err = errors.New("InternalError: entry failed by the server")
			continue
		}
		pass = append(pass, m)
		idx = append(idx, i)
	}
	f.mu.Unlock()
	if len(pass) > 0 {
		res, err := f.Queue.Send(ctx, pass)
		if err != nil {
			return nil, err
		}
		for j, i := range idx {
			out[i] = res[j]
		}
	}
	return out, nil
}

func publishAll(t *testing.T, p *queue.Publisher, in []queue.SendInput) []string {
	t.Helper()
	ids := make([]string, len(in))
	var wg sync.WaitGroup
	for i, m := range in {
		wg.Go(func() {
			id, err := p.Publish(t.Context(), m)
			if err != nil {
				t.Errorf("publish %s: %v", m.DedupID, err)
			}
			ids[i] = id
		})
	}
	wg.Wait()
	return ids
}

func TestPublisherRetriesOnlyFailedEntriesWithSameIDs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := openResults(t)
		f := &flakyEntries{Queue: b.Queue("results"), failOne: map[string]bool{"e2-r": true}}
		p := queue.NewPublisher(f, queue.PublisherOptions{})
		var in []queue.SendInput
		for i := range 3 {
			in = append(in, queue.SendInput{GroupID: fmt.Sprint("e", i), DedupID: fmt.Sprintf("e%d-r", i), Body: []byte("x")})
		}
		ids := publishAll(t, p, in)
		if err := p.Close(); err != nil {
			t.Fatal(err)
		}
		if len(f.batches) != 2 || len(f.batches[0]) != 3 {
			t.Fatalf("batches = %v, want one of 3 then the retry", f.batches)
		}
		retry := f.batches[1]
		if len(retry) != 1 || retry[0].DedupID != "e2-r" || retry[0].GroupID != "e2" {
			t.Fatalf("retry batch = %+v, want only the failed entry with its group and dedup ID", retry)
		}
		for i, id := range ids {
			if id == "" {
				t.Errorf("entry %d has no message ID", i)
			}
		}
	})
}

func TestPublisherBatchLimits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := openResults(t)
		f := &flakyEntries{Queue: b.Queue("results"), failOne: map[string]bool{}}
		p := queue.NewPublisher(f, queue.PublisherOptions{})
		body := []byte(strings.Repeat("a", 30*1024))
		var in []queue.SendInput
		for i := range 25 {
			in = append(in, queue.SendInput{GroupID: "g", DedupID: fmt.Sprint(i), Body: body})
		}
		for i := range 25 {
			in = append(in, queue.SendInput{GroupID: "h", DedupID: fmt.Sprint("s", i), Body: []byte("s")})
		}
		publishAll(t, p, in)
		p.Close()
		total := 0
		for _, batch := range f.batches {
			bytes := 0
			for _, m := range batch {
				bytes += len(m.Body)
			}
			if len(batch) > queue.MaxBatch || bytes > queue.MaxBatchBytes {
				t.Errorf("batch of %d entries, %d bytes exceeds the SQS limits", len(batch), bytes)
			}
			total += len(batch)
		}
		if total != len(in) {
			t.Fatalf("%d entries sent, want %d", total, len(in))
		}
		if len(f.batches) > 10 {
			t.Errorf("%d batches for %d entries: batching too eager", len(f.batches), len(in))
		}
	})
}

func TestPublisherFlushDelayBoundsLatency(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := openResults(t)
		p := queue.NewPublisher(b.Queue("results"), queue.PublisherOptions{FlushDelay: 25 * time.Millisecond})
		defer p.Close()
		start := time.Now()
		if _, err := p.Publish(t.Context(), queue.SendInput{GroupID: "g", DedupID: "d", Body: []byte("x")}); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d != 25*time.Millisecond {
			t.Fatalf("a lone message waited %v, want the 25ms flush delay", d)
		}
	})
}

func TestPublisherPermanentErrorsAreNotRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := openResults(t)
		f := &flakyEntries{Queue: b.Queue("results"), failOne: map[string]bool{}}
		p := queue.NewPublisher(f, queue.PublisherOptions{})
		_, err := p.Publish(t.Context(), queue.SendInput{GroupID: "g", Body: []byte("no dedup")})
		if !errors.Is(err, queue.ErrMissingDedupID) {
			t.Fatalf("err = %v, want ErrMissingDedupID", err)
		}
		if len(f.batches) != 1 {
			t.Fatalf("%d sends, want 1 (no retry of a permanent error)", len(f.batches))
		}
		p.Close()
		if _, err := p.Publish(t.Context(), queue.SendInput{GroupID: "g", DedupID: "d", Body: []byte("x")}); !errors.Is(err, queue.ErrClosed) {
			t.Fatalf("publish after close: %v, want ErrClosed", err)
		}
	})
}

// TestPublisherGivesUpWhenContextEnds: a queue that never accepts; the
// caller's deadline ends the retries.
func TestPublisherGivesUpWhenContextEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := openResults(t)
		down := &alwaysFailing{Queue: b.Queue("results")}
		p := queue.NewPublisher(down, queue.PublisherOptions{})
		defer p.Close()
		ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
		defer cancel()
		_, err := p.Publish(ctx, queue.SendInput{GroupID: "g", DedupID: "d", Body: []byte("x")})
		if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "connection refused") {
			t.Fatalf("err = %v, want the deadline with the last send error", err)
		}
		if down.calls < 3 {
			t.Fatalf("%d attempts in 3s, want retries with backoff", down.calls)
		}
	})
}

type alwaysFailing struct {
	queue.Queue
	mu    sync.Mutex
	calls int
}

func (a *alwaysFailing) Send(context.Context, []queue.SendInput) ([]queue.SendResult, error) {
	a.mu.Lock()
	a.calls++
	a.mu.Unlock()
	return nil, errors.New("dial tcp 127.0.0.1:1: connection refused")
}
