package daemon

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/mcpmon/mcpmon/pkg/model"
)

// PruneInterval is how often a process with per-endpoint metrics (the
// prober and aggregator roles; `run` has both) forgets the series of
// endpoints that were deleted. Each round asks the tracked metrics which
// endpoints have series and costs one ListEndpoints; series of a deleted endpoint outlive it by at most this
// long, so cardinality is bounded by the registered endpoints plus those
// deleted in the last interval.
const PruneInterval = 5 * time.Minute

// forgetter is per-endpoint metrics (prober.Metrics, aggregator.Metrics):
// it lists the endpoints it has series of, and drops one's series. Asking
// it, not gathering the registry, keeps a round cheap: at 10,000 endpoints
// a gather built 480,000 series (2.3 s of CPU) to read one label.
type forgetter interface {
	SeriesEndpoints() []string
	Forget(endpointID string)
}

// endpointLister is what the pruner reads from the store.
type endpointLister interface {
	ListEndpoints(ctx context.Context) ([]model.Endpoint, error)
}

// metricsPruner forgets per-endpoint metric series of deleted endpoints. It
// works from the shared store, not from the DELETE request, so it also
// prunes in distributed mode, where the API replica that served the DELETE
// is not the prober or aggregator holding the series.
//
// A round must never forget a live endpoint, in particular one created a
// moment ago. It therefore collects the endpoint IDs that have series first
// and lists the store second, and forgets only IDs that had series at the
// gather and are missing from the later listing. A series exists only after
// its endpoint was registered (the prober probes only endpoints it finds in
// the store, the aggregator decides only windows of probed endpoints), so an
// ID with a series at the gather was registered before the listing began:
// absent from the listing, it was deleted. An endpoint created after the
// gather cannot have been seen by it, so it is left for the next round. The
// one window left: an ID deleted and re-created between the listing and the
// forget loses the few series written in that gap until its next probe or
// verdict writes them again; API IDs are 80 random bits, so reuse does not
// happen in practice.
//
// A probe or verdict in flight when the endpoint is deleted may write its
// series after the round that forgot them; the next round removes them.
type metricsPruner struct {
	mu     sync.Mutex // one round at a time (loop and on-demand calls)
	forget []forgetter
}

// forgetting registers m's series for pruning and returns m, so a role's
// metrics are tracked where they are built.
func forgetting[M forgetter](p *metricsPruner, m M) M {
	p.mu.Lock()
	p.forget = append(p.forget, m)
	p.mu.Unlock()
	return m
}

// pruneMetrics is the process's prune loop: a round every PruneInterval
// until ctx is done, nothing in a role without per-endpoint metrics. A
// failed round (store unavailable) is logged and retried at the next tick.
func (d *Daemon) pruneMetrics(ctx context.Context) error {
	d.prune.mu.Lock()
	n := len(d.prune.forget)
	d.prune.mu.Unlock()
	if n == 0 {
		return nil
	}
	t := time.NewTicker(PruneInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		if _, err := d.PruneMetrics(ctx); err != nil && ctx.Err() == nil {
			d.log.Warn("pruning metric series of deleted endpoints failed; retrying at the next interval", "interval", PruneInterval, "err", err)
		}
	}
}

// PruneMetrics runs one prune round now and returns the endpoint IDs whose
// series it forgot (sorted). The loop calls it every PruneInterval; tests and
// operators' harnesses call it on demand.
func (d *Daemon) PruneMetrics(ctx context.Context) ([]string, error) {
	st := d.st
	if st == nil {
		return nil, fmt.Errorf("prune metrics: store closed")
	}
	forgot, err := d.prune.round(ctx, st)
	if err != nil {
		return nil, err
	}
	if len(forgot) > 0 {
		d.log.Info("forgot metric series of deleted endpoints", "endpoints", len(forgot))
	}
	return forgot, nil
}

// round: collect the IDs with series, then list the store, then forget
// the IDs the listing lacks (see metricsPruner for why in this order).
func (p *metricsPruner) round(ctx context.Context, st endpointLister) ([]string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	seen := map[string]bool{}
	for _, f := range p.forget {
		for _, id := range f.SeriesEndpoints() {
			seen[id] = true
		}
	}
	if len(seen) == 0 {
		return nil, nil
	}
	eps, err := st.ListEndpoints(ctx)
	if err != nil {
		return nil, fmt.Errorf("prune metrics: list endpoints: %w", err)
	}
	for _, e := range eps {
		delete(seen, e.ID)
	}
	gone := make([]string, 0, len(seen))
	for id := range seen {
		gone = append(gone, id)
	}
	sort.Strings(gone)
	for _, id := range gone {
		for _, f := range p.forget {
			f.Forget(id)
		}
	}
	return gone, nil
}
