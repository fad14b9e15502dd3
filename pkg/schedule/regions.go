package schedule

import "slices"

// DueRegions is the region rule the scheduler, the aggregator and the API
// share: the regions an endpoint is probed from, given the deployment's
// region set (configured, in its order) and the endpoint's own choice
// (model.Endpoint.Regions; empty: all). Regions the endpoint names that
// the set lacks are left out (the API refuses them; this keeps an endpoint
// stored before a region was removed from the set probeable). nil when the
// deployment has no region set: one commands queue, no region is due in
// particular.
func DueRegions(configured, chosen []string) []string {
	if len(configured) == 0 {
		return nil
	}
	if len(chosen) == 0 {
		return configured
	}
	due := make([]string, 0, len(chosen))
	for _, r := range configured {
		if slices.Contains(chosen, r) {
			due = append(due, r)
		}
	}
	return due
}
