// Package e2e is the testing-free core of the end-to-end harness: it builds
// the mcpmon binary, starts it (or any peer) as a child process, learns
// where it listens, waits until it is ready, talks to its REST API and
// receives what it sends out. Tests reach it through the thin testing.TB
// helpers of pkg/testpeers; cmd/mcpmon-chaos uses it directly, which is why
// nothing here imports "testing" (nor net/http/httptest, which registers a
// flag in every binary that links it).
package e2e

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"time"
)

// Package is the import path `go build` compiles for the mcpmon binary.
const Package = "github.com/mcpmon/mcpmon/cmd/mcpmon"

// Build compiles the mcpmon binary into dir with the go command on PATH
// (`go test` puts its own first) and returns the binary's path. It is an
// exec of the go tool, not an import of the daemon: the harness stays out
// of the import graph that TestLayering checks.
func Build(ctx context.Context, dir string) (string, error) {
	bin := filepath.Join(dir, "mcpmon")
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, Package).CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s: %w\n%s", Package, err, out)
	}
	return bin, nil
}

// FreeAddr is a 127.0.0.1 address no one listened on a moment ago: for a
// child's --listen flag, or as a port that refuses connections. Another
// process may take it in between; a child that fails to bind says so.
func FreeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// Poll calls cond every interval until it returns nil, and returns nil; or,
// once ctx is done, ctx's error joined with cond's last one. It is for state
// outside this process (a child, a socket, a Prometheus), where no fake
// clock reaches: each call is an observation, not a guess of how long
// something takes.
func Poll(ctx context.Context, interval time.Duration, cond func() error) error {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		err := cond()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return errors.Join(ctx.Err(), err)
		case <-tick.C:
		}
	}
}

// Distributed says where the processes of one distributed run meet: an
// SQS endpoint (fauxqs) and a Redis, both under Prefix so that runs sharing
// the peers never see each other's queues or keys, and the key that seals
// endpoint secrets in that Redis.
type Distributed struct {
	SQSEndpoint string // http://127.0.0.1:PORT
	RedisURL    string // redis://127.0.0.1:PORT/0
	Prefix      string
	SecretsKey  string // seal.EncodeKey form
}

// Env is the environment that puts an mcpmon process on d: the SQS queue
// (with the static credentials the emulator ignores) and the Redis store.
func (d Distributed) Env() []string {
	return []string{
		"AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=test", "AWS_REGION=us-east-1",
		"MCPMON_QUEUE=sqs", "MCPMON_SQS_ENDPOINT=" + d.SQSEndpoint, "MCPMON_SQS_PREFIX=" + d.Prefix, "MCPMON_SQS_REGION=us-east-1",
		"MCPMON_STORE=redis", "MCPMON_REDIS_URL=" + d.RedisURL, "MCPMON_REDIS_PREFIX=" + d.Prefix + ":",
		"MCPMON_SECRETS_KEY=" + d.SecretsKey,
	}
}
