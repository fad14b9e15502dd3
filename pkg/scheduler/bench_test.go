package scheduler

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/clock"
	"github.com/mcpmon/mcpmon/pkg/msg"
)

// BenchmarkSchedule100k holds 100k endpoints on "@every 60s" (spread over the
// minute by their ID hash) and advances virtual time one second per op, so
// one op pops and re-schedules ~1,667 due endpoints. "heap" is the timing
// core; "heap+encode" adds building each command body as the publisher would.
// It reports ns and allocations per command and the heap bytes per endpoint.
func BenchmarkSchedule100k(b *testing.B) {
	for _, encode := range []bool{false, true} {
		name := "heap"
		if encode {
			name = "heap+encode"
		}
		b.Run(name, func(b *testing.B) {
			const n = 100_000
			t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			fake := clock.NewFake(t0)

			runtime.GC()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			s := New(nil, Options{Clock: fake})
			for i := range n {
				if err := s.Upsert(ep(fmt.Sprintf("ep-%06d", i), "@every 60s")); err != nil {
					b.Fatal(err)
				}
			}
			runtime.GC()
			runtime.ReadMemStats(&after)

			now := t0
			var due []job
			commands := 0
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				now = now.Add(time.Second)
				due, _, _ = s.popDue(now, due[:0])
				for _, j := range due {
					if encode {
						_ = msg.NewProbeCommand(j.id, j.slot).Body()
					}
				}
				commands += len(due)
			}
			b.StopTimer()
			if commands == 0 {
				b.Fatal("no commands emitted")
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(commands), "ns/command")
			b.ReportMetric(float64(commands)/float64(b.N), "commands/op")
			b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/n, "B/endpoint")
		})
	}
}
