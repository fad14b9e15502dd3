package api

import (
	"fmt"
	"slices"
	"strings"
)

// endpointRegions validates an endpoint's regions against the deployment's
// set and returns them deduplicated in the set's order (empty: every
// region, now and as the set grows), or why they are refused.
func endpointRegions(in, known []string) ([]string, string) {
	if len(in) == 0 {
		return nil, ""
	}
	if len(known) == 0 {
		return nil, "this deployment has no region set (--regions): every probe comes from one commands queue; leave regions out"
	}
	if len(in) > maxRegions {
		return nil, fmt.Sprintf("at most %d regions", maxRegions)
	}
	for _, r := range in {
		if len(r) > maxRegionLen {
			return nil, fmt.Sprintf("region names are at most %d characters", maxRegionLen)
		}
		if !slices.Contains(known, r) {
			return nil, fmt.Sprintf("%q is not a region of this deployment; known regions: %s", r, strings.Join(known, ", "))
		}
	}
	out := make([]string, 0, len(in))
	for _, r := range known {
		if slices.Contains(in, r) {
			out = append(out, r)
		}
	}
	return out, ""
}
