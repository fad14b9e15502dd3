package aggregator

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/msg"
)

// agentRecords answers AgentLocations from agents' records, by the rule
// pkg/daemon's reader applies (model.LocationOffline).
type agentRecords []model.AgentSeen

func (r agentRecords) Offline(_ context.Context, tenant, region string, t time.Time) bool {
	return model.LocationOffline(r, tenant, strings.TrimPrefix(region, "loc-"), t, model.DefaultAgentOfflineAfter)
}

// TestOfflineAgentLocationDropsOutOfTheDueRegions: while every agent of a
// location is offline, the location is not due: an endpoint probed only
// there is no_data, never down, and with a central region due the quorum
// is judged among the regions that reported. A location whose agent is
// online, or whose agent polled again since, stays due as no_data.
func TestOfflineAgentLocationDropsOutOfTheDueRegions(t *testing.T) {
	end := w0.Add(time.Minute)
	agent := func(tenant string, last time.Duration) model.AgentSeen {
		return model.AgentSeen{Tenant: tenant, Location: "office", LastSeen: end.Add(last)}
	}
	downEU := []msg.ProbeResult{res("eu", msg.StatusDown, "http_5xx", 0)}
	tests := []struct {
		name    string
		agents  agentRecords
		chosen  []string
		results []msg.ProbeResult
		due     []string
		state   msg.State
	}{
		{"online agent: its location stays due and counts in the quorum", agentRecords{agent("acme", -10*time.Second)},
			[]string{"eu", "loc-office"}, downEU, []string{"eu", "loc-office"}, msg.StateRegional},
		{"offline agent: judged among the regions that reported", agentRecords{agent("acme", -2*time.Minute)},
			[]string{"eu", "loc-office"}, downEU, []string{"eu"}, msg.StateDown},
		{"one of two agents online: still due", agentRecords{agent("acme", -2*time.Minute), agent("acme", -time.Second)},
			[]string{"eu", "loc-office"}, downEU, []string{"eu", "loc-office"}, msg.StateRegional},
		{"polled again since the window: stays due", agentRecords{agent("acme", 3*time.Minute)},
			[]string{"eu", "loc-office"}, downEU, []string{"eu", "loc-office"}, msg.StateRegional},
		{"another tenant's offline agent of that name: stays due", agentRecords{{Tenant: "globex", Location: "office", LastSeen: end.Add(-time.Hour)}},
			[]string{"eu", "loc-office"}, downEU, []string{"eu", "loc-office"}, msg.StateRegional},
		{"probed only there, agent offline: no_data", agentRecords{agent("acme", -2*time.Minute)},
			[]string{"loc-office"}, nil, nil, msg.StateNoData},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := New(Options{Store: nopStore{}, Publisher: nopPublisher{}, Regions: []string{"eu", "us"}, Window: time.Minute, Agents: tt.agents})
			if err != nil {
				t.Fatal(err)
			}
			due := a.dueRegions(t.Context(), model.Endpoint{ID: "ep", Tenant: "acme", Regions: tt.chosen}, w0)
			if !slices.Equal(due, tt.due) {
				t.Fatalf("due = %v, want %v", due, tt.due)
			}
			if v := DecideDue("ep", w0, time.Minute, tt.results, 0, due); v.State != tt.state {
				t.Errorf("verdict %s, want %s (%+v)", v.State, tt.state, v)
			}
		})
	}
}
