package membership

import (
	"context"
	"errors"
	"slices"
	"time"
)

// Gauge is told the regions live now after every listing
// (aggregator.RegionMetrics).
type Gauge interface {
	SetLive(regions []string)
}

// Regions reads which regions have a live member, from the heartbeats of a
// role whose members serve a region (probers, Options.Region). It is the
// aggregator's aggregator.LiveRegions.
type Regions struct {
	opts  Options
	view  view
	gauge Gauge
}

// NewRegions returns a reader of opts.Kind; Store and Kind are required,
// and the member options (ID, Region, KeepOnStop) are not used. gauge may
// be nil.
func NewRegions(opts Options, gauge Gauge) (*Regions, error) {
	if opts.Store == nil || opts.Kind == "" {
		return nil, errors.New("membership: Options.Store and Kind are required")
	}
	opts.defaults()
	log := opts.Logger.With("component", "membership", "kind", opts.Kind)
	r := &Regions{opts: opts, gauge: gauge}
	r.view = view{opts: &r.opts, log: log}
	return r, nil
}

// LiveAt reports the regions live at t, listing the store at most once per
// Interval. ok is false when no heartbeat was ever listed (probers of a
// release without heartbeats, or the store failing before the first
// listing): the caller cannot tell, and uses its configured set.
func (r *Regions) LiveAt(ctx context.Context, t time.Time) (regions []string, ok bool) {
	v := &r.view
	v.mu.Lock()
	defer v.mu.Unlock()
	now := v.opts.Clock.Now()
	if v.refresh(ctx, now) && r.gauge != nil {
		r.gauge.SetLive(RegionsLiveAt(v.beats, now, v.opts.TTL))
	}
	if len(v.beats) == 0 {
		return nil, false
	}
	return RegionsLiveAt(v.beats, t, v.opts.TTL), true
}

// RegionsLiveAt is the pure rule for regions: the regions with a heartbeat
// at most ttl older than t (or newer), sorted and unique. A beat of no
// region says nothing of regions.
func RegionsLiveAt(beats []Beat, t time.Time, ttl time.Duration) []string {
	var out []string
	for _, b := range beats {
		if b.Region != "" && !b.LastSeen.Before(t.Add(-ttl)) {
			out = append(out, b.Region)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
