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
// alert.Maintenance.ActiveAt, at the window's start). Read-time
// intersection would be wrong: a bucket's counters no longer say which of
// its seconds were up and which down. The consequence, stated in the README:
// a maintenance window created after the fact does not rewrite rollups.
// The list is read at most once per verdict window per replica and cached.

package aggregator

import (
	"context"
	"sync"
	"time"

	"github.com/mcpmon/mcpmon/pkg/alert"
	"github.com/mcpmon/mcpmon/pkg/msg"
	"github.com/mcpmon/mcpmon/pkg/store"
)

// objectLister is the part of the store the maintenance lookup needs; a
// Store without it (test fakes) has no maintenance windows.
type objectLister interface {
	ListObjects(ctx context.Context, kind string) (map[string][]byte, error)
}

// maintCache holds the maintenance windows read at most once per window.
type maintCache struct {
	mu     sync.Mutex
	readAt time.Time
	ms     []alert.Maintenance
}

// annotate adds to v what its rollups need: the latency of results (the
// window's results, nil for no_data) and whether ep was in maintenance.
func (a *Aggregator) annotate(ctx context.Context, ep store.Endpoint, v msg.Verdict, results []msg.ProbeResult) msg.Verdict {
	v.Latency = latencyOf(results)
	ref := alert.EndpointRef{ID: v.EndpointID, Tenant: ep.Tenant, Labels: ep.Labels}
	for _, m := range a.maintenance(ctx) {
		if m.ActiveAt(v.Window, ref) {
			v.Maintenance = true
			break
		}
	}
	return v
}

func (a *Aggregator) maintenance(ctx context.Context) []alert.Maintenance {
	ol, ok := a.st.(objectLister)
	if !ok {
		return nil
	}
	c := &a.maint
	c.mu.Lock()
	defer c.mu.Unlock()
	now := a.clk.Now()
	if !c.readAt.IsZero() && now.Sub(c.readAt) < a.opts.Window && !now.Before(c.readAt) {
		return c.ms
	}
	docs, err := ol.ListObjects(ctx, alert.MaintenanceKind)
	if err != nil {
		// The verdict matters more than its rollup: go on with the last
		// list read, and try again for the next verdict.
		a.log.Debug("reading maintenance windows for rollups", "err", err)
		return c.ms
	}
	ms := make([]alert.Maintenance, 0, len(docs))
	for id, doc := range docs {
		m, err := alert.DecodeMaintenance(doc)
		if err != nil {
			a.log.Warn("maintenance window unreadable; ignored for rollups", "id", id, "err", err)
			continue
		}
		ms = append(ms, m)
	}
	c.ms, c.readAt = ms, now
	return ms
}

// latencyOf returns the total and initialize phase seconds of the results
// that succeeded (nil if none reported either).
func latencyOf(results []msg.ProbeResult) *msg.VerdictLatency {
	var l msg.VerdictLatency
	for _, r := range results {
		if r.Status != msg.StatusUp && r.Status != msg.StatusDegraded {
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
