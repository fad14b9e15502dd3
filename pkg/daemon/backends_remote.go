package daemon

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"io"
	"log/slog"

	"github.com/mcpmon/mcpmon/pkg/clock"
	"github.com/mcpmon/mcpmon/pkg/config"
	"github.com/mcpmon/mcpmon/pkg/queue"
	"github.com/mcpmon/mcpmon/pkg/store"
	redisstore "github.com/mcpmon/mcpmon/pkg/store/redis"
)

var routeRedisLogs sync.Once

func openRedis(ctx context.Context, o config.Options, clk clock.Clock, logger *slog.Logger) (store.Store, error) {
	// go-redis logs every failed dial on its own global logger; send those
	// to debug so an outage is one warning from the store, not a flood.
	routeRedisLogs.Do(func() { redisstore.RouteDriverLogs(logger) })
	s, err := redisstore.New(ctx, o.RedisURL, redisstore.Options{Prefix: o.RedisPrefix, LedgerTTL: o.LedgerTTL, Clock: clk, Logger: logger})
	if err != nil {
		return nil, fmt.Errorf("connect to Redis (check --redis-url and that Redis is up): %w", err)
	}
	return s, nil
}

func openSQS(ctx context.Context, o config.Options, logger *slog.Logger, m *queue.Metrics) (*queues, error) {
	return nil, errors.New("sqs queue not wired yet")
}

// EnsureQueues implements `mcpmon queues ensure`.
func EnsureQueues(ctx context.Context, args []string, env func(string) string, stdout, stderr io.Writer) error {
	return errors.New("not wired yet")
}
