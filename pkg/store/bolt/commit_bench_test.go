package bolt

import (
	"encoding/binary"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.etcd.io/bbolt"
)

// BenchmarkGroupCommit: the store's committer beside bbolt's DB.Batch with
// the delay the store used before it (2 ms), the same writes in the same
// run, each write (300 bytes at a random-looking key) waiting for its
// commit. "lone": one writer, one write after another. "2000/s": 64
// writers each starting a write every 32 ms (an open load, as probes
// arrive, not writers waiting on each other). Reported per write:
// commits, CPU (user + system, the whole process) and wall time. The
// committer never pauses a lone writer; under the open load it starts a
// commit at most once per interval (2 ms by default, 10 ms on the last
// side).
//
//	go test ./pkg/store/bolt -run '^$' -bench GroupCommit -benchtime 4000x
func BenchmarkGroupCommit(b *testing.B) {
	for _, load := range []struct {
		name    string
		writers int
		every   time.Duration // between one writer's writes; 0: back to back
	}{{"lone", 1, 0}, {"2000/s", 64, 32 * time.Millisecond}} {
		for _, side := range []struct {
			name     string
			bbolt    bool
			interval time.Duration
		}{{"bbolt-2ms", true, 0}, {"committer", false, DefaultCommitInterval}, {"committer-10ms", false, 10 * time.Millisecond}} {
			b.Run(load.name+"/"+side.name, func(b *testing.B) {
				db, c := openCommitter(b, side.interval)
				batch := c.Batch
				if side.bbolt {
					db.MaxBatchDelay = 2 * time.Millisecond
					batch = db.Batch
				}
				val := make([]byte, 300)
				per := max(1, b.N/load.writers)
				before := txID(b, db)
				cpu0 := processCPU()
				b.ResetTimer()
				var wg sync.WaitGroup
				for w := range load.writers {
					wg.Go(func() {
						next := time.Now().Add(time.Duration(w) * load.every / time.Duration(load.writers))
						for i := range per {
							if load.every > 0 {
								time.Sleep(time.Until(next)) // the open load's arrivals
								next = next.Add(load.every)
							}
							var k [8]byte
							binary.BigEndian.PutUint64(k[:], uint64(i*load.writers+w)*0x9E3779B97F4A7C15)
							if err := batch(func(tx *bbolt.Tx) error { return tx.Bucket([]byte("b")).Put(k[:], val) }); err != nil {
								b.Error(err)
								return
							}
						}
					})
				}
				wg.Wait()
				b.StopTimer()
				n := float64(per * load.writers)
				b.ReportMetric(float64(txID(b, db)-before)/n, "commits/write")
				b.ReportMetric(float64((processCPU()-cpu0).Microseconds())/n, "cpu-µs/write")
			})
		}
	}
}

// processCPU is the process's user + system CPU so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
