package embedded

import (
	"fmt"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/clock"
	"github.com/mcpmon/mcpmon/pkg/queue"
)

// BenchmarkCommit runs N concurrent workers, each sending a message,
// receiving one and deleting it, on a broker with a data directory: group
// commit (the default: no interval) and group commit with 25 ms between
// commits,
// against the old one transaction per call under the lock (per-op).
// It reports messages per second, process CPU per message and bbolt commits
// per message.
//
//	go test -run '^$' -bench Commit -benchtime 3000x ./pkg/queue/embedded
func BenchmarkCommit(b *testing.B) {
	modes := []struct {
		name     string
		perOp    bool
		interval time.Duration
	}{
		{"per-op", true, 0},
		{"group", false, 0},
		{"group-25ms", false, 25 * time.Millisecond},
	}
	for _, mode := range modes {
		for _, workers := range []int{1, 16, 64} {
			b.Run(fmt.Sprintf("%s/workers=%d", mode.name, workers), func(b *testing.B) {
				br, err := Open(b.TempDir(), queue.StageConfigs(), Options{Clock: clock.Real{}, CommitInterval: mode.interval})
				if err != nil {
					b.Fatal(err)
				}
				defer br.Close()
				br.perOp = mode.perOp
				var commits atomic.Int64
				br.beforeCommit = func(int) error { commits.Add(1); return nil }
				q := br.Queue("results")
				body := make([]byte, 300) // about a probe result
				for i := range body {
					body[i] = 'x'
				}
				var next atomic.Int64
				var ru0, ru1 syscall.Rusage
				_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
				b.ResetTimer()
				start := time.Now()
				var wg sync.WaitGroup
				for w := range workers {
					wg.Go(func() {
						for {
							n := next.Add(1)
							if n > int64(b.N) {
								return
							}
							if _, err := q.Send(b.Context(), []queue.SendInput{{GroupID: fmt.Sprint("g", w), DedupID: fmt.Sprint(n), Body: body}}); err != nil {
								b.Error(err)
								return
							}
							ms, err := q.Receive(b.Context(), queue.ReceiveInput{Max: 1})
							if err != nil {
								b.Error(err)
								return
							}
							for _, m := range ms {
								if err := q.Delete(b.Context(), m.ReceiptHandle); err != nil {
									b.Error(err)
									return
								}
							}
						}
					})
				}
				wg.Wait()
				elapsed := time.Since(start)
				b.StopTimer()
				_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
				cpu := tv(ru1.Utime) + tv(ru1.Stime) - tv(ru0.Utime) - tv(ru0.Stime)
				b.ReportMetric(float64(b.N)/elapsed.Seconds(), "msgs/s")
				b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/msg")
				b.ReportMetric(float64(commits.Load())/float64(b.N), "commits/msg")
			})
		}
	}
}

func tv(t syscall.Timeval) time.Duration {
	return time.Duration(t.Sec)*time.Second + time.Duration(t.Usec)*time.Microsecond
}
