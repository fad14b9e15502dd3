// Package queuetest is the conformance suite every queue.Queue
// implementation must pass: the SQS FIFO behaviours mcpmon relies on,
// written once and run against the embedded queue (on a fake clock) and the
// SQS adapter (on the fauxqs emulator). Data enters through the Backend a
// test supplies; nothing leaves but test results.
package queuetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/queue"
)

// Backend is what the suite needs from one implementation.
type Backend struct {
	// NewQueue creates a fresh, empty queue for cfg (the suite gives each
	// test a unique cfg.Name) and returns it with its dead-letter queue
	// (nil when cfg.MaxReceiveCount == 0). Cleanup is the backend's.
	NewQueue func(t *testing.T, cfg queue.Config) (q, dlq queue.Queue)
	// Advance moves the backend's clock by d. nil means the backend runs
	// on wall time: visibility cases then wait out 1-second timeouts with
	// long polls, and cases that need minutes are skipped with a reason.
	Advance func(d time.Duration)
	// NoGroupDedupScope, when set, is the reason the backend cannot honour
	// DedupScope=messageGroup; the case is skipped with it.
	NoGroupDedupScope string
	// DeadLetters returns the dead-letter operations of the queue pair
	// NewQueue made for cfg; nil skips the dead-letter case.
	DeadLetters func(t *testing.T, cfg queue.Config, q, dlq queue.Queue) queue.DeadLetterQueue
	// Failures, when set, records failure reasons that Peek must show.
	Failures queue.FailureRecorder
}

// Factory builds the backend for one test.
type Factory func(t *testing.T) Backend

var seq atomic.Int64

// Run runs every conformance case against the backend f builds.
func Run(t *testing.T, f Factory) {
	cases := []struct {
		name string
		fn   func(t *testing.T, b Backend)
	}{
		{"DedupWithinWindowReturnsOriginalID", testDedupWithinWindow},
		{"DedupSurvivesDelete", testDedupSurvivesDelete},
		{"DedupExpiresAfterWindow", testDedupExpires},
		{"ContentBasedDedup", testContentBasedDedup},
		{"MissingDedupIDIsClearError", testMissingDedupID},
		{"MissingGroupID", testMissingGroupID},
		{"DedupScopeMessageGroup", testDedupScopeGroup},
		{"GroupOrderingAndInFlightBlocking", testGroupOrdering},
		{"VisibilityExpiryAndReceiveCount", testVisibilityExpiry},
		{"ChangeVisibility", testChangeVisibility},
		{"StaleReceipt", testStaleReceipt},
		{"RedriveToDLQ", testRedrive},
		{"BatchSendPartialFailure", testBatchPartialFailure},
		{"LongPollWakesOnSend", testLongPoll},
		{"Stats", testStats},
		{"DeadLetterPeekRedrivePurge", testDeadLetters},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.fn(t, f(t))
		})
	}
}

// cfg returns a results-like queue config with a unique name.
func cfg(t *testing.T) queue.Config {
	name := strings.NewReplacer("/", "-", "_", "-").Replace(t.Name())
	if len(name) > 40 {
		name = name[len(name)-40:]
	}
	return queue.Config{
		Name:              fmt.Sprintf("qt%d-%s", seq.Add(1), strings.Trim(name, "-")),
		DedupScope:        queue.DedupScopeQueue,
		VisibilityTimeout: 30 * time.Second,
		Retention:         time.Hour,
	}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func send(t *testing.T, q queue.Queue, in ...queue.SendInput) []string {
	t.Helper()
	res, err := q.Send(ctxT(t), in)
	if err != nil {
		t.Fatalf("send: %v", err)
	}
	if len(res) != len(in) {
		t.Fatalf("send: %d results for %d entries", len(res), len(in))
	}
	ids := make([]string, len(res))
	for i, r := range res {
		if r.Err != nil {
			t.Fatalf("send entry %d: %v", i, r.Err)
		}
		if r.MessageID == "" {
			t.Fatalf("send entry %d: empty message ID", i)
		}
		ids[i] = r.MessageID
	}
	return ids
}

func msg(group, dedup, body string) queue.SendInput {
	return queue.SendInput{GroupID: group, DedupID: dedup, Body: []byte(body)}
}

// receive receives once with the given wait.
func receive(t *testing.T, q queue.Queue, max int, wait, vis time.Duration) []queue.Message {
	t.Helper()
	ms, err := q.Receive(ctxT(t), queue.ReceiveInput{Max: max, Wait: wait, Visibility: vis})
	if err != nil {
		t.Fatalf("receive: %v", err)
	}
	return ms
}

// drain receives and deletes everything visible, returning bodies in
// receive order. It stops at the first empty receive (wait bounds how long
// that takes).
func drain(t *testing.T, q queue.Queue, wait time.Duration) []string {
	t.Helper()
	var out []string
	for range 100 {
		ms := receive(t, q, queue.MaxBatch, wait, 0)
		if len(ms) == 0 {
			return out
		}
		var rh []string
		for _, m := range ms {
			out = append(out, string(m.Body))
			rh = append(rh, m.ReceiptHandle)
		}
		if err := q.Delete(ctxT(t), rh...); err != nil {
			t.Fatalf("delete: %v", err)
		}
	}
	t.Fatal("drain: queue never emptied")
	return nil
}

// settle is the long-poll wait used where a wall-clock backend needs a
// moment for a message to (not) appear; on a fake clock nothing is pending.
func settle(b Backend) time.Duration {
	if b.Advance == nil {
		return 2 * time.Second
	}
	return 0
}

func testDedupWithinWindow(t *testing.T, b Backend) {
	q, _ := b.NewQueue(t, cfg(t))
	first := send(t, q, msg("g1", "d-1", "first"))[0]
	if b.Advance != nil {
		b.Advance(queue.DedupWindow - time.Second)
	}
	again := send(t, q, msg("g1", "d-1", "second body, same dedup ID"))[0]
	if again != first {
		t.Fatalf("duplicate send returned message ID %q, want the original %q", again, first)
	}
	if got := drain(t, q, 0); !slices.Equal(got, []string{"first"}) {
		t.Fatalf("received %q, want only the first send", got)
	}
}

func testDedupSurvivesDelete(t *testing.T, b Backend) {
	q, _ := b.NewQueue(t, cfg(t))
	first := send(t, q, msg("g1", "d-1", "body"))[0]
	if got := drain(t, q, 0); len(got) != 1 {
		t.Fatalf("received %q, want one message", got)
	}
	again := send(t, q, msg("g1", "d-1", "body"))[0]
	if again != first {
		t.Fatalf("send after delete returned %q, want the original %q (dedup must survive delete)", again, first)
	}
	if got := drain(t, q, 0); len(got) != 0 {
		t.Fatalf("a deduplicated send after delete was delivered: %q", got)
	}
}

func testDedupExpires(t *testing.T, b Backend) {
	if b.Advance == nil {
		t.Skip("the 5-minute dedup window needs an injected clock; this backend runs on wall time (covered on the embedded queue)")
	}
	q, _ := b.NewQueue(t, cfg(t))
	first := send(t, q, msg("g1", "d-1", "one"))[0]
	drain(t, q, 0)
	b.Advance(queue.DedupWindow)
	again := send(t, q, msg("g1", "d-1", "two"))[0]
	if again == first {
		t.Fatalf("send 5 minutes later returned the original ID %q; the window must have expired", first)
	}
	if got := drain(t, q, 0); !slices.Equal(got, []string{"two"}) {
		t.Fatalf("received %q after the window, want [two]", got)
	}
}

func testContentBasedDedup(t *testing.T, b Backend) {
	c := cfg(t)
	c.ContentBasedDedup = true
	q, _ := b.NewQueue(t, c)
	a := send(t, q, msg("g1", "", `{"endpointId":"e1","slot":"2026-01-01T00:00:00Z"}`))[0]
	// The hash covers the body only: another group, same body, is a duplicate.
	a2 := send(t, q, msg("g2", "", `{"endpointId":"e1","slot":"2026-01-01T00:00:00Z"}`))[0]
	other := send(t, q, msg("g1", "", `{"endpointId":"e1","slot":"2026-01-01T00:01:00Z"}`))[0]
	// An explicit dedup ID overrides the hash.
	explicit := send(t, q, msg("g1", "explicit", `{"endpointId":"e1","slot":"2026-01-01T00:00:00Z"}`))[0]
	if a2 != a {
		t.Errorf("identical body returned %q, want original %q", a2, a)
	}
	if other == a {
		t.Errorf("different body was deduplicated to %q", a)
	}
	if explicit == a {
		t.Errorf("explicit dedup ID was ignored: got original ID %q", a)
	}
	if got := drain(t, q, 0); len(got) != 3 {
		t.Fatalf("received %d messages %q, want 3", len(got), got)
	}
}

func testMissingDedupID(t *testing.T, b Backend) {
	q, _ := b.NewQueue(t, cfg(t))
	res, err := q.Send(ctxT(t), []queue.SendInput{msg("g1", "", "no dedup id")})
	if err == nil {
		if len(res) != 1 {
			t.Fatalf("got %d results for 1 entry", len(res))
		}
		err = res[0].Err
	}
	if !errors.Is(err, queue.ErrMissingDedupID) {
		t.Fatalf("send without dedup ID: err = %v, want queue.ErrMissingDedupID", err)
	}
	if !strings.Contains(err.Error(), "deduplication") {
		t.Errorf("error %q does not say what is missing", err)
	}
}

func testMissingGroupID(t *testing.T, b Backend) {
	q, _ := b.NewQueue(t, cfg(t))
	res, err := q.Send(ctxT(t), []queue.SendInput{msg("", "d", "no group")})
	if err == nil {
		err = res[0].Err
	}
	if !errors.Is(err, queue.ErrMissingGroupID) {
		t.Fatalf("send without group ID: err = %v, want queue.ErrMissingGroupID", err)
	}
}

func testDedupScopeGroup(t *testing.T, b Backend) {
	if b.NoGroupDedupScope != "" {
		t.Skip(b.NoGroupDedupScope)
	}
	c := cfg(t)
	c.DedupScope = queue.DedupScopeMessageGroup
	q, _ := b.NewQueue(t, c)
	ids := send(t, q, msg("g1", "run-1", "a"), msg("g2", "run-1", "b"), msg("g1", "run-1", "c"))
	if ids[0] == ids[1] {
		t.Errorf("same dedup ID in another group was deduplicated under messageGroup scope")
	}
	if ids[2] != ids[0] {
		t.Errorf("same dedup ID in the same group: got %q, want original %q", ids[2], ids[0])
	}
	got := drain(t, q, 0)
	slices.Sort(got)
	if !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("received %q, want [a b]", got)
	}
}

func testGroupOrdering(t *testing.T, b Backend) {
	q, _ := b.NewQueue(t, cfg(t))
	send(t, q, msg("g1", "1", "g1-1"), msg("g1", "2", "g1-2"), msg("g2", "3", "g2-1"), msg("g1", "4", "g1-3"))

	head := receive(t, q, 1, 0, 0)
	if len(head) != 1 || string(head[0].Body) != "g1-1" {
		t.Fatalf("first receive = %v, want g1-1", bodies(head))
	}
	// g1 is held in flight: only g2 may progress.
	more := receive(t, q, queue.MaxBatch, settle(b), 0)
	if !slices.Equal(bodies(more), []string{"g2-1"}) {
		t.Fatalf("receive while g1 in flight = %v, want only [g2-1]", bodies(more))
	}
	if got := receive(t, q, queue.MaxBatch, 0, 0); len(got) != 0 {
		t.Fatalf("receive with both groups in flight = %v, want nothing", bodies(got))
	}
	if err := q.Delete(ctxT(t), head[0].ReceiptHandle, more[0].ReceiptHandle); err != nil {
		t.Fatal(err)
	}
	if got := drain(t, q, 0); !slices.Equal(got, []string{"g1-2", "g1-3"}) {
		t.Fatalf("rest of g1 = %q, want [g1-2 g1-3] in order", got)
	}
}

func bodies(ms []queue.Message) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = string(m.Body)
	}
	return out
}

// expire lets a 1-second visibility lapse: on a fake clock by advancing
// it, on wall time by long-polling past it.
func expire(b Backend) (wait time.Duration) {
	if b.Advance != nil {
		b.Advance(time.Second + time.Millisecond)
		return 0
	}
	return 5 * time.Second
}

func testVisibilityExpiry(t *testing.T, b Backend) {
	q, _ := b.NewQueue(t, cfg(t))
	id := send(t, q, msg("g1", "1", "work"))[0]
	first := receive(t, q, 1, 0, time.Second)
	if len(first) != 1 || first[0].ReceiveCount != 1 || first[0].ID != id {
		t.Fatalf("first receive = %+v, want message %s with receive count 1", first, id)
	}
	if got := receive(t, q, 1, 0, 0); len(got) != 0 {
		t.Fatalf("message visible while in flight: %v", bodies(got))
	}
	again := receive(t, q, 1, expire(b), time.Second)
	if len(again) != 1 {
		t.Fatal("message not redelivered after its visibility expired")
	}
	if again[0].ID != id || again[0].ReceiveCount != 2 {
		t.Fatalf("redelivery = id %s count %d, want id %s count 2", again[0].ID, again[0].ReceiveCount, id)
	}
	if again[0].ReceiptHandle == first[0].ReceiptHandle {
		t.Error("redelivery reused the first receipt handle")
	}
	if !again[0].SentAt.Equal(first[0].SentAt) || first[0].SentAt.IsZero() {
		t.Errorf("SentAt changed across receives or is zero: %v vs %v", first[0].SentAt, again[0].SentAt)
	}
}

func testChangeVisibility(t *testing.T, b Backend) {
	q, _ := b.NewQueue(t, cfg(t))
	send(t, q, msg("g1", "1", "a"))
	ms := receive(t, q, 1, 0, 30*time.Second)
	if len(ms) != 1 {
		t.Fatal("nothing received")
	}
	// Release at once.
	if err := q.ChangeVisibility(ctxT(t), ms[0].ReceiptHandle, 0); err != nil {
		t.Fatalf("change visibility to 0: %v", err)
	}
	ms = receive(t, q, 1, 0, time.Second)
	if len(ms) != 1 || ms[0].ReceiveCount != 2 {
		t.Fatalf("after release: %+v, want the message again with receive count 2", ms)
	}
	// Extend: the 1-second visibility must not lapse.
	if err := q.ChangeVisibility(ctxT(t), ms[0].ReceiptHandle, time.Minute); err != nil {
		t.Fatalf("extend visibility: %v", err)
	}
	if got := receive(t, q, 1, expire(b), 0); len(got) != 0 {
		t.Fatalf("message redelivered though its visibility was extended: %v", bodies(got))
	}
	if err := q.Delete(ctxT(t), ms[0].ReceiptHandle); err != nil {
		t.Fatal(err)
	}
}

func testStaleReceipt(t *testing.T, b Backend) {
	q, _ := b.NewQueue(t, cfg(t))
	send(t, q, msg("g1", "1", "a"))
	first := receive(t, q, 1, 0, time.Second)
	if len(first) != 1 {
		t.Fatal("nothing received")
	}
	second := receive(t, q, 1, expire(b), 30*time.Second)
	if len(second) != 1 {
		t.Fatal("not redelivered")
	}
	err := q.ChangeVisibility(ctxT(t), first[0].ReceiptHandle, time.Minute)
	if !errors.Is(err, queue.ErrInvalidReceipt) {
		t.Fatalf("change visibility with a stale receipt: err = %v, want queue.ErrInvalidReceipt", err)
	}
	if err := q.Delete(ctxT(t), second[0].ReceiptHandle); err != nil {
		t.Fatal(err)
	}
	// Deleting twice is not an error (as on SQS).
	if err := q.Delete(ctxT(t), second[0].ReceiptHandle); err != nil {
		t.Fatalf("second delete: %v", err)
	}
}

func testRedrive(t *testing.T, b Backend) {
	c := cfg(t)
	c.MaxReceiveCount = 2
	q, dlq := b.NewQueue(t, c)
	if dlq == nil {
		t.Fatal("backend returned no DLQ for a queue with MaxReceiveCount")
	}
	id := send(t, q, msg("g1", "poison", "poison"), msg("g1", "next", "next"))[0]
	for want := 1; want <= 2; want++ {
		ms := receive(t, q, 1, 0, 30*time.Second)
		if len(ms) != 1 || string(ms[0].Body) != "poison" || ms[0].ReceiveCount != want {
			t.Fatalf("receive %d = %v, want poison with receive count %d", want, bodies(ms), want)
		}
		if err := q.ChangeVisibility(ctxT(t), ms[0].ReceiptHandle, 0); err != nil {
			t.Fatal(err)
		}
	}
	// The third receive moves poison to the DLQ and unblocks the group.
	if got := drain(t, q, settle(b)); !slices.Equal(got, []string{"next"}) {
		t.Fatalf("source queue after redrive = %q, want [next]", got)
	}
	dead := receive(t, dlq, queue.MaxBatch, settle(b), 0)
	if len(dead) != 1 || string(dead[0].Body) != "poison" || dead[0].ID != id || dead[0].GroupID != "g1" {
		t.Fatalf("DLQ = %+v, want the poison message %s of group g1", dead, id)
	}
}

func testBatchPartialFailure(t *testing.T, b Backend) {
	q, _ := b.NewQueue(t, cfg(t))
	res, err := q.Send(ctxT(t), []queue.SendInput{
		msg("g1", "1", "ok-1"),
		msg("g1", "2", "bad \x00 byte"),
		msg("g2", "3", "ok-2"),
	})
	if err != nil {
		t.Fatalf("a batch with one bad entry failed as a whole: %v", err)
	}
	if res[0].Err != nil || res[2].Err != nil || res[0].MessageID == "" || res[2].MessageID == "" {
		t.Fatalf("good entries failed: %+v", res)
	}
	if !errors.Is(res[1].Err, queue.ErrInvalidMessage) {
		t.Fatalf("bad entry: err = %v, want queue.ErrInvalidMessage", res[1].Err)
	}
	// Retrying only the failed entry (fixed) with the same dedup ID works.
	send(t, q, msg("g1", "2", "fixed"))
	got := drain(t, q, 0)
	slices.Sort(got)
	if !slices.Equal(got, []string{"fixed", "ok-1", "ok-2"}) {
		t.Fatalf("received %q", got)
	}
	// More than MaxBatch entries is refused as a whole.
	var big []queue.SendInput
	for i := range queue.MaxBatch + 1 {
		big = append(big, msg("g", fmt.Sprint("x", i), "x"))
	}
	if _, err := q.Send(ctxT(t), big); !errors.Is(err, queue.ErrTooManyEntries) {
		t.Fatalf("send of 11 entries: err = %v, want queue.ErrTooManyEntries", err)
	}
}

func testLongPoll(t *testing.T, b Backend) {
	q, _ := b.NewQueue(t, cfg(t))
	got := make(chan []queue.Message, 1)
	errc := make(chan error, 1)
	go func() {
		ms, err := q.Receive(ctxT(t), queue.ReceiveInput{Max: 1, Wait: 10 * time.Second})
		if err != nil {
			errc <- err
			return
		}
		got <- ms
	}()
	// The poll may start before or after the send; either way it must
	// return the message, not time out empty.
	send(t, q, msg("g1", "1", "wake"))
	select {
	case err := <-errc:
		t.Fatal(err)
	case ms := <-got:
		if len(ms) != 1 || string(ms[0].Body) != "wake" {
			t.Fatalf("long poll returned %v, want [wake]", bodies(ms))
		}
	}
	// A cancelled context ends a long poll.
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := q.Receive(ctx, queue.ReceiveInput{Max: 1, Wait: 20 * time.Second})
		done <- err
	}()
	cancel()
	select {
	case err := <-done:
		if err == nil {
			t.Log("receive returned nil on cancel (allowed when it had already returned empty)")
		}
	case <-time.After(15 * time.Second):
		t.Fatal("long poll ignored context cancellation")
	}
}

func testStats(t *testing.T, b Backend) {
	q, _ := b.NewQueue(t, cfg(t))
	sr, ok := q.(queue.StatsReader)
	if !ok {
		t.Skip("backend does not implement queue.StatsReader")
	}
	send(t, q, msg("g1", "1", "a"), msg("g2", "2", "b"), msg("g3", "3", "c"))
	if ms := receive(t, q, 1, 0, 0); len(ms) != 1 {
		t.Fatal("nothing received")
	}
	s, err := sr.Stats(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	if s.Visible != 2 || s.InFlight != 1 {
		t.Fatalf("stats = %+v, want 2 visible, 1 in flight", s)
	}
}
