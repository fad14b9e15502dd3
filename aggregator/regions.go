package aggregator

import (
	"context"
	"slices"
	"time"

	"github.com/mcpmon/mcpmon/pkg/schedule"
	"github.com/mcpmon/mcpmon/pkg/store"
)

// LiveRegions reports the regions with a live prober at a time (prober
// heartbeats in the store; see pkg/daemon regions.go). ok is false when it
// cannot tell (the store failed, no heartbeat was ever written): the
// configured set is used as it is.
type LiveRegions interface {
	LiveAt(ctx context.Context, t time.Time) (regions []string, ok bool)
}

// dueRegions are the regions endpoint ep was due to be probed from in the
// window starting at w: its own choice within the configured set, narrowed
// to the regions with a live prober during the window when heartbeats are
// known. nil without a region set (the regions that reported are compared).
func (a *Aggregator) dueRegions(ctx context.Context, ep store.Endpoint, w time.Time) []string {
	due := schedule.DueRegions(a.opts.Regions, ep.Regions)
	if len(due) == 0 || a.opts.Live == nil {
		return due
	}
	live, ok := a.opts.Live.LiveAt(ctx, w)
	if !ok {
		return due
	}
	return slices.DeleteFunc(slices.Clone(due), func(r string) bool { return !slices.Contains(live, r) })
}
