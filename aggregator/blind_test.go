package aggregator

import (
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/msg"
)

var blindSince = w0.Add(-90 * time.Second)

// blinded is r as a blind prober publishes it.
func blinded(r msg.ProbeResult) msg.ProbeResult {
	r.Blind, r.BlindSince = true, blindSince
	return r
}

func TestBlindResultsDecideNothing(t *testing.T) {
	ab := []string{"a", "b"}
	abc := []string{"a", "b", "c"}
	up := func(r string) msg.ProbeResult { return res(r, msg.StatusUp, "ok", 0) }
	down := func(r string) msg.ProbeResult { return res(r, msg.StatusDown, "timeout", 0) }
	later := func(r msg.ProbeResult) msg.ProbeResult {
		r.Slot = r.Slot.Add(30 * time.Second)
		r.ProbeRunID += "-later"
		return r
	}
	tests := []struct {
		name    string
		due     []string
		results []msg.ProbeResult
		state   msg.State
		failing []string
		regions map[string]msg.State
		// reason, when set, must be in the verdict's reason.
		reason string
	}{
		{"no region set: a blind down result is no_data", nil, []msg.ProbeResult{blinded(down(""))}, msg.StateNoData, nil, nil, "the prober was blind"},
		{"no region set: a blind up result is no_data too", nil, []msg.ProbeResult{blinded(up(""))}, msg.StateNoData, nil, nil, "since " + blindSince.Format(time.RFC3339)},
		{"a sighted result after a blind one decides", nil, []msg.ProbeResult{blinded(down("")), later(down(""))}, msg.StateDown, nil, nil, ""},
		{"a blind result after a sighted down one hides it", nil, []msg.ProbeResult{down(""), later(blinded(down("")))}, msg.StateNoData, nil, nil, "blind"},
		// Without blindness this is regional (one of two down, quorum 2).
		{"a blind region drops out of the due regions", ab, []msg.ProbeResult{blinded(down("a")), up("b")}, msg.StateUp, nil,
			map[string]msg.State{"a": msg.StateNoData, "b": msg.StateUp}, ""},
		// Without blindness, two of three down would be a global down;
		// judged are b and c, and one of two is below the majority.
		{"a blind region is not in the quorum's base", abc, []msg.ProbeResult{blinded(down("a")), down("b"), up("c")}, msg.StateRegional, []string{"b"},
			map[string]msg.State{"a": msg.StateNoData, "b": msg.StateDown, "c": msg.StateUp}, ""},
		{"every region blind is no_data naming each", ab, []msg.ProbeResult{blinded(down("a")), blinded(down("b"))}, msg.StateNoData, nil,
			map[string]msg.State{"a": msg.StateNoData, "b": msg.StateNoData}, "region a was blind"},
		{"a blind region and a silent one are no_data, not up", ab, []msg.ProbeResult{blinded(up("a"))}, msg.StateNoData, nil,
			map[string]msg.State{"a": msg.StateNoData, "b": msg.StateNoData}, "region a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := DecideDue("ep", w0, time.Minute, tt.results, 0, tt.due)
			if v.State != tt.state || !slices.Equal(v.FailingRegions, tt.failing) {
				t.Fatalf("state %s failing %v, want %s %v (%+v)", v.State, v.FailingRegions, tt.state, tt.failing, v)
			}
			if !maps.Equal(v.RegionStates, tt.regions) {
				t.Fatalf("region states %v, want %v", v.RegionStates, tt.regions)
			}
			if tt.reason != "" && (!strings.Contains(v.Reason, tt.reason) || v.Class != ClassBlind) {
				t.Fatalf("class %q reason %q, want %s and a reason with %q", v.Class, v.Reason, ClassBlind, tt.reason)
			}
			if v.Results != len(tt.results) {
				t.Fatalf("results %d, want %d", v.Results, len(tt.results))
			}
		})
	}
}

func TestBlindResultsAreNotLatency(t *testing.T) {
	r := res("", msg.StatusUp, "ok", 0)
	r.Phases = map[string]float64{msg.PhaseTotal: 9}
	if l := latencyOf([]msg.ProbeResult{blinded(r)}); l != nil && len(l.Total) > 0 {
		t.Fatalf("a blind result's timings are in the latency rollup: %+v", l)
	}
}
