package schedule

import (
	"regexp"
	"slices"
	"strings"
)

// DueRegions is the region rule the scheduler, the aggregator and the API
// share: the regions an endpoint is probed from, given the deployment's
// region set (configured, in its order) and the endpoint's own choice
// (model.Endpoint.Regions; empty: all). Regions the endpoint names that
// the set lacks are left out (the API refuses them; this keeps an endpoint
// stored before a region was removed from the set probeable). nil when the
// deployment has no region set: one commands queue, no region is due in
// particular.
//
// Agent locations (Location) are regions too, but no configured set holds
// them: an endpoint that names one is due there whatever the set, after
// the configured regions it is due in. An endpoint that names only
// locations is probed by their agents alone (Central is false).
func DueRegions(configured, chosen []string) []string {
	locs := locations(chosen)
	var due []string
	switch {
	case len(configured) == 0:
	case !Central(chosen):
	case len(chosen) == len(locs): // no choice among the central regions: all of them
		due = configured
	default:
		due = make([]string, 0, len(chosen))
		for _, r := range configured {
			if slices.Contains(chosen, r) {
				due = append(due, r)
			}
		}
	}
	if len(locs) == 0 {
		return due
	}
	return append(slices.Clip(due), locs...)
}

// LocationPrefix starts the region name of an agent location: the
// location "office" is the region "loc-office". Region sets (--regions)
// may not use the prefix, so a location never collides with a region
// whose probers consume a commands queue.
const LocationPrefix = "loc-"

// locationRE is what a location name may be: the region name rule
// (1-32 of [a-z0-9-]) less the prefix.
var locationRE = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,27}$`)

// ValidLocation reports whether name can name an agent location.
func ValidLocation(name string) bool { return locationRE.MatchString(name) }

// Location returns the region name of the agent location name.
func Location(name string) string { return LocationPrefix + name }

// IsLocation reports whether region is an agent location's region.
func IsLocation(region string) bool {
	name, ok := strings.CutPrefix(region, LocationPrefix)
	return ok && ValidLocation(name)
}

// Central reports whether an endpoint with the region choice chosen is
// probed by the deployment's own probers: unless it names only agent
// locations.
func Central(chosen []string) bool {
	return len(chosen) == 0 || slices.ContainsFunc(chosen, func(r string) bool { return !IsLocation(r) })
}

// locations are the agent locations among chosen, in its order.
func locations(chosen []string) []string {
	var out []string
	for _, r := range chosen {
		if IsLocation(r) {
			out = append(out, r)
		}
	}
	return out
}
