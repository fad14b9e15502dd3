package api

import (
	"fmt"
	"slices"
	"strings"

	"github.com/mcpmon/mcpmon/pkg/schedule"
)

// endpointRegions validates an endpoint's regions against the deployment's
// set and returns them deduplicated in the set's order, then the agent
// locations it names ("loc-NAME", schedule.IsLocation) in sorted order
// (empty: every region, now and as the set grows), or why they are
// refused. A location needs no region set: its agents fetch its commands
// through the API.
func endpointRegions(in, known []string) ([]string, string) {
	if len(in) == 0 {
		return nil, ""
	}
	if len(in) > maxRegions {
		return nil, fmt.Sprintf("at most %d regions", maxRegions)
	}
	var locs []string
	for _, r := range in {
		if len(r) > maxRegionLen {
			return nil, fmt.Sprintf("region names are at most %d characters", maxRegionLen)
		}
		switch {
		case schedule.IsLocation(r):
			locs = append(locs, r)
		case len(known) == 0:
			return nil, "this deployment has no region set (--regions): every probe comes from one commands queue; leave regions out, or name agent locations (loc-NAME)"
		case !slices.Contains(known, r):
			return nil, fmt.Sprintf("%q is not a region of this deployment; known regions: %s (agent locations are loc-NAME)", r, strings.Join(known, ", "))
		}
	}
	out := make([]string, 0, len(in))
	for _, r := range known {
		if slices.Contains(in, r) {
			out = append(out, r)
		}
	}
	slices.Sort(locs)
	return append(out, slices.Compact(locs)...), ""
}
