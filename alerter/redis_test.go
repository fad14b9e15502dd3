package alerter

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

// newRedisEnv is newEnv on a real redis-server, under a prefix of its own.
func newRedisEnv(t *testing.T) *env {
	url := testpeers.RedisURL(t)
	return newEnvWith(t, func(clk clock.Clock) store.Store {
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

func TestTwoAlertersRaceRedis(t *testing.T) { testTwoAlertersRace(t, newRedisEnv(t)) }

func TestCrashAtEveryStepRedis(t *testing.T) { testCrashAtEveryStep(t, newRedisEnv) }

func TestBeyondTheDedupWindowRedis(t *testing.T) {
	testBeyondTheDedupWindow(t, newPipelineOn(t, newRedisEnv(t)))
}

func TestRegionsRedis(t *testing.T) { testRegions(t, newPipelineOn(t, newRedisEnv(t))) }

func TestDeliveryRecordRedis(t *testing.T) { testDeliveryRecord(t, newRedisEnv) }
