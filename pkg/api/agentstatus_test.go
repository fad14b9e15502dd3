package api_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mcpmon/mcpmon/pkg/api"
	apiv1 "github.com/mcpmon/mcpmon/pkg/api/v1"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/store"
)

// pollAt polls as the agent with key would, its clock sending agentTime
// ("" for none).
func (ag *agentHarness) pollAt(key, agentTime string) {
	ag.t.Helper()
	req, _ := http.NewRequestWithContext(ag.t.Context(), http.MethodGet, ag.srv.URL+"/v1/agent/commands?wait=0s", nil)
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("User-Agent", apiv1.AgentUserAgent+"1.2.3")
	if agentTime != "" {
		req.Header.Set(apiv1.AgentTimeHeader, agentTime)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		ag.t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		ag.t.Fatalf("poll: %d", resp.StatusCode)
	}
}

func (ag *agentHarness) agentView(key, name string) apiv1.AgentView {
	ag.t.Helper()
	resp, b := ag.call(http.MethodGet, "/v1/agents/"+name, key, "")
	var v apiv1.AgentView
	if resp.StatusCode != http.StatusOK || json.Unmarshal(b, &v) != nil {
		ag.t.Fatalf("get agent: %d %s", resp.StatusCode, b)
	}
	return v
}

// TestAgentViewShowsOnlineOfflineAndSkew: a poll makes the agent online
// with its clock's skew; a bad time is ignored, not trusted; without a
// poll for the offline timeout it is offline since its last poll.
func TestAgentViewShowsOnlineOfflineAndSkew(t *testing.T) {
	reg := prometheus.NewRegistry()
	ag := newAgentHarness(t, true)
	ag.authHarness = newAuthHarness(t, func(o *api.Options) {
		o.AgentCommands, o.AgentResults, o.AgentSecretsOverHTTP = ag.locs, ag.pub, true
		o.Metrics, o.AgentOfflineAfter = api.NewMetrics(reg), 2*time.Minute
	})
	admin := ag.keys["a/write"]
	key := ag.agent(admin, "office-1", "office")
	if v := ag.agentView(admin, "office-1"); v.Online || v.OfflineSince != nil || v.ClockSkewSeconds != nil || v.LastSeen != nil {
		t.Fatalf("before its first poll: %+v, want neither online nor offline", v)
	}

	ag.pollAt(key, ag.clock.Now().Add(-1500*time.Millisecond).Format(time.RFC3339Nano))
	v := ag.agentView(admin, "office-1")
	if !v.Online || v.OfflineSince != nil || v.ClockSkewSeconds == nil || *v.ClockSkewSeconds != -1.5 || v.Version != "1.2.3" {
		t.Fatalf("after a poll 1.5 s behind: %+v, want online with skew -1.5", v)
	}
	for _, bad := range []string{"yesterday", ag.clock.Now().Add(48 * time.Hour).Format(time.RFC3339), "2026-03-01T12:00:00.000000000000000000000000000000000000Z"} {
		ag.pollAt(key, bad)
		if v := ag.agentView(admin, "office-1"); v.ClockSkewSeconds == nil || *v.ClockSkewSeconds != -1.5 {
			t.Errorf("after a poll with time %.20q: skew %v, want the last good one kept", bad, v.ClockSkewSeconds)
		}
	}
	if got := gaugeOf(t, reg, "mcpmon_agent_clock_skew_seconds"); got != -1.5 {
		t.Errorf("mcpmon_agent_clock_skew_seconds = %v, want -1.5", got)
	}

	last := ag.clock.Now()
	ag.clock.Advance(2*time.Minute - time.Second)
	if v := ag.agentView(admin, "office-1"); !v.Online {
		t.Errorf("a second before the offline timeout: %+v, want online", v)
	}
	ag.clock.Advance(time.Second)
	v = ag.agentView(admin, "office-1")
	if v.Online || v.OfflineSince == nil || !v.OfflineSince.Equal(last) {
		t.Fatalf("at the offline timeout: %+v, want offline since %s", v, last)
	}
	ag.pollAt(key, "")
	if v := ag.agentView(admin, "office-1"); !v.Online || v.OfflineSince != nil {
		t.Errorf("after polling again: %+v, want online", v)
	}
}

// gaugeOf is the value of the one series of gauge family name in reg.
func gaugeOf(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) == 1 {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatalf("no single series of %s", name)
	return 0
}

// TestRevokingAnAgentDropsItsRecord: by either route, a revoked agent's
// record leaves the store, so the agent watcher does not report its
// silence.
func TestRevokingAnAgentDropsItsRecord(t *testing.T) {
	for _, route := range []string{"/v1/agents/", "/v1/keys/"} {
		t.Run(route, func(t *testing.T) {
			ag := newAgentHarness(t, true)
			admin := ag.keys["a/admin"]
			key := ag.agent(admin, "office-1", "office")
			ag.pollAt(key, "")
			id := ag.agentView(admin, "office-1").ID
			if _, err := ag.store.GetObject(t.Context(), store.KindAgentSeen, id); err != nil {
				t.Fatalf("no record after the first poll: %v", err)
			}
			if resp, b := ag.call(http.MethodDelete, route+id, admin, ""); resp.StatusCode != http.StatusOK {
				t.Fatalf("revoke: %d %s", resp.StatusCode, b)
			}
			if _, err := ag.store.GetObject(t.Context(), store.KindAgentSeen, id); !errors.Is(err, model.ErrNotFound) {
				t.Errorf("the revoked agent's record: %v, want not found", err)
			}
		})
	}
}
