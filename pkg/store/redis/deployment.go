// The deployment marker: how a running mcpmon notices that Redis lost its
// data. Redis restarted without persistence, or an empty replica promoted,
// answers PING and every read as before, with nothing in it: the API
// refuses every key, the prober finds no endpoint and probing stops, and
// nothing else tells. With Options.WatchDeployment the store holds a
// marker key from its start (written once, when Redis has none: a new
// deployment, or one from before the marker) and Ping checks it is still
// the one it read, so /readyz answers 503 and an error is logged every 30 s
// until Redis is restored. The store never writes the marker again while
// it runs: that would bury the loss.

package redis

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// deploymentKey names the marker (under the global tag when sharded).
const deploymentKey = "deployment"

// ErrDataLost: Redis no longer holds the data this process started on.
var ErrDataLost = errors.New("redis lost mcpmon's data")

// deploymentLogEvery paces the log of a lost marker.
const deploymentLogEvery = 30 * time.Second

// holdDeployment reads the marker, writing one first when Redis holds
// none, and remembers it.
func (s *Store) holdDeployment(ctx context.Context) error {
	key := s.k(deploymentKey)
	mark := rand.Text() + " " + s.clk.Now().UTC().Format(time.RFC3339)
	_, err := s.rdb.SetNX(ctx, key, mark, 0).Result()
	if err := s.done("write the deployment marker", err); err != nil {
		return err
	}
	v, err := s.rdb.Get(ctx, key).Result()
	if err := s.done("read the deployment marker", err); err != nil {
		return err
	}
	s.mu.Lock()
	s.deployment = v
	s.mu.Unlock()
	return nil
}

// checkDeployment is nil while Redis holds the marker this process read
// (or, before Redis first answered, once it is read).
func (s *Store) checkDeployment(ctx context.Context) error {
	if !s.watchDeployment {
		return nil
	}
	s.mu.Lock()
	held := s.deployment
	s.mu.Unlock()
	if held == "" {
		return s.holdDeployment(ctx)
	}
	key := s.k(deploymentKey)
	v, err := s.rdb.Get(ctx, key).Result()
	if errors.Is(err, goredis.Nil) {
		err = fmt.Errorf("%w: its deployment marker %s, there since %s, is gone (Redis restarted without persistence, or an empty replica took over). Restore Redis from a backup or the replica that holds the data, then restart mcpmon; until then probing has stopped and every API key is refused. mcpmon does not write the marker again, so this stays reported",
			ErrDataLost, key, markedAt(held))
	} else if err != nil {
		return s.done("read the deployment marker", err)
	} else if v != held {
		err = fmt.Errorf("%w: its deployment marker %s changed (there since %s, now since %s): Redis now holds another deployment's data, or a backup restored over it. Check what Redis holds, then restart mcpmon to work on it",
			ErrDataLost, key, markedAt(held), markedAt(v))
	} else {
		return nil
	}
	if s.lost.Due(s.clk.Now()) {
		s.log.Error(err.Error())
	}
	return err
}

// markedAt is when the marker m was written.
func markedAt(m string) string {
	if _, at, ok := strings.Cut(m, " "); ok {
		return at
	}
	return "an unknown time"
}

// Created is when the deployment marker this process holds was written:
// when mcpmon first started on this Redis (or, for data from before the
// marker, when a version with it first did). Zero until the marker is
// held (Options.WatchDeployment, and Redis answered). A process started on
// an emptied Redis holds a new marker and reports a later time:
// mcpmon_store_created_timestamp_seconds moving forward is how the
// operator learns of a loss that happened while no process ran, which the
// marker itself cannot tell from a new deployment.
func (s *Store) Created() time.Time {
	s.mu.Lock()
	held := s.deployment
	s.mu.Unlock()
	if _, at, ok := strings.Cut(held, " "); ok {
		if t, err := time.Parse(time.RFC3339, at); err == nil {
			return t
		}
	}
	return time.Time{}
}
