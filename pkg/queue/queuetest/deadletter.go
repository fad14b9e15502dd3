package queuetest

import (
	"slices"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/queue"
)

// kill receives every visible message of q, makes it visible again, and
// repeats until maxReceiveCount is spent and the next receive moves it to
// the DLQ; it fails the test if anything is still in q.
func kill(t *testing.T, b Backend, q queue.Queue, n int, reason string) {
	t.Helper()
	for range n {
		ms := receive(t, q, queue.MaxBatch, settle(b), 30*time.Second)
		for _, m := range ms {
			if b.Failures != nil && reason != "" {
				if err := b.Failures.RecordFailure(ctxT(t), q.Name(), m.ID, reason); err != nil {
					t.Fatal(err)
				}
			}
			if err := q.ChangeVisibility(ctxT(t), m.ReceiptHandle, 0); err != nil {
				t.Fatal(err)
			}
		}
	}
	if left := drain(t, q, settle(b)); len(left) > 0 {
		t.Fatalf("source queue still holds %q after the receives were spent", left)
	}
}

func deadBodies(dl []queue.DeadLetter) []string {
	var out []string
	for _, d := range dl {
		out = append(out, string(d.Body))
	}
	slices.Sort(out)
	return out
}

// testDeadLetters: poison messages land in the DLQ; peek shows them without
// taking them; a redrive by ID returns one to its source with its group,
// although its dedup ID is still inside the five-minute window; a redrive
// of all returns the rest; purge empties the DLQ.
func testDeadLetters(t *testing.T, b Backend) {
	if b.DeadLetters == nil {
		t.Skip("backend has no dead-letter operations")
	}
	c := cfg(t)
	c.MaxReceiveCount = 1
	q, dlq := b.NewQueue(t, c)
	dl := b.DeadLetters(t, c, q, dlq)
	ids := send(t, q, msg("g1", "d1", "p1"), msg("g2", "d2", "p2"), msg("g3", "d3", "p3"))
	kill(t, b, q, c.MaxReceiveCount, "handler: endpoint misconfigured")

	peek := func(want ...string) []queue.DeadLetter {
		t.Helper()
		got, err := dl.Peek(ctxT(t), 10)
		if err != nil {
			t.Fatalf("peek: %v", err)
		}
		if !slices.Equal(deadBodies(got), want) {
			t.Fatalf("peek = %q, want %q", deadBodies(got), want)
		}
		return got
	}
	first := peek("p1", "p2", "p3")
	peek("p1", "p2", "p3") // still there: peek takes nothing
	for _, d := range first {
		if d.ReceiveCount < 1 || d.GroupID == "" {
			t.Errorf("dead letter %+v: want its group and receive count", d)
		}
		if b.Failures != nil && d.Reason != "handler: endpoint misconfigured" {
			t.Errorf("dead letter %s reason %q, want the recorded failure", d.ID, d.Reason)
		}
	}

	res, err := dl.Redrive(ctxT(t), []string{ids[0], "no-such-message"})
	if err != nil {
		t.Fatalf("redrive by ID: %v", err)
	}
	if res.Moved != 1 || !slices.Equal(res.Missing, []string{"no-such-message"}) {
		t.Fatalf("redrive by ID = %+v, want 1 moved and the unknown ID missing", res)
	}
	back := receive(t, q, queue.MaxBatch, settle(b), 0)
	if len(back) != 1 || string(back[0].Body) != "p1" || back[0].GroupID != "g1" {
		t.Fatalf("source after redrive of p1 = %v, want p1 of group g1 (within its dedup window)", bodies(back))
	}
	if err := q.Delete(ctxT(t), back[0].ReceiptHandle); err != nil {
		t.Fatal(err)
	}
	peek("p2", "p3")

	res, err = dl.Redrive(ctxT(t), nil)
	if err != nil {
		t.Fatalf("redrive all: %v", err)
	}
	var rest []string
	for range 20 { // a native move task runs asynchronously
		rest = append(rest, drain(t, q, settle(b))...)
		if len(rest) >= 2 || res.Task == "" {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	slices.Sort(rest)
	if !slices.Equal(rest, []string{"p2", "p3"}) {
		t.Fatalf("source after redrive of all (%+v) = %q, want p2 p3", res, rest)
	}
	peek()

	send(t, q, msg("g4", "d4", "p4"))
	kill(t, b, q, c.MaxReceiveCount, "")
	peek("p4")
	if _, err := dl.Purge(ctxT(t)); err != nil {
		t.Fatalf("purge: %v", err)
	}
	peek()
}
