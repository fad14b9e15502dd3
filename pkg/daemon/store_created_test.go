package daemon

import (
	"io"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/store/redis/redistest"
)

// TestStoreCreatedMovesOnlyWhenTheStoreIsEmptied: what rule
// MCPMonStoreReplaced reads. mcpmon_store_created_timestamp_seconds stays
// put across a restart on the same data (a day later), and moves forward
// when a process starts on the emptied store: the loss no process can tell
// from a new deployment. On the embedded store and on a real Redis.
func TestStoreCreatedMovesOnlyWhenTheStoreIsEmptied(t *testing.T) {
	for _, backend := range []string{"embedded", "redis"} {
		t.Run(backend, func(t *testing.T) {
			o := fastOptions(t)
			empty := func() { o.DataDir = t.TempDir() }
			if backend == "redis" {
				setupRedis(t, &o)
				empty = func() { redistest.Flush(t, o.RedisURL, o.RedisPrefix) }
			}
			created := func(ahead time.Duration) float64 {
				t.Helper()
				d, err := Start(t.Context(), RoleAll, o, Deps{Logger: testLogger(t), Stdout: io.Discard, Clock: aheadClock(ahead)})
				if err != nil {
					t.Fatal(err)
				}
				defer func() {
					d.Stop()
					if err := d.Wait(); err != nil {
						t.Errorf("mcpmon stopped with: %v", err)
					}
				}()
				v := metricValue(t, get(t, d.Addr(), "/metrics"), "mcpmon_store_created_timestamp_seconds")
				if v == 0 {
					t.Fatal("mcpmon_store_created_timestamp_seconds not exported")
				}
				return v
			}
			first := created(0)
			if again := created(24 * time.Hour); again != first {
				t.Fatalf("created after a restart a day later = %v, want %v as before", again, first)
			}
			empty()
			if after := created(48 * time.Hour); after < first+47*3600 {
				t.Fatalf("created after the store was emptied, two days on = %v, want about two days after %v", after, first)
			}
		})
	}
}
