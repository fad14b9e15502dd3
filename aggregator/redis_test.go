package aggregator

import (
	"testing"

	"github.com/mcpmon/mcpmon/pkg/clock"
	"github.com/mcpmon/mcpmon/pkg/store"
	"github.com/mcpmon/mcpmon/pkg/store/redis"
	"github.com/mcpmon/mcpmon/pkg/store/redis/redistest"
)

var _ Store = (*redis.Store)(nil)

func newRedisAenv(t *testing.T) *aenv {
	return newAenvWith(t, func(clk clock.Clock) store.Store {
		return redistest.Open(t, redis.Options{Clock: clk, LeasesOnClock: true})
	})
}

// Redis keeps window times as millisecond scores: the grace boundary must
// hold there too.
func TestWindowDecidedAfterGraceOnceRedis(t *testing.T) {
	testWindowDecidedAfterGraceOnce(t, newRedisAenv(t))
}

func TestDuplicateAndLateResultsRedis(t *testing.T) { testDuplicateAndLateResults(t, newRedisAenv(t)) }

func TestNoDataForSilentWindowRedis(t *testing.T) {
	e := newRedisAenv(t)
	if err := e.st.DeleteEndpoint(e.ctx, "ep"); err != nil {
		t.Fatal(err)
	}
	testNoDataForSilentWindow(t, e)
}
