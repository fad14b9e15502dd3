package redis_test

import (
	"testing"

	"github.com/mcpmon/mcpmon/pkg/clock"
	"github.com/mcpmon/mcpmon/pkg/store"
	"github.com/mcpmon/mcpmon/pkg/store/redis"
	"github.com/mcpmon/mcpmon/pkg/store/storetest"
	"github.com/mcpmon/mcpmon/pkg/testpeers"
)

// TestDeleteEndpoint runs the conformance suite's delete cases on their own.
func TestDeleteEndpoint(t *testing.T) {
	url := testpeers.RedisURL(t)
	storetest.DeleteEndpoint(t, func(t *testing.T, clk *clock.Fake) store.Store {
		return open(t, url, redis.Options{Clock: clk, LeasesOnClock: true})
	})
}
