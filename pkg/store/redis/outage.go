// Errors and the outage log: which failures mean "Redis cannot serve now"
// (store.ErrUnavailable), and one warning per outage with one recovery line.

package redis

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/mcpmon/mcpmon/pkg/store"
)

// done classifies err and keeps the once-per-outage log: the first
// connectivity failure logs a warning, the next success logs recovery.
func (s *Store) done(op string, err error) error {
	if err == nil || errors.Is(err, goredis.Nil) {
		s.recovered()
		return err
	}
	if refusesWrites(err) {
		s.refused.Failed(fmt.Errorf("%s: %w", op, err))
		return fmt.Errorf("redis store: %s: %w: %w", op, store.ErrUnavailable, err)
	}
	if !unavailable(err) {
		// The server answered (a script or type error): reachable.
		s.recovered()
		return fmt.Errorf("redis store: %s: %w", op, err)
	}
	if c, ok := s.rdb.(*goredis.ClusterClient); ok {
		// go-redis keeps routing a dead primary's slots to it until it
		// next reloads the slot map (every minute by default): a failure
		// asks for a reload now, so the replica that takes the slots over
		// is used as soon as the cluster promotes it. Reloads coalesce.
		c.ReloadState(context.Background())
	}
	s.mu.Lock()
	first := s.downSince.IsZero()
	if first {
		s.downSince = s.clk.Now()
	}
	s.mu.Unlock()
	if first {
		s.log.Warn("redis unreachable: store operations fail with ErrUnavailable until it returns; messages stay queued", "op", op, "err", err)
	}
	return fmt.Errorf("redis store: %s: %w: %w", op, store.ErrUnavailable, err)
}

func (s *Store) recovered() {
	s.mu.Lock()
	since := s.downSince
	s.downSince = time.Time{}
	s.mu.Unlock()
	if !since.IsZero() {
		s.log.Info("redis reachable again", "down_for", s.clk.Now().Sub(since).String())
	}
}

// refusesWrites reports whether err is Redis refusing a write because it
// cannot persist (MISCONF: its last snapshot or AOF write failed, a full
// or broken disk). Redis still answers PING and reads, so it is not an
// outage of the connection; but the write is to be retried, not
// dead-lettered (store.ErrUnavailable), as when Redis is unreachable.
func refusesWrites(err error) bool {
	var rerr goredis.Error
	return errors.As(err, &rerr) && strings.HasPrefix(rerr.Error(), "MISCONF")
}

// unavailable reports whether err means "Redis cannot serve right now" (the
// caller should retry later) rather than a bad request.
func unavailable(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, goredis.ErrClosed) {
		return false
	}
	var rerr goredis.Error
	if errors.As(err, &rerr) {
		// Server replies that mean "not now": loading the AOF after a
		// restart, a replica during failover, cluster reconfiguring.
		for _, p := range []string{"LOADING", "READONLY", "MASTERDOWN", "CLUSTERDOWN", "TRYAGAIN", "BUSY", "NOREPLICAS"} {
			if strings.HasPrefix(rerr.Error(), p) {
				return true
			}
		}
		return false
	}
	// Not a server reply: dial and I/O errors, timeouts (including the
	// caller's deadline while Redis does not answer), a full pool.
	return true
}

// RouteDriverLogs sends go-redis's own log lines (one per failed dial, which
// during an outage means many) to l at Debug level instead of stderr, so the
// store's once-per-outage warning is what operators see. go-redis keeps its
// logger in a package variable, so this affects every go-redis client in the
// process: call it once from main, not from libraries or parallel tests.
func RouteDriverLogs(l *slog.Logger) {
	goredis.SetLogger(driverLog{l.With("component", "go-redis")})
}

type driverLog struct{ l *slog.Logger }

func (d driverLog) Printf(ctx context.Context, format string, v ...any) {
	d.l.DebugContext(ctx, fmt.Sprintf(format, v...))
}
