package aggregator

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/schedule"
	"github.com/mcpmon/mcpmon/pkg/store"
)

// DefaultProbeTimeout is the probe timeout assumed for an endpoint stored
// without one (the API's default): a no_data candidate waits that long past
// its window's end plus grace for a probe started in the window to report.
const DefaultProbeTimeout = 10 * time.Second

// noDataCandidate is a window of one endpoint that had a slot but no result
// when it was listed, to be decided no_data at due unless results come.
type noDataCandidate struct {
	window time.Time
	due    time.Time
}

type cachedSlots struct {
	schedule string
	slots    schedule.Slots
	ok       bool // false: the schedule does not parse, so never due
}

// slotCache keeps each endpoint's parsed schedule, parsed again only when it
// changes.
type slotCache struct {
	mu  sync.Mutex
	m   map[string]cachedSlots // by endpoint ID
	log *slog.Logger
}

// get returns ep's slot placement; ok is false when its schedule does not
// parse (the scheduler cannot schedule it either: never due).
func (c *slotCache) get(ep model.Endpoint) (schedule.Slots, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cs, ok := c.m[ep.ID]; ok && cs.schedule == ep.Schedule {
		return cs.slots, cs.ok
	}
	sl, err := schedule.New(ep.ID, ep.Schedule)
	if err != nil {
		c.log.Debug("endpoint schedule does not parse; never due", "endpoint", ep.ID, "err", err)
	}
	c.m[ep.ID] = cachedSlots{schedule: ep.Schedule, slots: sl, ok: err == nil}
	return sl, err == nil
}

// keep forgets every endpoint not in seen.
func (c *slotCache) keep(seen map[string]bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for id := range c.m {
		if !seen[id] {
			delete(c.m, id)
		}
	}
}

// noDataState is the aggregator's in-memory no_data bookkeeping. Losing it
// (a restart) loses at most the pending candidates, which the startedAt
// bound would refuse anyway.
type noDataState struct {
	mu      sync.Mutex
	listed  time.Time                    // latest window whose endpoints were listed
	pending map[string][]noDataCandidate // by endpoint ID, oldest window first

	// views holds, for each shard of the last listing, what it said of
	// the shard's endpoints, reused while the shard's stamp stands
	// (endpointViews). Only the shards listed last are kept, so a shard
	// this replica comes to own is listed afresh whatever its stamp.
	views map[int]shardViews
}

// shardViews is one shard's listing: its endpoints' views and the shard's
// endpoints stamp read just before (stampOK false: none, list it again).
type shardViews struct {
	views   []noDataView
	stamp   uint64
	stampOK bool
	at      time.Time
}

// noDataView is what the no_data listing needs of an endpoint: a few
// dozen bytes instead of the whole decoded record.
type noDataView struct {
	id, schedule string
	created      time.Time
	updated      time.Time
	timeout      time.Duration
	paused       bool
}

func viewOf(ep model.Endpoint) noDataView {
	return noDataView{id: ep.ID, schedule: ep.Schedule, created: ep.CreatedAt, updated: ep.UpdatedAt, timeout: ep.Timeout, paused: ep.Paused}
}

// endpoint is the view as the model.Endpoint the shared rules take.
func (v noDataView) endpoint() model.Endpoint {
	return model.Endpoint{ID: v.id, Schedule: v.schedule, CreatedAt: v.created, UpdatedAt: v.updated, Timeout: v.timeout, Paused: v.paused}
}

// staleViews bounds how long an unchanged stamp stands in for a listing,
// in case a write path ever misses the stamp.
const staleViews = 10 * time.Minute

// endpointViews returns the no_data views of the endpoints of shards. A
// shard whose endpoints stamp has not moved since its last listing (within
// staleViews) gives the views that listing made; the others are listed in
// one ListEndpointsIn. An idle fleet's once-per-window listing then costs
// one small read per shard instead of decoding the shards' endpoints, and
// a write relists only its own shard. The stamps are read before the
// listing, so a write between the two moves a stamp past the one kept:
// listed again next window. Shards not in shards are forgotten. Called
// with nd.mu held.
func (a *Aggregator) endpointViews(ctx context.Context, now time.Time, shards []int) ([]noDataView, error) {
	nd := &a.nd
	stamps := make([]uint64, len(shards))
	stampsOK := false
	if len(shards) > 0 {
		n, err := a.st.EndpointsStampsIn(ctx, shards)
		if stampsOK = err == nil && len(n) == len(shards); stampsOK {
			stamps = n
		}
	}
	stale := make([]bool, len(shards))
	var list []int
	for i, sh := range shards {
		c, ok := nd.views[sh]
		if stale[i] = !ok || !stampsOK || !c.stampOK || c.stamp != stamps[i] || now.Sub(c.at) >= staleViews; stale[i] {
			list = append(list, sh)
		}
	}
	byShard := map[int][]noDataView{}
	if len(list) > 0 {
		eps, err := a.st.ListEndpointsIn(ctx, list)
		if err != nil {
			return nil, err
		}
		for _, ep := range eps {
			sh := store.ShardOf(ep.ID)
			byShard[sh] = append(byShard[sh], viewOf(ep))
		}
	}
	// Only the shards asked for are kept.
	fresh := make(map[int]shardViews, len(shards))
	for i, sh := range shards {
		fresh[sh] = nd.views[sh]
		if stale[i] {
			fresh[sh] = shardViews{views: byShard[sh], stamp: stamps[i], stampOK: stampsOK, at: now}
		}
	}
	nd.views = fresh
	var views []noDataView
	for _, sh := range shards {
		views = append(views, nd.views[sh].views...)
	}
	return views, nil
}

func newNoDataState() noDataState {
	return noDataState{pending: map[string][]noDataCandidate{}, views: map[int]shardViews{}}
}

// noData runs once per Tick after the normal decisions: it lists the
// endpoints of the shards this replica owns when a new window has closed,
// then decides the candidates that are due. Only owned shards' endpoints
// become candidates; one whose shard has moved to another replica between
// its listing and its due time waits Takeover more (owner.go), by when
// its new owner has either decided the window or let it go.
// open holds this tick's undecided windows by endpoint; failed the endpoints
// whose normal decision failed this tick (their candidates wait).
func (a *Aggregator) noData(ctx context.Context, now time.Time, own ownership, open map[string][]store.WindowRef, failed map[string]bool) error {
	nd := &a.nd
	nd.mu.Lock()
	defer nd.mu.Unlock()

	var errs []error
	w := a.WindowOf(now.Add(-a.opts.Window - a.opts.Grace)) // the most recent closed window
	if w.After(nd.listed) && !w.Before(a.startedAt) {
		if err := a.listNoData(ctx, w, open, own); err != nil {
			errs = append(errs, err) // listed again next tick
		}
	}

	type job struct {
		id       string
		window   time.Time
		takeover bool
	}
	var jobs []job
	for id, cs := range nd.pending {
		owned := own.owns(id)
		i := -1
		for k, c := range cs {
			due := c.due
			if !owned {
				due = due.Add(a.takeover)
			}
			if !due.After(now) {
				i = k
			}
		}
		if i < 0 {
			continue
		}
		if i > 0 {
			// The bound: only the latest due window of an endpoint.
			a.log.Debug("no_data candidates superseded by a later window", "endpoint", id, "dropped", i, "window", cs[i].window)
		}
		nd.pending[id] = cs[i:]
		if failed[id] {
			continue // an earlier window is still undecided; retry next tick
		}
		jobs = append(jobs, job{id, cs[i].window, !owned})
	}

	var (
		wg   sync.WaitGroup
		sem  = make(chan struct{}, a.opts.Concurrency)
		emu  sync.Mutex
		done []string
		n    int
	)
loop:
	for _, j := range jobs {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			// Workers still running append to errs under emu.
			emu.Lock()
			errs = append(errs, ctx.Err())
			emu.Unlock()
			break loop
		}
		wg.Go(func() {
			defer func() { <-sem }()
			emitted, err := a.decideNoData(ctx, j.id, j.window, open[j.id], j.takeover)
			emu.Lock()
			defer emu.Unlock()
			if err != nil {
				errs = append(errs, err) // kept pending: retried next tick
				return
			}
			done = append(done, j.id)
			if emitted {
				n++
			}
		})
	}
	wg.Wait()
	for _, id := range done {
		if cs := nd.pending[id]; len(cs) <= 1 {
			delete(nd.pending, id)
		} else {
			nd.pending[id] = cs[1:]
		}
	}
	if n > 0 {
		a.log.Info("no_data verdicts: endpoints due in a window from which no result arrived", "verdicts", n)
	}
	return errors.Join(errs...)
}

// listNoData lists the endpoints of the shards this replica owns (every
// shard without a view) and queues the candidates of window w. open holds
// the tick's windows of those same shards, so it tells which of the listed
// endpoints have results in w. Another replica's endpoints are its own to
// list; when it dies its shards become this replica's at the listing after
// its heartbeat expires (owner.go).
func (a *Aggregator) listNoData(ctx context.Context, w time.Time, open map[string][]store.WindowRef, own ownership) error {
	nd := &a.nd
	shards := store.AllShards()
	if !own.all() {
		shards, _ = own.shards()
	}
	views, err := a.endpointViews(ctx, a.clk.Now(), shards)
	if err != nil {
		return fmt.Errorf("aggregator: list endpoints of %d shards for no_data in window %s: %w", len(shards), w.Format(time.RFC3339), err)
	}
	seen := make(map[string]bool, len(views))
	for _, v := range views {
		ep := v.endpoint()
		seen[ep.ID] = true
		if !a.noDataEligible(ep, w) || hasWindow(open[ep.ID], w) {
			continue
		}
		if sl, ok := a.slots.get(ep); !ok || sl.In(w, w.Add(a.opts.Window)) == 0 {
			continue
		}
		nd.pending[ep.ID] = append(nd.pending[ep.ID], noDataCandidate{
			window: w,
			due:    w.Add(a.opts.Window + a.opts.Grace + probeTimeout(ep)),
		})
	}
	a.slots.keep(seen)
	nd.listed = w
	return nil
}

// decideNoData publishes and records a no_data verdict for endpoint id and
// window w unless something since the listing rules it out. emitted is
// false when the candidate was dropped; either way it is done. The last
// verdict is read first: for another replica's endpoint (takeover) its
// owner has almost always decided the window, and that one read drops it.
func (a *Aggregator) decideNoData(ctx context.Context, id string, w time.Time, open []store.WindowRef, takeover bool) (emitted bool, err error) {
	last, err := a.st.LastVerdict(ctx, id)
	switch {
	case errors.Is(err, model.ErrNotFound):
	case err != nil:
		return false, fmt.Errorf("aggregator: last verdict of endpoint %s: %w", id, err)
	case !last.Window.Before(w):
		return false, nil // decided normally, or by another replica
	}
	ep, err := a.st.GetEndpoint(ctx, id)
	switch {
	case errors.Is(err, model.ErrNotFound):
		return false, nil // deleted
	case err != nil:
		return false, fmt.Errorf("aggregator: endpoint %s for no_data: %w", id, err)
	}
	if !a.noDataEligible(ep, w) || hasWindow(open, w) {
		return false, nil // paused or changed since; or results came and the normal path decides
	}
	applied, err := a.emit(ctx, a.annotate(ctx, ep, Decide(id, w, a.opts.Window, nil, 0), nil))
	if err != nil {
		return false, err
	}
	if applied && takeover {
		a.m.Takeovers.Inc()
	}
	return true, nil
}

// noDataEligible: ep is unpaused and was last created or changed before w
// began, so the scheduler emitted its slots for the whole window.
func (a *Aggregator) noDataEligible(ep model.Endpoint, w time.Time) bool {
	changed := ep.CreatedAt
	if ep.UpdatedAt.After(changed) {
		changed = ep.UpdatedAt
	}
	return !ep.Paused && changed.Before(w)
}

func probeTimeout(ep model.Endpoint) time.Duration {
	if ep.Timeout > 0 {
		return ep.Timeout
	}
	return DefaultProbeTimeout
}

func hasWindow(refs []store.WindowRef, w time.Time) bool {
	for _, r := range refs {
		if r.Window.Equal(w) {
			return true
		}
	}
	return false
}
