package daemon

import (
	"encoding/json"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/clock"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/store"
	"github.com/mcpmon/mcpmon/pkg/store/bolt"
)

// TestAgentFleetReadsTheAgentsRecords: the aggregator's view of agent
// locations is the API's records in the store, listed at most every
// agentFleetTTL, so a window decision costs no store read.
func TestAgentFleetReadsTheAgentsRecords(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 12, 2, 5, 0, 0, 0, time.UTC))
	st, err := bolt.Open(filepath.Join(t.TempDir(), "s.db"), bolt.Options{Clock: clk, SweepInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	put := func(id string, s model.AgentSeen) {
		doc, _ := json.Marshal(s)
		if err := st.PutObject(t.Context(), store.KindAgentSeen, id, doc); err != nil {
			t.Fatal(err)
		}
	}
	put("k1", model.AgentSeen{Tenant: "acme", Location: "office", LastSeen: clk.Now().Add(-5 * time.Minute)})
	f := &agentFleet{st: st, after: model.DefaultAgentOfflineAfter, clk: clk, log: slog.New(slog.DiscardHandler)}
	if !f.Offline(t.Context(), "acme", "loc-office", clk.Now()) {
		t.Error("a location whose one agent is silent for 5m is not offline")
	}
	if f.Offline(t.Context(), "acme", "eu", clk.Now()) || f.Offline(t.Context(), "globex", "loc-office", clk.Now()) {
		t.Error("a central region, or another tenant's location, is offline")
	}
	put("k1", model.AgentSeen{Tenant: "acme", Location: "office", LastSeen: clk.Now()})
	if !f.Offline(t.Context(), "acme", "loc-office", clk.Now()) {
		t.Error("the list was read again within its TTL")
	}
	clk.Advance(agentFleetTTL)
	if f.Offline(t.Context(), "acme", "loc-office", clk.Now()) {
		t.Error("an agent that polled again is still offline after the TTL")
	}
}
