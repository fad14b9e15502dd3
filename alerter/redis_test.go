package alerter

import (
	"testing"

	"github.com/mcpmon/mcpmon/pkg/clock"
	"github.com/mcpmon/mcpmon/pkg/store"
	"github.com/mcpmon/mcpmon/pkg/store/redis"
	"github.com/mcpmon/mcpmon/pkg/store/redis/redistest"
)

var _ Store = (*redis.Store)(nil)

// newRedisEnv is newEnv on a real redis-server, under a prefix of its own.
func newRedisEnv(t *testing.T) *env {
	return newEnvWith(t, func(clk clock.Clock) store.Store {
		return redistest.Open(t, redis.Options{Clock: clk, LeasesOnClock: true})
	})
}

func TestTwoAlertersRaceRedis(t *testing.T) { testTwoAlertersRace(t, newRedisEnv(t)) }

func TestCrashAtEveryStepRedis(t *testing.T) { testCrashAtEveryStep(t, newRedisEnv) }

func TestBeyondTheDedupWindowRedis(t *testing.T) {
	testBeyondTheDedupWindow(t, newPipelineOn(t, newRedisEnv(t)))
}

func TestRegionsRedis(t *testing.T) { testRegions(t, newPipelineOn(t, newRedisEnv(t))) }

func TestDeliveryRecordRedis(t *testing.T) { testDeliveryRecord(t, newRedisEnv) }

func TestGroupCrashAtEveryStepRedis(t *testing.T) { testGroupCrashAtEveryStep(t, newRedisEnv) }

func TestTwoReplicasFormOneGroupRedis(t *testing.T) {
	testTwoReplicasFormOneGroup(t, newStormEnvOn(t, newRedisEnv(t)))
}
