package aggregator

import (
	"context"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/msg"
	"github.com/mcpmon/mcpmon/pkg/schedule"
)

// LiveRegions reports the regions with a live prober at a time (prober
// heartbeats in the store; see pkg/daemon regions.go). ok is false when it
// cannot tell (the store failed, no heartbeat was ever written): the
// configured set is used as it is.
type LiveRegions interface {
	LiveAt(ctx context.Context, t time.Time) (regions []string, ok bool)
}

// AgentLocations reports whether an agent location had no live agent:
// agents beat by polling the API (model.AgentSeen), not into the prober
// membership. pkg/daemon implements it over the store's records.
type AgentLocations interface {
	// Offline reports whether every agent of tenant's location (its
	// region, loc-NAME) had gone without a poll for the offline timeout
	// by t and has not polled since. false when it cannot tell.
	Offline(ctx context.Context, tenant, region string, t time.Time) bool
}

// dueRegions are the regions endpoint ep was due to be probed from in the
// window starting at w: its own choice within the configured set, narrowed
// to the regions with a live prober during the window when heartbeats are
// known. nil without a region set (the regions that reported are compared).
// An agent location is left out when all its agents were offline at the
// window's end (AgentLocations): its windows are then judged among the
// regions that reported, and an endpoint probed only there is no_data. A
// location whose agent is online but sent nothing stays due, as no_data
// in the quorum's base; so does a location the agents' records cannot
// speak for.
func (a *Aggregator) dueRegions(ctx context.Context, ep model.Endpoint, w time.Time) []string {
	due := schedule.DueRegions(a.opts.Regions, ep.Regions)
	if len(due) == 0 {
		return due
	}
	var live []string
	liveOK := false
	if a.opts.Live != nil {
		live, liveOK = a.opts.Live.LiveAt(ctx, w)
	}
	end := w.Add(a.opts.Window)
	return slices.DeleteFunc(slices.Clone(due), func(r string) bool {
		if schedule.IsLocation(r) {
			return a.opts.Agents != nil && a.opts.Agents.Offline(ctx, ep.Tenant, r, end)
		}
		return liveOK && !slices.Contains(live, r)
	})
}

// RegionMetrics are the per-region metrics of a deployment with a region
// set: region label values are the configured regions (pre-created), so
// the series are bounded by the set.
type RegionMetrics struct {
	windows *prometheus.CounterVec // region, state
	live    *prometheus.GaugeVec   // region
	known   []string
}

// NewRegionMetrics registers the region metrics for the set regions on
// reg; nil without a region set (nothing to label).
func NewRegionMetrics(reg prometheus.Registerer, regions []string) *RegionMetrics {
	if len(regions) == 0 {
		return nil
	}
	f := promauto.With(reg)
	m := &RegionMetrics{
		windows: f.NewCounterVec(prometheus.CounterOpts{
			Namespace: "mcpmon", Name: "region_windows_total",
			Help: "Windows decided per due region, by that region's state in the window (no_data: due, nothing arrived).",
		}, []string{"region", "state"}),
		live: f.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: "mcpmon", Name: "region_prober_live",
			Help: "1 when a prober of the region sent a heartbeat within the liveness TTL, else 0.",
		}, []string{"region"}),
		known: slices.Clone(regions),
	}
	for _, r := range regions {
		for _, s := range []msg.State{msg.StateUp, msg.StateDegraded, msg.StateDown, msg.StateNoData} {
			m.windows.WithLabelValues(r, string(s))
		}
		m.live.WithLabelValues(r)
	}
	return m
}

// observe counts each configured region's state in verdict v.
func (m *RegionMetrics) observe(v msg.Verdict) {
	if m == nil {
		return
	}
	for r, s := range v.RegionStates {
		if slices.Contains(m.known, r) {
			m.windows.WithLabelValues(r, string(s)).Inc()
		}
	}
}

// SetLive sets the live-prober gauge of every configured region.
func (m *RegionMetrics) SetLive(live []string) {
	if m == nil {
		return
	}
	for _, r := range m.known {
		v := 0.0
		if slices.Contains(live, r) {
			v = 1
		}
		m.live.WithLabelValues(r).Set(v)
	}
}
