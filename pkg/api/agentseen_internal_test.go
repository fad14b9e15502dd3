package api

import (
	"path/filepath"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mcpmon/mcpmon/pkg/auth"
	"github.com/mcpmon/mcpmon/pkg/model"
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

// seenStore is a store for agent records, and what a replica starting
// on it would read of an agent.
func seenStore(t *testing.T) (*bolt.Store, func(id string) (model.AgentSeen, bool)) {
	t.Helper()
	st, err := bolt.Open(filepath.Join(t.TempDir(), "s.db"), bolt.Options{SweepInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st, func(id string) (model.AgentSeen, bool) {
		var seen agentSeen
		seen.load(t.Context(), st, []auth.Key{{ID: id}})
		return seen.get(id)
	}
}

// TestAgentRecordCatchesUpWithTheLastPoll: a poll that is not written at
// once is written agentSeenWrite after the last write, so the record the
// agent watcher judges ends at the agent's last poll (the one GET
// /v1/agents shows), not up to agentSeenWrite before it; a trailing write
// pending when the agent is revoked does not bring its record back.
func TestAgentRecordCatchesUpWithTheLastPoll(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st, stored := seenStore(t)
		var seen agentSeen
		p := auth.Principal{KeyID: "k1", Name: "office-1", Tenant: "acme", Location: "office", Scope: auth.ScopeAgent}
		first := time.Now()
		seen.poll(t.Context(), st, p, "1.0", nil, first) // written at once
		time.Sleep(5 * time.Second)
		last := time.Now()
		seen.poll(t.Context(), st, p, "1.0", nil, last) // not due: trailing
		if got, _ := stored("k1"); !got.LastSeen.Equal(first.UTC()) {
			t.Fatalf("before the trailing write: stored lastSeen %v, want the first poll %v", got.LastSeen, first.UTC())
		}
		time.Sleep(agentSeenWrite - 5*time.Second + time.Millisecond)
		synctest.Wait()
		if got, _ := stored("k1"); !got.LastSeen.Equal(last.UTC()) {
			t.Fatalf("after the trailing write: stored lastSeen %v, want the last poll %v", got.LastSeen, last.UTC())
		}

		// Revoked with a trailing write pending: the record stays deleted.
		p2 := auth.Principal{KeyID: "k2", Name: "office-2", Tenant: "acme", Location: "office", Scope: auth.ScopeAgent}
		seen.poll(t.Context(), st, p2, "1.0", nil, time.Now())
		time.Sleep(time.Second)
		seen.poll(t.Context(), st, p2, "1.0", nil, time.Now())
		if err := seen.forget(t.Context(), st, auth.Key{ID: "k2", Location: "office"}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(agentSeenWrite)
		synctest.Wait()
		if got, ok := stored("k2"); ok {
			t.Fatalf("a revoked agent's record was written again by its trailing write: %+v", got)
		}
	})
}

// TestTrailingWriteKeepsAnotherReplicasNewerRecord: an agent polls
// replica A, then moves to replica B (a restart, a load balancer), which
// writes its newer polls. A's trailing write, due later, carries an older
// poll: it must not overwrite B's record, or the agent watcher would judge
// a poll up to agentSeenWrite old.
func TestTrailingWriteKeepsAnotherReplicasNewerRecord(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st, stored := seenStore(t)
		var a, b agentSeen
		p := auth.Principal{KeyID: "k1", Name: "office-1", Tenant: "acme", Location: "office", Scope: auth.ScopeAgent}
		a.poll(t.Context(), st, p, "1.0", nil, time.Now()) // A writes at once
		time.Sleep(5 * time.Second)
		a.poll(t.Context(), st, p, "1.0", nil, time.Now()) // A's trailing write due 10 s from now
		time.Sleep(3 * time.Second)
		moved := time.Now()
		b.poll(t.Context(), st, p, "1.0", nil, moved) // B's first poll: written at once
		time.Sleep(agentSeenWrite)                    // A's trailing write came due meanwhile
		synctest.Wait()
		if got, _ := stored("k1"); got.LastSeen.Before(moved.UTC()) {
			t.Fatalf("after replica A's trailing write: stored lastSeen %v, want replica B's newer poll %v", got.LastSeen, moved.UTC())
		}
	})
}
