package daemon

import (
	"fmt"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/config"
	"github.com/mcpmon/mcpmon/pkg/testpeers"
)

func setupSQS(t *testing.T, o *config.Options) {
	o.Queue = config.QueueSQS
	o.SQSEndpoint = testpeers.SQSEndpoint(t)
	t.Skip("sqs backend not wired yet")
}

func setupRedis(t *testing.T, o *config.Options) {
	o.Store = config.StoreRedis
	o.RedisURL = testpeers.RedisURL(t)
	o.RedisPrefix = fmt.Sprintf("e2e-%d:", time.Now().UnixNano())
}
