package config

import (
	"io"
	"strings"
	"testing"
)

// TestLedgerMustOutlastTheSubscriberHorizon: with subscriptions on, a
// ledger that forgets a sent notice before the notice stops being owed
// would send it twice, so Parse refuses it; without them it is fine.
func TestLedgerMustOutlastTheSubscriberHorizon(t *testing.T) {
	subs := []string{"--subscribe-smtp-addr", "127.0.0.1:25", "--subscribe-smtp-from", "status@example.com", "--subscribe-base-url", "https://status.example.com"}
	_, err := Parse("mcpmon", append(subs, "--ledger-ttl", "24h"), envOf(nil), io.Discard)
	if err == nil || !strings.Contains(err.Error(), "--ledger-ttl 24h0m0s: with --subscribe-smtp-addr it must be longer than 48h0m0s") {
		t.Errorf("--ledger-ttl 24h with subscriptions: %v, want the horizon error", err)
	}
	if _, err := Parse("mcpmon", append(subs, "--ledger-ttl", "72h"), envOf(nil), io.Discard); err != nil {
		t.Errorf("--ledger-ttl 72h with subscriptions: %v", err)
	}
	if _, err := Parse("mcpmon", []string{"--ledger-ttl", "24h"}, envOf(nil), io.Discard); err != nil {
		t.Errorf("--ledger-ttl 24h without subscriptions: %v", err)
	}
}
