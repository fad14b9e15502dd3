package daemon

import (
	"context"
	"errors"
	"io"
	"log/slog"

	"github.com/mcpmon/mcpmon/pkg/clock"
	"github.com/mcpmon/mcpmon/pkg/config"
	"github.com/mcpmon/mcpmon/pkg/queue"
	"github.com/mcpmon/mcpmon/pkg/store"
)

func openRedis(ctx context.Context, o config.Options, clk clock.Clock, logger *slog.Logger) (store.Store, error) {
	return nil, errors.New("redis store not wired yet")
}

func openSQS(ctx context.Context, o config.Options, logger *slog.Logger, m *queue.Metrics) (*queues, error) {
	return nil, errors.New("sqs queue not wired yet")
}

// EnsureQueues implements `mcpmon queues ensure`.
func EnsureQueues(ctx context.Context, args []string, env func(string) string, stdout, stderr io.Writer) error {
	return errors.New("not wired yet")
}
