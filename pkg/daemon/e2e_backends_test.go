package daemon

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/config"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/seal"
	"github.com/mcpmon/mcpmon/pkg/testpeers"
)

func setupSQS(t *testing.T, o *config.Options) {
	o.Queue = config.QueueSQS
	o.SQSEndpoint = testpeers.SQSEndpoint(t)
	o.SQSRegion = "us-east-1"
	o.SQSPrefix = fmt.Sprintf("e2e%d-", time.Now().UnixNano())
	var out, errOut strings.Builder
	env := func(k string) string {
		return map[string]string{"MCPMON_SQS_ENDPOINT": o.SQSEndpoint, "MCPMON_SQS_REGION": "us-east-1", "MCPMON_SQS_PREFIX": o.SQSPrefix,
			"MCPMON_MAX_RECEIVE_COUNT": strconv.Itoa(o.MaxReceiveCount), "MCPMON_REGIONS": strings.Join(o.Regions, ",")}[k]
	}
	if err := EnsureQueues(t.Context(), nil, env, &out, &errOut); err != nil {
		t.Fatalf("queues ensure: %v\n%s%s", err, out.String(), errOut.String())
	}
	if !strings.Contains(out.String(), "created") {
		t.Fatalf("queues ensure created nothing:\n%s", out.String())
	}
}

func setupRedis(t *testing.T, o *config.Options) {
	o.Store = config.StoreRedis
	o.RedisURL = testpeers.RedisURL(t)
	o.RedisPrefix = fmt.Sprintf("e2e-%d:", time.Now().UnixNano())
	o.SecretsKey = model.Secret(testSecretsKey)
}

// testSecretsKey seals endpoint secrets in tests that share Redis.
var testSecretsKey = seal.EncodeKey(seal.NewKey())
