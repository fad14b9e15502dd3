// What a verdict carries for the store's rollups (pkg/store rollups.go):
// the latency of the window's successful probes and whether a maintenance
// window covered it.
//
// Latency travels in the verdict rather than being folded here from the
// results because the rollups are folded by RecordVerdict, in the same
// transaction that applies the verdict and drops the window's results:
// that is what makes the fold count each window once (replays, replicas and
// re-decisions after a crash included) on both backends. The results are
// read in decide anyway; their timings are a few floats per window.
//
// Maintenance is decided here, when the verdict is, from the maintenance
// windows in the store (the same rule the alerter applies at dispatch:
// model.Maintenance.ActiveAt, at the window's start). Read-time
// intersection would be wrong: a bucket's counters no longer say which of
// its seconds were up and which down. The consequence, stated in the README:
// a maintenance window created after the fact does not rewrite rollups.
// Only the endpoint's tenant's windows are read, decoded once per change
// of their stamp (store.Windows).

package aggregator

import (
	"context"
	"sync"

	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/msg"
	"github.com/mcpmon/mcpmon/pkg/store"
)

// maintCache holds the decoded maintenance windows, made on first use; a
// Store without store.WindowSource (test fakes) has no maintenance
// windows.
type maintCache struct {
	once    sync.Once
	windows *store.Windows
}

// annotate adds to v what its rollups need: the latency of results (the
// window's results, nil for no_data) and whether ep was in maintenance.
func (a *Aggregator) annotate(ctx context.Context, ep model.Endpoint, v msg.Verdict, results []msg.ProbeResult) msg.Verdict {
	v.Latency = latencyOf(results)
	ref := model.EndpointRef{ID: v.EndpointID, Tenant: ep.Tenant, Labels: ep.Labels}
	for _, m := range a.maintenance(ctx, ep.Tenant) {
		if m.ActiveAt(v.Window, ref) {
			v.Maintenance = true
			break
		}
	}
	return v
}

func (a *Aggregator) maintenance(ctx context.Context, tenant string) []model.Maintenance {
	c := &a.maint
	c.once.Do(func() {
		if src, ok := a.st.(store.WindowSource); ok {
			c.windows = store.NewWindows(src, a.log)
		}
	})
	if c.windows == nil {
		return nil
	}
	ms, err := c.windows.Of(ctx, tenant)
	if err != nil {
		// The verdict matters more than its rollup: go on with the last
		// windows read (Of returns them with the error), and try again for
		// the next verdict.
		a.log.Debug("reading maintenance windows for rollups", "err", err)
	}
	return ms
}

// latencyOf returns the total and initialize phase seconds of the results
// that succeeded (nil if none reported either).
func latencyOf(results []msg.ProbeResult) *msg.VerdictLatency {
	var l msg.VerdictLatency
	for _, r := range results {
		if r.Blind || (r.Status != msg.StatusUp && r.Status != msg.StatusDegraded) {
			continue
		}
		if x, ok := r.Phases[msg.PhaseTotal]; ok {
			l.Total = append(l.Total, x)
		}
		if x, ok := r.Phases[msg.PhaseInitialize]; ok {
			l.Initialize = append(l.Initialize, x)
		}
	}
	if l.Total == nil && l.Initialize == nil {
		return nil
	}
	return &l
}
