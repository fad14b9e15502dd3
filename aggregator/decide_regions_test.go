package aggregator

import (
	"context"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/msg"
	"github.com/mcpmon/mcpmon/pkg/schedule"
)

func TestDecideDueRegions(t *testing.T) {
	abc := []string{"a", "b", "c"}
	up := func(r string) msg.ProbeResult { return res(r, msg.StatusUp, "ok", 0) }
	down := func(r string) msg.ProbeResult { return res(r, msg.StatusDown, "http_5xx", 0) }
	tests := []struct {
		name    string
		due     []string
		results []msg.ProbeResult
		quorum  int
		state   msg.State
		failing []string
		regions map[string]msg.State
	}{
		{"all due regions up", abc, []msg.ProbeResult{up("a"), up("b"), up("c")}, 0, msg.StateUp, nil,
			map[string]msg.State{"a": msg.StateUp, "b": msg.StateUp, "c": msg.StateUp}},
		{"one of three down is regional", abc, []msg.ProbeResult{up("a"), down("b"), up("c")}, 0, msg.StateRegional, []string{"b"},
			map[string]msg.State{"a": msg.StateUp, "b": msg.StateDown, "c": msg.StateUp}},
		{"two of three down is down", abc, []msg.ProbeResult{up("a"), down("b"), down("c")}, 0, msg.StateDown, []string{"b", "c"},
			map[string]msg.State{"a": msg.StateUp, "b": msg.StateDown, "c": msg.StateDown}},
		// Without due regions the lone reporter would be the whole
		// quorum: one region's view would page globally.
		{"a silent region does not shrink the quorum", abc, []msg.ProbeResult{down("a"), up("b")}, 0, msg.StateRegional, []string{"a"},
			map[string]msg.State{"a": msg.StateDown, "b": msg.StateUp, "c": msg.StateNoData}},
		{"one down and two silent is regional, not down", abc, []msg.ProbeResult{down("a")}, 0, msg.StateRegional, []string{"a"},
			map[string]msg.State{"a": msg.StateDown, "b": msg.StateNoData, "c": msg.StateNoData}},
		{"two down and one silent is down", abc, []msg.ProbeResult{down("a"), down("b")}, 0, msg.StateDown, []string{"a", "b"},
			map[string]msg.State{"a": msg.StateDown, "b": msg.StateDown, "c": msg.StateNoData}},
		{"silent regions are no_data, not up", abc, []msg.ProbeResult{up("a")}, 0, msg.StateUp, nil,
			map[string]msg.State{"a": msg.StateUp, "b": msg.StateNoData, "c": msg.StateNoData}},
		{"endpoint's own regions: the unchosen region is not due", []string{"a", "b"}, []msg.ProbeResult{down("a"), down("b")}, 0, msg.StateDown, []string{"a", "b"},
			map[string]msg.State{"a": msg.StateDown, "b": msg.StateDown}},
		{"a region that reported without being due is judged too", []string{"a"}, []msg.ProbeResult{up("a"), down("z")}, 0, msg.StateRegional, []string{"z"},
			map[string]msg.State{"a": msg.StateUp, "z": msg.StateDown}},
		{"explicit quorum of one", abc, []msg.ProbeResult{down("a"), up("b"), up("c")}, 1, msg.StateDown, []string{"a"},
			map[string]msg.State{"a": msg.StateDown, "b": msg.StateUp, "c": msg.StateUp}},
		{"no results is no_data whatever was due", abc, nil, 0, msg.StateNoData, nil, nil},
		{"no region set: today's rule", nil, []msg.ProbeResult{down("a")}, 0, msg.StateDown, []string{"a"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := DecideDue("ep", w0, time.Minute, tt.results, tt.quorum, tt.due)
			if v.State != tt.state || !slices.Equal(v.FailingRegions, tt.failing) {
				t.Fatalf("state %s failing %v, want %s %v", v.State, v.FailingRegions, tt.state, tt.failing)
			}
			if !maps.Equal(v.RegionStates, tt.regions) {
				t.Fatalf("region states %v, want %v", v.RegionStates, tt.regions)
			}
		})
	}
}

func TestDueRegions(t *testing.T) {
	tests := []struct {
		configured, chosen, want []string
	}{
		{nil, nil, nil},
		{nil, []string{"a"}, nil},
		{[]string{"a", "b", "c"}, nil, []string{"a", "b", "c"}},
		{[]string{"a", "b", "c"}, []string{"c", "a"}, []string{"a", "c"}},
		{[]string{"a", "b"}, []string{"gone"}, []string{}},
	}
	for _, tt := range tests {
		if got := schedule.DueRegions(tt.configured, tt.chosen); !slices.Equal(got, tt.want) {
			t.Errorf("DueRegions(%v, %v) = %v, want %v", tt.configured, tt.chosen, got, tt.want)
		}
	}
}

type liveFunc func(time.Time) ([]string, bool)

func (f liveFunc) LiveAt(_ context.Context, t time.Time) ([]string, bool) { return f(t) }

// The due regions are the endpoint's within the set, narrowed to the live
// ones when heartbeats tell, and the set as it is when they cannot.
func TestDueRegionsNarrowedToLiveProbers(t *testing.T) {
	tests := []struct {
		name   string
		live   liveFunc
		chosen []string
		want   []string
	}{
		{"no heartbeat reader", nil, nil, []string{"eu", "us", "ap"}},
		{"heartbeats unknown", func(time.Time) ([]string, bool) { return nil, false }, nil, []string{"eu", "us", "ap"}},
		{"a dead region drops out", func(time.Time) ([]string, bool) { return []string{"eu", "us"}, true }, nil, []string{"eu", "us"}},
		{"the endpoint's choice, narrowed", func(time.Time) ([]string, bool) { return []string{"eu", "us"}, true }, []string{"us", "ap"}, []string{"us"}},
		{"an agent location stays due", func(time.Time) ([]string, bool) { return []string{"eu"}, true }, []string{"loc-office", "us"}, []string{"loc-office"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := Options{Store: nopStore{}, Publisher: nopPublisher{}, Regions: []string{"eu", "us", "ap"}}
			if tt.live != nil {
				opts.Live = tt.live
			}
			a, err := New(opts)
			if err != nil {
				t.Fatal(err)
			}
			if got := a.dueRegions(t.Context(), model.Endpoint{ID: "ep", Regions: tt.chosen}, w0); !slices.Equal(got, tt.want) {
				t.Fatalf("due = %v, want %v", got, tt.want)
			}
		})
	}
}

type nopStore struct{ Store }
type nopPublisher struct{ Publisher }
