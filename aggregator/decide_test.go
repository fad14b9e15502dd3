package aggregator

import (
	"slices"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/msg"
)

var w0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func res(region string, status msg.Status, class string, at time.Duration) msg.ProbeResult {
	slot := w0.Add(at)
	return msg.ProbeResult{
		Schema: msg.SchemaVersion, EndpointID: "ep", ProbeRunID: msg.ProbeRunID("ep", slot) + region,
		Slot: slot, Region: region, StartedAt: slot, FinishedAt: slot.Add(time.Second),
		Status: status, Class: class,
	}
}

func TestDecide(t *testing.T) {
	tests := []struct {
		name    string
		results []msg.ProbeResult
		quorum  int
		state   msg.State
		class   string
		failing []string
	}{
		{"no results", nil, 0, msg.StateNoData, "", nil},
		{"single up", []msg.ProbeResult{res("", msg.StatusUp, "ok", 0)}, 0, msg.StateUp, "ok", nil},
		{"single down", []msg.ProbeResult{res("", msg.StatusDown, "refused", 0)}, 0, msg.StateDown, "refused", nil},
		{"single degraded", []msg.ProbeResult{res("", msg.StatusDegraded, "slow", 0)}, 0, msg.StateDegraded, "slow", nil},
		{"latest result of a region decides", []msg.ProbeResult{
			res("", msg.StatusDown, "timeout", 0), res("", msg.StatusUp, "ok", 30*time.Second),
		}, 0, msg.StateUp, "ok", nil},
		{"two of three regions up", []msg.ProbeResult{
			res("eu", msg.StatusUp, "ok", 0), res("us", msg.StatusUp, "ok", 0), res("ap", msg.StatusDown, "timeout", 0),
		}, 0, msg.StateRegional, "timeout", []string{"ap"}},
		{"two of three regions down", []msg.ProbeResult{
			res("eu", msg.StatusDown, "http_5xx", 0), res("us", msg.StatusUp, "ok", 0), res("ap", msg.StatusDown, "timeout", 0),
		}, 0, msg.StateDown, "timeout", []string{"ap", "eu"}},
		{"quorum three of three not met", []msg.ProbeResult{
			res("eu", msg.StatusDown, "http_5xx", 0), res("us", msg.StatusUp, "ok", 0), res("ap", msg.StatusDown, "timeout", 0),
		}, 3, msg.StateRegional, "timeout", []string{"ap", "eu"}},
		{"quorum capped at regions reporting", []msg.ProbeResult{
			res("eu", msg.StatusDown, "http_5xx", 0), res("ap", msg.StatusDown, "timeout", 0),
		}, 3, msg.StateDown, "timeout", []string{"ap", "eu"}},
		{"one of two down is not a majority", []msg.ProbeResult{
			res("eu", msg.StatusDown, "http_5xx", 0), res("us", msg.StatusUp, "ok", 0),
		}, 0, msg.StateRegional, "http_5xx", []string{"eu"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := Decide("ep", w0, time.Minute, tt.results, tt.quorum)
			if v.State != tt.state || v.Class != tt.class || !slices.Equal(v.FailingRegions, tt.failing) {
				t.Fatalf("Decide() = state %s class %q failing %v, want %s %q %v", v.State, v.Class, v.FailingRegions, tt.state, tt.class, tt.failing)
			}
			if v.Results != len(tt.results) || v.WindowSecs != 60 || !v.Window.Equal(w0) {
				t.Fatalf("Decide() = %+v: wrong results count or window", v)
			}
			if len(tt.results) > 0 && !v.FirstProbeAt.Equal(w0) {
				t.Fatalf("FirstProbeAt = %s, want %s", v.FirstProbeAt, w0)
			}
		})
	}
}

func BenchmarkDecide(b *testing.B) {
	rs := []msg.ProbeResult{
		res("eu", msg.StatusDown, "http_5xx", 0), res("us", msg.StatusUp, "ok", 0), res("ap", msg.StatusDown, "timeout", 0),
		res("eu", msg.StatusDown, "http_5xx", 30*time.Second), res("us", msg.StatusUp, "ok", 30*time.Second), res("ap", msg.StatusUp, "ok", 30*time.Second),
	}
	b.ReportAllocs()
	for b.Loop() {
		Decide("ep", w0, time.Minute, rs, 0)
	}
}
