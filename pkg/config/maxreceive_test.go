package config

import (
	"io"
	"strings"
	"testing"

	"github.com/mcpmon/mcpmon/pkg/queue"
)

// TestMaxReceiveCountIsTheRedriveThreshold: --max-receive-count defaults to
// the stage queues' threshold, is read from MCPMON_MAX_RECEIVE_COUNT, and
// outside SQS's 1..1000 stops the process with one line.
func TestMaxReceiveCountIsTheRedriveThreshold(t *testing.T) {
	o, err := Parse("mcpmon", nil, envOf(nil), io.Discard)
	if err != nil || o.MaxReceiveCount != queue.DefaultMaxReceiveCount {
		t.Fatalf("default = %d, %v; want %d", o.MaxReceiveCount, err, queue.DefaultMaxReceiveCount)
	}
	o, err = Parse("mcpmon", nil, envOf(map[string]string{"MCPMON_MAX_RECEIVE_COUNT": "3"}), io.Discard)
	if err != nil || o.MaxReceiveCount != 3 {
		t.Fatalf("from the environment = %d, %v; want 3", o.MaxReceiveCount, err)
	}
	for _, bad := range []string{"0", "1001", "-1"} {
		_, err := Parse("mcpmon", []string{"--max-receive-count", bad}, envOf(nil), io.Discard)
		if err == nil || !strings.Contains(err.Error(), "--max-receive-count") {
			t.Errorf("--max-receive-count %s: %v, want a usage error naming the flag", bad, err)
		}
	}
}

// TestRedisLedgerReplicas: --redis-ledger-replicas defaults to 0 (no wait),
// is read from MCPMON_REDIS_LEDGER_REPLICAS, and a negative or absurd count
// stops the process with one line naming the flag.
func TestRedisLedgerReplicas(t *testing.T) {
	o, err := Parse("mcpmon", nil, envOf(nil), io.Discard)
	if err != nil || o.RedisLedgerReplicas != 0 {
		t.Fatalf("default = %d, %v; want 0", o.RedisLedgerReplicas, err)
	}
	o, err = Parse("mcpmon", nil, envOf(map[string]string{"MCPMON_REDIS_LEDGER_REPLICAS": "1"}), io.Discard)
	if err != nil || o.RedisLedgerReplicas != 1 {
		t.Fatalf("from the environment = %d, %v; want 1", o.RedisLedgerReplicas, err)
	}
	for _, bad := range []string{"-1", "17"} {
		_, err := Parse("mcpmon", []string{"--redis-ledger-replicas", bad}, envOf(nil), io.Discard)
		if err == nil || !strings.Contains(err.Error(), "--redis-ledger-replicas") {
			t.Errorf("--redis-ledger-replicas %s: %v, want a usage error naming the flag", bad, err)
		}
	}
}
