package aggregator

import (
	"fmt"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/clock"
	"github.com/mcpmon/mcpmon/pkg/store"
	"github.com/mcpmon/mcpmon/pkg/store/redis"
	"github.com/mcpmon/mcpmon/pkg/testpeers"
)

var _ Store = (*redis.Store)(nil)

func newRedisAenv(t *testing.T) *aenv {
	url := testpeers.RedisURL(t)
	return newAenvWith(t, func(clk clock.Clock) store.Store {
		st, err := redis.New(t.Context(), url, redis.Options{
			Prefix: fmt.Sprintf("mcpmon-test:%s:%d:", t.Name(), time.Now().UnixNano()),
			Clock:  clk, LeasesOnClock: true,
		})
		if err != nil {
			t.Fatal(err)
		}
		return st
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
