// Package testpeers tells tests where the real peers that `make test` starts
// are listening: a redis-server and the fauxqs SQS emulator, both on
// 127.0.0.1. A test that needs a peer that is not configured is skipped with
// the reason, or fails when MCPMON_REQUIRE_PEERS=1 (set by `make test`, so CI
// can never pass by skipping). It also owns the end-to-end harness tests
// share: a built mcpmon binary, a Fleet of its processes, a single
// `mcpmon run` (StartMcpmon), Eventually, and the Receiver that stands in
// for a sink's or webhook's server; their testing-free core is the e2e
// subpackage, which cmd/mcpmon-chaos uses too.
package testpeers

import (
	"os"
	"testing"
)

// Environment variables written by .ci/test.sh.
const (
	EnvRedisURL    = "MCPMON_TEST_REDIS_URL"    // redis://127.0.0.1:PORT/0
	EnvSQSEndpoint = "MCPMON_TEST_SQS_ENDPOINT" // http://127.0.0.1:PORT
	EnvRequire     = "MCPMON_REQUIRE_PEERS"
	// EnvTSEverything is the entry script of @modelcontextprotocol/server-everything
	// (the TypeScript SDK's reference server), run with node by the tests.
	EnvTSEverything = "MCPMON_TEST_TS_EVERYTHING"
	// EnvChromium is Debian's chromium binary, driven headless by the
	// status page browser test.
	EnvChromium = "MCPMON_TEST_CHROMIUM"
	// EnvConformance is the entry script of @modelcontextprotocol/conformance
	// and EnvNode22 the Node 22 that runs it (.ci/start-conformance.sh).
	EnvConformance = "MCPMON_TEST_CONFORMANCE"
	EnvNode22      = "MCPMON_TEST_NODE22"
	// EnvFull asks the load-shaped tests for their documented size
	// (`make test-large`); `make test` runs them small.
	EnvFull = "MCPMON_TEST_FULL"
)

// Size is small under `make test` and full under `make test-large`
// (MCPMON_TEST_FULL=1): the property a storm or paging test checks holds
// at a dozen endpoints; the fifty or ten thousand of its acceptance are a
// load run of their own.
func Size(small, full int) int {
	if os.Getenv(EnvFull) != "" {
		return full
	}
	return small
}

// Conformance returns the MCP conformance suite's entry script and the
// node binary to run it with, or skips/fails t.
func Conformance(t testing.TB) (entry, node string) {
	return lookup(t, EnvConformance, "the MCP conformance suite (npm)"), lookup(t, EnvNode22, "Node 22 (npm)")
}

// Chromium returns the path of the chromium binary or skips/fails t.
func Chromium(t testing.TB) string { return lookup(t, EnvChromium, "chromium (Debian)") }

// RedisURL returns the test Redis URL or skips/fails t.
func RedisURL(t testing.TB) string { return lookup(t, EnvRedisURL, "redis-server") }

// The test Redis Cluster, written by .ci/start-rediscluster.sh: 3 primaries
// and 3 replicas (redis+cluster://h1,h2,h3), and its nodes file, "PORT PID
// CONF" per node, for tests that kill a primary.
const (
	EnvRedisClusterURL   = "MCPMON_TEST_REDIS_CLUSTER_URL"
	EnvRedisClusterNodes = "MCPMON_TEST_REDIS_CLUSTER_NODES"
)

// RedisClusterURL returns the test Redis Cluster's URL or skips/fails t.
func RedisClusterURL(t testing.TB) string {
	return lookup(t, EnvRedisClusterURL, "a Redis Cluster (redis-server)")
}

// RedisClusterNodes returns the test Redis Cluster's nodes file or skips/fails t.
func RedisClusterNodes(t testing.TB) string {
	return lookup(t, EnvRedisClusterNodes, "a Redis Cluster (redis-server)")
}

// SQSEndpoint returns the fauxqs endpoint URL or skips/fails t.
func SQSEndpoint(t testing.TB) string { return lookup(t, EnvSQSEndpoint, "fauxqs") }

// TSEverything returns the path of the TypeScript SDK's server-everything
// entry script or skips/fails t.
func TSEverything(t testing.TB) string {
	return lookup(t, EnvTSEverything, "the TypeScript SDK servers (npm)")
}

func lookup(t testing.TB, env, peer string) string {
	t.Helper()
	if v := os.Getenv(env); v != "" {
		return v
	}
	if os.Getenv(EnvRequire) == "1" {
		t.Fatalf("%s is not set but %s=1: `make test` should have started %s", env, EnvRequire, peer)
	}
	t.Skipf("%s not set: run `make test` to start a real %s for this test", env, peer)
	return ""
}
