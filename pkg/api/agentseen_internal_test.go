package api

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/auth"
	"github.com/mcpmon/mcpmon/pkg/store/bolt"
)

// TestAgentRecordSurvivesARestart: a replica that serves an agent's first
// poll after a restart starts from the stored record, so the results
// counted before it are still shown, and the record it writes keeps them.
func TestAgentRecordSurvivesARestart(t *testing.T) {
	st, err := bolt.Open(filepath.Join(t.TempDir(), "s.db"), bolt.Options{SweepInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	p := auth.Principal{KeyID: "k1", Name: "office-1", Tenant: "acme", Location: "office", Scope: auth.ScopeAgent}
	now := time.Date(2026, 12, 2, 5, 0, 10, 0, time.UTC)
	var before agentSeen
	before.poll(t.Context(), st, p, "1.0", nil, now)
	before.results(p, 40, now.Add(time.Second))
	before.poll(t.Context(), st, p, "1.0", nil, now.Add(agentSeenWrite)) // written with the count

	var after agentSeen // the restarted replica
	later := now.Add(agentSeenWrite + 5*time.Second)
	after.poll(t.Context(), st, p, "1.0", nil, later)
	got, ok := after.get("k1")
	if !ok || got.PerMinute(later) != 40 || got.Tenant != "acme" || got.Location != "office" || !got.LastSeen.Equal(later) {
		t.Fatalf("after a restart: %+v (per minute %d), want the 40 results counted before and this poll", got, got.PerMinute(later))
	}
	var third agentSeen
	third.load(t.Context(), st, []auth.Key{{ID: "k1"}})
	if got, _ := third.get("k1"); got.PerMinute(later) != 40 {
		t.Errorf("the record the restarted replica wrote lost the count: %+v", got)
	}
}
