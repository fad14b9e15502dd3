package queue_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mcpmon/mcpmon/pkg/clock"
	"github.com/mcpmon/mcpmon/pkg/queue"
	"github.com/mcpmon/mcpmon/pkg/store/bolt"
	redisstore "github.com/mcpmon/mcpmon/pkg/store/redis"
	"github.com/mcpmon/mcpmon/pkg/testpeers"
)

func TestScrubReasonHidesCredentials(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     string // substring the scrubbed reason keeps
		leaks    []string
	}{
		{"webhook URL with key in path and query",
			`alerter: Post "https://hooks.slack.com/services/T0/B0/s3cr3t?token=abc": dial tcp: refused`,
			`Post "https://hooks.slack.com/…": dial tcp: refused`, []string{"s3cr3t", "abc", "/services/"}},
		{"user info", `get redis://admin:hunter2@cache:6379/0: timeout`, `redis://cache:6379/…: timeout`, []string{"hunter2", "admin"}},
		{"bearer token", `sink said 401 to Authorization: Bearer eyJhbGciOi.x.y`, `Bearer <redacted>`, []string{"eyJhbGciOi"}},
		{"key=value", `opsgenie: api_key=0123abcd rejected`, `api_key=<redacted> rejected`, []string{"0123abcd"}},
		{"password: quoted", `smtp auth: password: "p a s s" refused`, `password: <redacted> refused`, []string{"p a s s"}},
		{"plain text kept", `alerter: sink config invalid`, `alerter: sink config invalid`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := queue.ScrubReason(tc.in)
			if !strings.Contains(got, tc.want) {
				t.Errorf("ScrubReason(%q) = %q, want it to contain %q", tc.in, got, tc.want)
			}
			for _, l := range tc.leaks {
				if strings.Contains(got, l) {
					t.Errorf("ScrubReason(%q) = %q leaks %q", tc.in, got, l)
				}
			}
		})
	}
	long := queue.FailureReason(errors.New(strings.Repeat("é", queue.MaxReasonLen)))
	if len(long) > queue.MaxReasonLen || !strings.HasPrefix(long, "éé") || strings.ContainsRune(long, '\uFFFD') {
		t.Errorf("FailureReason of a long error: %d bytes %q…, want at most %d valid UTF-8", len(long), long[:8], queue.MaxReasonLen)
	}
}

func openStore(t *testing.T, clk clock.Clock) *bolt.Store {
	t.Helper()
	st, err := bolt.Open(filepath.Join(t.TempDir(), "store.db"), bolt.Options{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}

// TestFailureBookKeepsReasonsForTheDLQRetention: a reason reads back by
// queue and message ID, scrubbed; the last one wins; it reads as absent
// after DLQRetention and Sweep deletes it then, not before; ForgetFailure
// drops it, and forgetting a message without one is no error.
func TestFailureBookKeepsReasonsForTheDLQRetention(t *testing.T) {
	for _, tc := range []struct {
		name string
		open func(t *testing.T, clk clock.Clock) queue.Documents
	}{
		{"bolt", func(t *testing.T, clk clock.Clock) queue.Documents { return openStore(t, clk) }},
		{"redis", func(t *testing.T, clk clock.Clock) queue.Documents {
			st, err := redisstore.New(t.Context(), testpeers.RedisURL(t), redisstore.Options{
				Prefix: fmt.Sprintf("reasons-%d:", time.Now().UnixNano()), Clock: clk})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = st.Close() })
			return st
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
			testFailureBook(t, queue.NewFailureBook(tc.open(t, clk), clk), clk)
		})
	}
}

func testFailureBook(t *testing.T, book *queue.FailureBook, clk *clock.Fake) {
	ctx := t.Context()
	reasons := func(q string, ids ...string) map[string]string {
		t.Helper()
		got, err := book.FailureReasons(ctx, q, ids)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(book.RecordFailure(ctx, "verdicts", "m1", "first"))
	must(book.RecordFailure(ctx, "verdicts", "m1", `sink: Post "https://x.example/hook?key=s3cr3t": refused`))
	must(book.RecordFailure(ctx, "results", "m1", "other queue"))
	got := reasons("verdicts", "m1", "m2")
	if len(got) != 1 || !strings.Contains(got["m1"], "x.example") || strings.Contains(got["m1"], "s3cr3t") {
		t.Fatalf("reasons = %q, want m1's last, scrubbed", got)
	}
	if got := reasons("results", "m1"); got["m1"] != "other queue" {
		t.Fatalf("results' m1 = %q: queues must not share reasons", got["m1"])
	}

	clk.Advance(queue.DLQRetention - time.Minute)
	must(book.RecordFailure(ctx, "verdicts", "m2", "young"))
	if n, err := book.Sweep(ctx, "verdicts"); err != nil || n != 0 {
		t.Fatalf("sweep within the retention = %d, %v; want nothing swept", n, err)
	}
	clk.Advance(2 * time.Minute)
	if got := reasons("verdicts", "m1", "m2"); got["m1"] != "" || got["m2"] != "young" {
		t.Fatalf("after the retention: %q, want m1 expired and m2 kept", got)
	}
	if n, err := book.Sweep(ctx, "verdicts"); err != nil || n != 1 {
		t.Fatalf("sweep after the retention = %d, %v; want m1 swept", n, err)
	}
	must(book.ForgetFailure(ctx, "verdicts", "m2"))
	must(book.ForgetFailure(ctx, "verdicts", "never-failed"))
	if got := reasons("verdicts", "m1", "m2"); len(got) != 0 {
		t.Fatalf("after sweep and forget: %q, want none", got)
	}
}

// TestConsumerRecordsAndForgetsFailures: a handler's failure is recorded
// scrubbed for its message; when the message is handled on its redelivery
// the reason is forgotten, so reasons kept beside the messages do not pile
// up for messages that recovered.
func TestConsumerRecordsAndForgetsFailures(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := openResults(t)
		q := b.Queue("results")
		if _, err := q.Send(t.Context(), []queue.SendInput{{GroupID: "g", DedupID: "d", Body: []byte("x")}}); err != nil {
			t.Fatal(err)
		}
		book := queue.NewFailureBook(openStore(t, nil), nil)
		ctx, cancel := context.WithCancel(t.Context())
		var recorded, id string
		h := func(_ context.Context, m queue.Message) error {
			id = m.ID
			if m.ReceiveCount == 1 {
				return errors.New(`sink: Post "https://hooks.example/T/B/s3cr3t": refused`)
			}
			got, err := book.FailureReasons(t.Context(), "results", []string{m.ID})
			if err != nil {
				t.Error(err)
			}
			recorded = got[m.ID]
			cancel()
			return nil
		}
		if err := queue.Consume(ctx, q, h, queue.ConsumerOptions{Visibility: 5 * time.Second, Concurrency: 1, Failures: book}); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(recorded, "hooks.example") || strings.Contains(recorded, "s3cr3t") {
			t.Fatalf("reason recorded on the first failure = %q, want it scrubbed", recorded)
		}
		left, err := book.FailureReasons(t.Context(), "results", []string{id})
		if err != nil || len(left) != 0 {
			t.Fatalf("reasons after the message was handled = %q, %v; want it forgotten", left, err)
		}
	})
}
