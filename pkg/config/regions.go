package config

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/mcpmon/mcpmon/pkg/schedule"
)

// regionRE is what a region name may be: it becomes part of a queue name
// (<prefix>commands-<region>.fifo, at most 80 characters on SQS), a metric
// label value and an endpoint's regions field.
var regionRE = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,31}$`)

// ValidRegion reports whether name can be a region.
func ValidRegion(name string) bool { return regionRE.MatchString(name) }

func validRegions(rs []string) error {
	for i, r := range rs {
		if !ValidRegion(r) {
			return fmt.Errorf("--regions %q: a region is 1-32 of [a-z0-9-], starting with a letter or digit", r)
		}
		if strings.HasPrefix(r, schedule.LocationPrefix) {
			return fmt.Errorf("--regions %q: names starting with %q are agent locations (mcpmon agents create --location), not regions", r, schedule.LocationPrefix)
		}
		if slices.Contains(rs[:i], r) {
			return fmt.Errorf("--regions: %q given twice", r)
		}
	}
	return nil
}
