// Package aggregator owns the step from probe results to verdicts: it folds
// every ProbeResult of an endpoint that falls into one window (aligned to the
// window size in UTC, keyed by the result's slot) into exactly one Verdict.
//
// Data enters through Handle, the queue.Handler for the results queue, which
// adds each result to its window in the store (idempotent by probe run ID,
// so redelivered and re-sent results count once). It leaves through Run (or
// Tick), which after each window's end plus a grace period decides the
// window, publishes the Verdict to the verdicts queue (group = endpoint ID,
// dedup = verdict-<endpointId>-<minute>) and records it in the store. The
// store's open-window set is the only durable state; an aggregator restarted
// on the same store carries on where it stopped. Replicas on one store
// split the decisions: each lists and decides the windows of the shards it
// owns among the live replicas (owner.go), and any window whose owner let
// it pass its decision time by the takeover margin.
//
// # no_data
//
// A window in which an endpoint was due to be probed but from which no result
// arrived (every prober down, commands stuck, a prober crash-looping) gets a
// no_data verdict, so the verdict history and the dashboards show the gap
// instead of silently stopping. "Due" is the scheduler's own slot rule
// (schedule.Slots): an endpoint probed every 5 minutes has no
// slot in 4 of 5 one-minute windows, and those get no verdict at all.
// A window whose results all came from blind probers (prober/canary.go:
// every canary failed) is no_data as well, with class ClassBlind and a
// reason naming the regions; a blind region among sighted ones drops out
// of the window as a dead region does (DecideDue).
// no_data verdicts take the normal path: same dedup ID, publish first, then
// RecordVerdict. Replicas deciding the same window publish under the same
// dedup ID, which the queue collapses (after SQS's five minutes the alerter's
// window check drops the copy), and only the first RecordVerdict applies. A
// crash between publish and record is not repaired after a restart (the
// window began before the new start; see the bound): the message went out,
// the history lacks that one no_data. The alerter does not fold no_data: it
// neither opens nor resolves an incident.
//
// Which windows, exactly (the bound):
//   - Once per window W, at W's end plus grace, the aggregator lists the
//     endpoints of the shards it owns (every shard without a membership
//     view, owner.go) and takes as candidates those that are unpaused, whose last
//     change (CreatedAt, UpdatedAt) is before W starts (a window cut by a
//     creation, an unpause or a schedule edit is never no_data: the
//     scheduler may have picked the change up mid-window), that have at
//     least one slot in W, and that have no undecided result in W.
//   - Only W, the most recent closed window, is listed: after the aggregator
//     was down or stalled it does not backfill the windows it missed, and
//     windows that began before this aggregator started are never no_data
//     (results queued during its downtime may still be on their way).
//   - A candidate is decided once a probe started in W has had time to
//     finish: at W's end + grace + the endpoint's probe timeout (10s when it
//     has none). It is dropped, not decided, if by then the endpoint was
//     deleted, paused or changed, results arrived for W (the normal path
//     decides it), or a verdict for W or a later window exists: no_data is
//     never older than the endpoint's last verdict. When several candidates
//     of one endpoint are due in the same tick only the latest is decided.
//
// Cost, per window per aggregator replica: one EndpointsStampsIn of the
// shards it owns (on Redis a GET per shard of the sharded layout, one
// HMGET in the one-slot layout; on bolt one read transaction), then one
// ListEndpointsIn of those of its shards whose stamp moved since their
// last listing, or that it did not own then, or last listed staleViews
// ago; none when no shard qualifies. On a Redis Cluster that is an
// HGETALL of each such shard's endpoints hash, one slot each; in the
// one-slot layout an HGETALL of the one endpoints hash, filtered; on bolt a
// scan of the endpoints bucket decoding only those shards' records.
// Between them the replicas list each changed shard once. CPU per
// listed endpoint: a slot count, O(1) for "@every" and O(slots in the
// window) for cron, plus a parse when its schedule changed (parsed
// schedules are cached; BenchmarkSlots in pkg/schedule measures both). A
// failed listing is retried next tick. Per candidate:
// GetEndpoint and LastVerdict, and for a no_data verdict one publish and one
// RecordVerdict. Pending candidates live in memory, at most
// (grace + probe timeout)/window + 1 per silent endpoint.
// A healthy fleet has almost no candidates (only endpoints whose result is
// still in flight at W's end + grace); in a full outage every endpoint with a
// slot in the window is one, which is what an outage of the probers costs
// in normal verdicts too.
//
// A result that arrives for a window already decided no_data is counted late
// and dropped, as for any decided window; and two replicas racing on the same
// window (one with a just-arrived result, one without) can publish different
// bodies under one dedup ID: the queue keeps the first published, the store
// the first recorded, and the two can differ (the alerter saw no_data, the
// history says down). Ownership (owner.go) confines that race to windows
// two replicas decide at once: while their views of the members differ (one
// listing interval after a replica joins) or by takeover, past the owner's
// deadline; the probe timeout in the candidate's deadline confines it
// further to results later than a probe can take.
package aggregator

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpmon/mcpmon/pkg/clock"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/msg"
	"github.com/mcpmon/mcpmon/pkg/queue"
	"github.com/mcpmon/mcpmon/pkg/store"
)

// Defaults.
const (
	DefaultWindow      = time.Minute
	DefaultConcurrency = 16
)

// Store is what the aggregator needs from pkg/store.
type Store interface {
	AddWindowResult(ctx context.Context, window time.Time, r msg.ProbeResult) (added bool, err error)
	WindowResults(ctx context.Context, ref store.WindowRef) ([]msg.ProbeResult, error)
	OpenWindows(ctx context.Context, before time.Time) ([]store.WindowRef, error)
	// OpenWindowsIn lists the windows of the shards a replica owns.
	OpenWindowsIn(ctx context.Context, before time.Time, shards []int) ([]store.WindowRef, error)
	RecordVerdict(ctx context.Context, v msg.Verdict) (applied bool, err error)
	LastVerdict(ctx context.Context, endpointID string) (msg.Verdict, error)
	GetEndpoint(ctx context.Context, id string) (model.Endpoint, error)
	// ListEndpointsIn is read once per window, for the shards this
	// replica owns, to find no_data windows.
	ListEndpointsIn(ctx context.Context, shards []int) ([]model.Endpoint, error)
	// EndpointsStampsIn says which of those shards changed since the
	// last listing (endpointViews).
	EndpointsStampsIn(ctx context.Context, shards []int) ([]uint64, error)
}

// Publisher sends one message to the verdicts queue and blocks until the
// queue accepted it; *queue.Publisher satisfies it.
type Publisher interface {
	Publish(ctx context.Context, in queue.SendInput) (messageID string, err error)
}

// Options configure an Aggregator. Store and Publisher are required.
type Options struct {
	Store     Store
	Publisher Publisher
	// Window is the verdict window (default 1m). Windows are aligned to it
	// in UTC, so choose a divisor of a day.
	Window time.Duration
	// Grace is how long after a window's end results may still arrive
	// before the window is decided (default Window/4, at most 15s).
	Grace time.Duration
	// TickInterval is how often Run looks for closed windows (default
	// Window/4, between 100ms and 5s).
	TickInterval time.Duration
	// Concurrency bounds how many endpoints are decided in parallel per tick
	// (default 16); one endpoint's windows are always decided in order.
	Concurrency int
	// Settle is how long no window is decided after the store returns from
	// an outage (default queue.DefaultTransientMaxBackoff + Grace). The
	// results that arrived meanwhile are held in flight by the consumers
	// and retried with a backoff capped at the former; deciding before
	// they are folded would call their windows no_data, or judge them on
	// the results from before the outage alone.
	Settle time.Duration
	// Regions is the deployment's region set (--regions): a window is
	// judged against the endpoint's due regions (schedule.DueRegions), so
	// a region that sent nothing is no_data, never up. Empty: the regions
	// that reported are compared, as without a region set.
	Regions []string
	// Live, when set with Regions, narrows the due regions to those with a
	// live prober in the window (regions.go): a region whose whole prober
	// fleet is gone is left out instead of holding every window below the
	// quorum.
	Live LiveRegions
	// Agents, when set, tells which agent locations had no live agent
	// (regions.go): such a location is left out of a window's due
	// regions, as a dead region is.
	Agents AgentLocations
	// RegionMetrics count each region's window states (nil: none).
	RegionMetrics *RegionMetrics
	// Members, when set, partitions decisions across the live aggregator
	// replicas (owner.go): this replica, Replica, decides the windows of
	// the endpoints it owns, and the others' only by takeover. nil: it
	// decides every window (one process with the embedded store).
	Members Members
	// Replica is this replica's member ID; required with Members.
	Replica string
	// MemberTTL is how long a killed replica still counts as live in the
	// others' views (default DefaultMemberTTL). A window still open
	// MemberTTL + 2×TickInterval after its decision time is decided by
	// any replica.
	MemberTTL time.Duration
	Clock     clock.Clock
	Logger    *slog.Logger
	Metrics   *Metrics

	// CertWarning is how long before its certificate expires an endpoint
	// gets a certificate_expiry event (default DefaultCertWarning, 14 days).
	CertWarning time.Duration
}

// Aggregator turns probe results into verdicts. Handle and Run may be used
// from many goroutines; several aggregators may share one store, since the
// store and the verdict dedup ID make a window decided twice harmless.
type Aggregator struct {
	opts Options
	st   Store
	pub  Publisher
	clk  clock.Clock
	log  *slog.Logger
	m    *Metrics

	mu sync.Mutex
	// stuck holds windows that can no longer be decided because a later
	// verdict was recorded while their results were being added (a narrow
	// race between AddWindowResult and RecordVerdict). The store offers no
	// way to drop such a window, so the aggregator remembers to skip it.
	stuck map[store.WindowRef]bool
	// notDue holds, for an open window found not yet due, the decision
	// time its endpoint gave then, so later ticks skip it without reading
	// the endpoint again (every open window's endpoint was read on every
	// tick: five endpoint reads per probe at 10,000 endpoints). The
	// decision itself reads the endpoint afresh and checks again, so a
	// stale entry can only make a window wait, never decide it early.
	notDue map[store.WindowRef]time.Time
	// storeDown makes a store outage log once, not once per message.
	storeDown atomic.Bool
	// holdUntil (Unix ns) is when deciding resumes after a store outage.
	holdUntil atomic.Int64

	// startedAt bounds no_data: windows that began earlier are never no_data.
	startedAt time.Time
	// nd serializes the no_data pass and guards its state (nodata.go).
	nd noDataState
	// slots caches each endpoint's parsed schedule.
	slots slotCache
	// maint caches the maintenance windows for rollups (rollup.go).
	maint maintCache

	// events records change events (events.go); nil when the store keeps
	// none.
	events EventStore

	// takeover is how long past its decision time a window of an endpoint
	// this replica does not own waits before it decides it (owner.go).
	takeover time.Duration
}

// New returns an Aggregator.
func New(opts Options) (*Aggregator, error) {
	if opts.Store == nil {
		return nil, errors.New("aggregator: Options.Store is required")
	}
	if opts.Publisher == nil {
		return nil, errors.New("aggregator: Options.Publisher is required")
	}
	if opts.Window <= 0 {
		opts.Window = DefaultWindow
	}
	if opts.Window < time.Second || opts.Window%time.Second != 0 {
		// The verdict dedup ID carries the window to the second.
		return nil, fmt.Errorf("aggregator: window %s: must be a whole number of seconds", opts.Window)
	}
	if opts.Grace <= 0 {
		opts.Grace = min(opts.Window/4, 15*time.Second)
	}
	if opts.TickInterval <= 0 {
		opts.TickInterval = min(max(opts.Window/4, 100*time.Millisecond), 5*time.Second)
	}
	if opts.Concurrency <= 0 {
		opts.Concurrency = DefaultConcurrency
	}
	if opts.Settle <= 0 {
		opts.Settle = queue.DefaultTransientMaxBackoff + opts.Grace
	}
	if opts.Clock == nil {
		opts.Clock = clock.Real{}
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Metrics == nil {
		opts.Metrics = NewMetrics(nil, nil)
	}
	if opts.Members != nil && opts.Replica == "" {
		return nil, errors.New("aggregator: Options.Replica is required with Options.Members")
	}
	if opts.MemberTTL <= 0 {
		opts.MemberTTL = DefaultMemberTTL
	}
	a := &Aggregator{
		opts:   opts,
		st:     opts.Store,
		pub:    opts.Publisher,
		clk:    opts.Clock,
		log:    opts.Logger.With("component", "aggregator"),
		m:      opts.Metrics,
		stuck:  map[store.WindowRef]bool{},
		notDue: map[store.WindowRef]time.Time{},

		startedAt: opts.Clock.Now().UTC(),
		nd:        newNoDataState(),
		slots:     slotCache{m: map[string]cachedSlots{}, log: opts.Logger},
		takeover:  opts.MemberTTL + 2*opts.TickInterval,
	}
	a.events, _ = opts.Store.(EventStore)
	return a, nil
}

// Metrics returns the aggregator's metrics.
func (a *Aggregator) Metrics() *Metrics { return a.m }

// WindowOf returns the start of the window that holds a result for slot.
func (a *Aggregator) WindowOf(slot time.Time) time.Time {
	return slot.UTC().Truncate(a.opts.Window)
}

// Handle folds one results-queue message into its window. It returns nil
// (delete the message) for a result added, a duplicate, or a result whose
// window was already decided (counted late); it returns an error, leaving
// the message for redelivery and eventually the DLQ, when the body cannot
// be read or the store fails.
func (a *Aggregator) Handle(ctx context.Context, m queue.Message) error {
	r, ok := m.Value.(msg.ProbeResult) // handed over by a prober of this process (queue.Handoff)
	if !ok {
		if err := msg.Decode(m.Body, &r); err != nil {
			return fmt.Errorf("aggregator: result message %s (dedup %s): %w", m.ID, m.DedupID, err)
		}
	}
	if r.EndpointID == "" || r.ProbeRunID == "" {
		return fmt.Errorf("aggregator: result message %s: missing endpointId or probeRunId", m.ID)
	}
	slot := r.Slot
	if slot.IsZero() {
		slot = r.StartedAt
	}
	window := a.WindowOf(slot)
	// Events first, whatever becomes of the result (events.go).
	if err := a.recordEvents(ctx, r); err != nil {
		a.storeUnavailable(err)
		return err
	}
	// A prober of before leaves the conformance in: the window drops it.
	added, err := a.st.AddWindowResult(ctx, window, r.WithoutConformance())
	switch {
	case errors.Is(err, store.ErrWindowDecided):
		a.m.ResultsLate.Inc()
		a.log.Debug("late result dropped", "endpoint", r.EndpointID, "probe_run", r.ProbeRunID, "window", window)
		return nil
	case errors.Is(err, store.ErrUnavailable):
		a.storeUnavailable(err)
		return fmt.Errorf("aggregator: add result %s of endpoint %s: %w", r.ProbeRunID, r.EndpointID, err)
	case err != nil:
		return fmt.Errorf("aggregator: add result %s of endpoint %s to window %s: %w", r.ProbeRunID, r.EndpointID, window.Format(time.RFC3339), err)
	case !added:
		a.m.ResultsDuplicate.Inc()
	}
	a.storeAvailable()
	// The endpoint's latest result (for the API) is the prober's to store.
	return nil
}

// Run decides closed windows every TickInterval until ctx is done.
func (a *Aggregator) Run(ctx context.Context) error {
	t := time.NewTicker(a.opts.TickInterval)
	defer t.Stop()
	for {
		err := a.Tick(ctx)
		switch {
		case ctx.Err() != nil:
		case errors.Is(err, store.ErrUnavailable):
			a.storeUnavailable(err) // logged once per outage
		case err != nil:
			a.log.Warn("deciding windows", "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Tick decides every open window whose end plus grace has passed and whose
// endpoint this replica owns, and any other whose decision time is
// Takeover past (owner.go). It is Run's body, exported so tests and a
// one-shot runner can drive it with a fake clock.
func (a *Aggregator) Tick(ctx context.Context) error {
	now := a.clk.Now()
	// A window starting at w closes at w+Window; decide it once now >=
	// w+Window+Grace. The latest such w is the window holding
	// now-Window-Grace, so ask for windows starting before the next
	// boundary: a whole window size, which survives a store that keeps
	// times to the millisecond (Redis scores).
	before := a.WindowOf(now.Add(-a.opts.Window - a.opts.Grace)).Add(a.opts.Window)
	own := a.ownershipView(ctx)
	refs, err := a.openWindows(ctx, now, before, own)
	if errors.Is(err, store.ErrUnavailable) {
		a.storeUnavailable(err)
	}
	if err != nil {
		return fmt.Errorf("aggregator: list open windows: %w", err)
	}
	a.storeAvailable()
	if hold := a.holdUntil.Load(); now.UnixNano() < hold {
		return nil // results held through an outage are still being folded
	}
	byEndpoint := map[string][]store.WindowRef{}
	open := make(map[store.WindowRef]bool, len(refs))
	for _, r := range refs {
		r.Window = r.Window.UTC()
		open[r] = true
		byEndpoint[r.EndpointID] = append(byEndpoint[r.EndpointID], r)
	}
	a.mu.Lock()
	for r := range a.stuck {
		if !open[r] {
			delete(a.stuck, r)
		}
	}
	for r := range a.notDue {
		if !open[r] {
			delete(a.notDue, r)
		}
	}
	a.mu.Unlock()

	type due struct {
		id    string
		ws    []store.WindowRef
		owned bool
	}
	var todo []due
	for id, ws := range byEndpoint {
		slices.SortFunc(ws, func(x, y store.WindowRef) int { return x.Window.Compare(y.Window) })
		owned := own.owns(id)
		if now.Before(a.earliestDecision(ws[0], owned)) {
			// Not even its oldest window can be due (or due for
			// takeover): skipped without reading the endpoint.
			continue
		}
		todo = append(todo, due{id, ws, owned})
	}
	// Up to Concurrency workers, each deciding endpoints until none is
	// left: a decision runs deep (store reads, JSON, a commit), and a
	// goroutine per endpoint regrew that stack every time.
	var (
		wg     sync.WaitGroup
		next   = make(chan due)
		emu    sync.Mutex
		errs   []error
		failed = map[string]bool{} // endpoints with a window left undecided
	)
	for range min(a.opts.Concurrency, len(todo)) {
		wg.Go(func() {
			for d := range next {
				if err := a.decideEndpoint(ctx, now, d.id, d.ws, d.owned); err != nil {
					emu.Lock()
					errs = append(errs, err)
					failed[d.id] = true
					emu.Unlock()
				}
			}
		})
	}
	for _, d := range todo {
		select {
		case next <- d:
		case <-ctx.Done():
			close(next)
			wg.Wait()
			return ctx.Err()
		}
	}
	close(next)
	wg.Wait()
	// After the normal decisions, so that a no_data verdict never overtakes
	// an earlier window still being decided.
	if err := a.noData(ctx, now, own, byEndpoint, failed); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// openWindows lists this tick's windows: every one starting before
// `before` in the shards this replica owns, and in the others only those
// whose decision time is Takeover past (owner.go), which a live owner
// leaves none of.
func (a *Aggregator) openWindows(ctx context.Context, now, before time.Time, own ownership) ([]store.WindowRef, error) {
	if own.all() {
		return a.st.OpenWindows(ctx, before)
	}
	mine, others := own.shards()
	refs, err := a.st.OpenWindowsIn(ctx, before, mine)
	if err != nil || len(others) == 0 {
		return refs, err
	}
	overdue := a.WindowOf(now.Add(-a.opts.Window - a.opts.Grace - a.takeover)).Add(a.opts.Window)
	theirs, err := a.st.OpenWindowsIn(ctx, overdue, others)
	if err != nil {
		return nil, err
	}
	return append(refs, theirs...), nil
}

// storeUnavailable notes a store outage, logging it once.
func (a *Aggregator) storeUnavailable(err error) {
	if a.storeDown.CompareAndSwap(false, true) {
		// Debug: the store logs its outage once itself.
		a.log.Debug("store unavailable: results stay queued and no window is decided until it is back", "err", err)
	}
}

// storeAvailable notes a store that answered. After an outage it holds
// every decision for Settle (see Options.Settle).
func (a *Aggregator) storeAvailable() {
	if a.storeDown.CompareAndSwap(true, false) {
		a.holdUntil.Store(a.clk.Now().Add(a.opts.Settle).UnixNano())
		a.log.Info("store reachable again; deciding windows resumes after the held results are folded", "settle", a.opts.Settle)
	}
}

// decideEndpoint decides, oldest first, the closed windows ws of endpoint id
// whose decision time has come — plus the takeover margin when this replica
// does not own id — and stops at the first that must wait or fails:
// deciding a later window first would make it older than the last verdict.
func (a *Aggregator) decideEndpoint(ctx context.Context, now time.Time, id string, ws []store.WindowRef, owned bool) error {
	ep, err := a.st.GetEndpoint(ctx, id)
	switch {
	case err == nil:
	case errors.Is(err, model.ErrNotFound):
		// Deleted since it was probed: decide with the defaults so the
		// window is closed; the alerter ignores unknown endpoints' noise.
		ep = model.Endpoint{ID: id}
	default:
		return fmt.Errorf("aggregator: endpoint %s: %w", id, err)
	}
	for _, ref := range ws {
		due := a.decisionTime(ep, ref.Window)
		a.mu.Lock()
		a.notDue[ref] = due
		a.mu.Unlock()
		if !owned {
			due = due.Add(a.takeover)
		}
		if now.Before(due) {
			return nil // a probe of this window may still be running, or its owner deciding it
		}
		if err := a.decide(ctx, ref, ep, !owned); err != nil {
			return err
		}
	}
	return nil
}

// earliestDecision is the soonest window ref can be decided without
// reading its endpoint: end + grace (decisionTime is never earlier), or the
// decision time its endpoint gave when last read (notDue), plus the
// takeover wait when another replica owns it. An endpoint's windows are
// decided oldest first, so its oldest window's bound holds for all.
func (a *Aggregator) earliestDecision(ref store.WindowRef, owned bool) time.Time {
	at := ref.Window.Add(a.opts.Window + a.opts.Grace)
	a.mu.Lock()
	if due, ok := a.notDue[ref]; ok {
		at = due
	}
	a.mu.Unlock()
	if !owned {
		at = at.Add(a.takeover)
	}
	return at
}

// decisionTime is when window w of ep is decided: grace after the window
// ends, or, when a slot in the window's last probe-timeout could still be
// probing at its end, grace after that probe's deadline (slot + timeout, see
// prober.ProbeDeadline). So a hung target's timeout result counts for its own
// window instead of arriving after the window was decided without it.
func (a *Aggregator) decisionTime(ep model.Endpoint, w time.Time) time.Time {
	end := w.Add(a.opts.Window)
	due := end.Add(a.opts.Grace)
	if ep.Schedule == "" {
		return due
	}
	timeout := probeTimeout(ep)
	if sl, ok := a.slots.get(ep); ok && sl.In(end.Add(-timeout), end) > 0 {
		return due.Add(timeout)
	}
	return due
}

// decide decides one window; takeover marks a window of an endpoint this
// replica does not own (counted when its verdict is the one applied).
func (a *Aggregator) decide(ctx context.Context, ref store.WindowRef, ep model.Endpoint, takeover bool) error {
	a.mu.Lock()
	skip := a.stuck[ref]
	a.mu.Unlock()
	if skip {
		return nil
	}
	last, err := a.st.LastVerdict(ctx, ref.EndpointID)
	switch {
	case errors.Is(err, model.ErrNotFound):
	case err != nil:
		return fmt.Errorf("aggregator: last verdict of endpoint %s: %w", ref.EndpointID, err)
	case !last.Window.Before(ref.Window):
		// Never emit a verdict older than (or as old as) the last one.
		a.mu.Lock()
		a.stuck[ref] = true
		a.mu.Unlock()
		if last.Window.Equal(ref.Window) {
			// Another aggregator replica decided it between our listing
			// and now: the normal case with replicas, not news.
			a.log.Debug("window decided by another replica", "endpoint", ref.EndpointID, "window", ref.Window)
			return nil
		}
		a.m.ResultsLate.Inc()
		a.log.Warn("window left undecided: a later verdict exists", "endpoint", ref.EndpointID, "window", ref.Window, "last", last.Window)
		return nil
	}
	results, err := a.st.WindowResults(ctx, ref)
	if err != nil {
		return fmt.Errorf("aggregator: results of endpoint %s window %s: %w", ref.EndpointID, ref.Window.Format(time.RFC3339), err)
	}
	var rules model.Rules
	if ep.Rules != nil {
		rules = *ep.Rules
	}
	v := DecideDue(ref.EndpointID, ref.Window, a.opts.Window, results, rules.RegionQuorum, a.dueRegions(ctx, ep, ref.Window))
	// Before the verdict goes out (divergence.go says why).
	if err := a.recordDivergence(ctx, ep, ref, results); err != nil {
		return err
	}
	applied, err := a.emit(ctx, a.annotate(ctx, ep, v, results))
	if applied && takeover {
		a.m.Takeovers.Inc()
	}
	return err
}

// emit publishes v and records it: the one path for every verdict, no_data
// included. applied is false when another replica recorded it first.
func (a *Aggregator) emit(ctx context.Context, v msg.Verdict) (applied bool, err error) {
	v.EmittedAt = a.clk.Now().UTC()

	// Publish first, record second. A crash between the two leaves the
	// window open, so the next tick decides it again and publishes under the
	// same dedup ID: within SQS's five minutes the queue drops the copy;
	// after that the alerter drops it because its window is not after the
	// tracker's last window. The copy is harmless either way. The other order
	// (record, then publish) would lose the verdict for good on a crash in
	// between: the window is closed and its results dropped, and an outage
	// could go unalerted.
	if _, err := a.pub.Publish(ctx, queue.SendInput{GroupID: v.GroupID(), DedupID: v.DedupID(), Body: v.Body()}); err != nil {
		return false, fmt.Errorf("aggregator: publish verdict %s: %w", v.DedupID(), err)
	}
	applied, err = a.st.RecordVerdict(ctx, v)
	if err != nil {
		return false, fmt.Errorf("aggregator: record verdict %s: %w", v.DedupID(), err)
	}
	if !applied {
		// Another aggregator recorded this window or a later one first; it
		// published the same dedup ID, so ours collapsed with it or will be
		// dropped by the alerter's window check.
		a.log.Debug("verdict already recorded", "verdict", v.DedupID())
		return false, nil
	}
	a.m.Verdicts.WithLabelValues(string(v.State)).Inc()
	a.m.setState(v.EndpointID, v.State)
	a.opts.RegionMetrics.observe(v)
	if !v.FirstProbeAt.IsZero() {
		a.m.probeToVerdict.Observe(v.EmittedAt.Sub(v.FirstProbeAt).Seconds())
	}
	a.log.Debug("verdict", "endpoint", v.EndpointID, "window", v.Window, "state", v.State, "results", v.Results)
	return true, nil
}

// Decide folds one window's results into a verdict, with no region set:
// the regions compared are those that reported (DecideDue with due nil).
func Decide(endpointID string, window time.Time, size time.Duration, results []msg.ProbeResult, quorum int) msg.Verdict {
	return DecideDue(endpointID, window, size, results, quorum, nil)
}

// DecideDue folds one window's results into a verdict, knowing which
// regions were due (schedule.DueRegions; nil without a region set).
//
// Each region (results without a region form one region "") is judged by
// its latest result in the window (by slot, then finish time): the newest
// observation is the best estimate of the state at the window's end. The
// regions judged are the due ones plus any other that reported; a due
// region without a result is no_data for that region (RegionStates): it
// neither counts as up nor as down, but it counts in the quorum's base, so
// a silent region can never make a window look up or healthy by omission.
// With R regions judged and D of them down, the verdict is down when
// D >= Q, where Q is quorum (0 = majority, R/2+1) capped at R; regional
// when 0 < D < Q, with the failing regions named; degraded when no region
// is down but one is degraded; up otherwise; no_data without any result.
// Class and Reason come from the deciding result: the latest down result of
// the first failing region (by name), else the first degraded one, else
// "ok". A region whose latest result is blind (its prober's canaries all
// failed) is left out of the judged regions and the quorum's base, shown
// as no_data in RegionStates; when no judged region reported, the window
// is no_data, with class ClassBlind and a reason naming the blind regions
// if there were any.
func DecideDue(endpointID string, window time.Time, size time.Duration, results []msg.ProbeResult, quorum int, due []string) msg.Verdict {
	v := msg.Verdict{
		Schema:     msg.SchemaVersion,
		EndpointID: endpointID,
		Window:     window.UTC(),
		WindowSecs: int(size / time.Second),
		Results:    len(results),
	}
	if len(results) == 0 {
		v.State = msg.StateNoData
		return v
	}
	latest := map[string]msg.ProbeResult{}
	for _, r := range results {
		if v.FirstProbeAt.IsZero() || (!r.StartedAt.IsZero() && r.StartedAt.Before(v.FirstProbeAt)) {
			v.FirstProbeAt = r.StartedAt.UTC()
		}
		cur, ok := latest[r.Region]
		if !ok || cmp.Or(r.Slot.Compare(cur.Slot), r.FinishedAt.Compare(cur.FinishedAt), cmpString(r.ProbeRunID, cur.ProbeRunID)) > 0 {
			latest[r.Region] = r
		}
	}
	// A region whose latest result is blind drops out, as a dead region
	// does: its prober could not see, so it is neither up nor down nor
	// part of the quorum's base.
	blind := map[string]msg.ProbeResult{}
	for reg, r := range latest {
		if r.Blind {
			blind[reg] = r
			delete(latest, reg)
		}
	}
	regions := make([]string, 0, len(latest)+len(due))
	for reg := range latest {
		regions = append(regions, reg)
	}
	for _, reg := range due {
		if _, ok := latest[reg]; !ok {
			if _, isBlind := blind[reg]; !isBlind {
				regions = append(regions, reg)
			}
		}
	}
	slices.Sort(regions)
	regions = slices.Compact(regions)
	if len(due) > 0 {
		v.RegionStates = make(map[string]msg.State, len(regions)+len(blind))
		for reg := range blind {
			v.RegionStates[reg] = msg.StateNoData
		}
	}
	if len(latest) == 0 {
		// Every result left was blind (or due regions sent nothing): the
		// window says nothing about the endpoint.
		for _, reg := range regions {
			if v.RegionStates != nil {
				v.RegionStates[reg] = msg.StateNoData
			}
		}
		v.State = msg.StateNoData
		v.Class, v.Reason = blindReason(blind)
		return v
	}

	var down, degraded []msg.ProbeResult
	for _, reg := range regions {
		r, ok := latest[reg]
		if v.RegionStates != nil {
			v.RegionStates[reg] = regionState(r, ok)
		}
		switch {
		case !ok:
		case r.Status == msg.StatusDown:
			down = append(down, r)
			if reg != "" {
				v.FailingRegions = append(v.FailingRegions, reg)
			}
		case r.Status == msg.StatusDegraded:
			degraded = append(degraded, r)
		}
	}
	q := quorum
	if q <= 0 {
		q = len(regions)/2 + 1
	}
	q = min(q, len(regions))
	switch {
	case len(down) >= q:
		v.State = msg.StateDown
		v.Class, v.Reason = down[0].Class, reasonOf(down[0])
	case len(down) > 0:
		v.State = msg.StateRegional
		v.Class, v.Reason = down[0].Class, reasonOf(down[0])
	case len(degraded) > 0:
		v.State = msg.StateDegraded
		v.Class, v.Reason = degraded[0].Class, reasonOf(degraded[0])
	default:
		v.State = msg.StateUp
		v.Class = "ok"
	}
	return v
}

// regionState is one region's state in a window: its latest result's
// status, or no_data when it was due and sent nothing.
func regionState(r msg.ProbeResult, reported bool) msg.State {
	switch {
	case !reported:
		return msg.StateNoData
	case r.Status == msg.StatusDown:
		return msg.StateDown
	case r.Status == msg.StatusDegraded:
		return msg.StateDegraded
	}
	return msg.StateUp
}

// ClassBlind is the class of a window decided no_data because the
// prober of every region judged was blind (prober/canary.go).
const ClassBlind = "prober_blind"

// blindReason words a window whose results were all blind: which regions'
// probers were blind, and since when. Empty without blind results.
func blindReason(blind map[string]msg.ProbeResult) (class, reason string) {
	if len(blind) == 0 {
		return "", ""
	}
	regions := slices.Sorted(maps.Keys(blind))
	parts := make([]string, 0, len(regions))
	for _, reg := range regions {
		where := "the prober"
		if reg != "" {
			where += " in region " + reg
		}
		parts = append(parts, where+" was blind (no canary answered) since "+blind[reg].BlindSince.UTC().Format(time.RFC3339))
	}
	return ClassBlind, strings.Join(parts, "; ")
}

func reasonOf(r msg.ProbeResult) string {
	if r.Error != "" {
		return r.Error
	}
	return r.Class
}

func cmpString(a, b string) int { return cmp.Compare(a, b) }
