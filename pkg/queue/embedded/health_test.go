package embedded_test

import (
	"crypto/rand"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpmon/mcpmon/pkg/clock"
	"github.com/mcpmon/mcpmon/pkg/queue"
	"github.com/mcpmon/mcpmon/pkg/queue/embedded"
	"github.com/mcpmon/mcpmon/pkg/testpeers"
	"github.com/mcpmon/mcpmon/pkg/writehealth"
)

// TestFullDiskFailsTheQueuesCheck: the broker's own file (queue.db,
// beside a Redis store) on a disk that fills up. Sends fail with the
// disk's error, Check (the queue's part of /readyz) names the file until
// writehealth.Hold after the last failed commit, and the failed commits
// are counted; with space again, sends succeed and the queue keeps what it
// had acknowledged.
func TestFullDiskFailsTheQueuesCheck(t *testing.T) {
	dir, resize := testpeers.Tmpfs(t, "1m")
	clk := clock.NewFake(epoch)
	b := open(t, dir, clk)
	t.Cleanup(func() { _ = b.Close() })
	ctx := t.Context()
	q := b.Queue("results")
	body := func() []byte { return []byte(rand.Text() + strings.Repeat("x", 60_000)) }

	var serr error
	sent := 0
	first := body()
	for ; sent < 100 && serr == nil; sent++ {
		b := first
		if sent > 0 {
			b = body()
		}
		_, serr = q.Send(ctx, []queue.SendInput{{GroupID: "e1", DedupID: fmt.Sprintf("e1-r%d", sent), Body: b}})
	}
	if serr == nil || !strings.Contains(serr.Error(), "no space left on device") {
		t.Fatalf("%d sends of 60 KB to a 1 MB disk: %v, want the disk's ENOSPC", sent, serr)
	}
	path := filepath.Join(dir, embedded.FileName)
	cerr := b.Check()
	if cerr == nil || !strings.Contains(cerr.Error(), path) || !strings.Contains(cerr.Error(), "free space on its disk") {
		t.Fatalf("Check with a full disk: %v, want the file named and what to do", cerr)
	}
	if n := b.CommitFailures(); n < 1 {
		t.Errorf("CommitFailures = %d after a failed commit, want ≥ 1", n)
	}

	resize("64m")
	if _, err := q.Send(ctx, []queue.SendInput{{GroupID: "e2", DedupID: "e2-r1", Body: []byte("after")}}); err != nil {
		t.Fatalf("a send with space again: %v", err)
	}
	if b.Check() == nil {
		t.Errorf("Check right after the disk got space: nil, want the failure held for %s (readiness does not flap)", writehealth.Hold)
	}
	clk.Advance(writehealth.Hold)
	if err := b.Check(); err != nil {
		t.Errorf("Check %s after the last failed commit, sends succeeding: %v, want nil", writehealth.Hold, err)
	}
	ms, err := q.Receive(ctx, queue.ReceiveInput{Max: 1})
	if err != nil || len(ms) != 1 || string(ms[0].Body) != string(first) {
		t.Fatalf("receive after the disk got space: %d messages, %v; want the first sent before it filled", len(ms), err)
	}
}
