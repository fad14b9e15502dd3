// Package scheduler owns when each registered endpoint is probed. Endpoints
// enter through Upsert, Remove and Sync (the API calls the first two on every
// change; the process calls Sync at start and periodically with the store's
// full list, so changes made through another API replica take effect). Probe
// commands leave through a CommandSender — in production the commands queue's
// queue.Publisher — one msg.ProbeCommand per endpoint per due slot, with the
// endpoint ID as message group and no dedup ID: the commands queue
// deduplicates on content, and a command's body is a pure function of
// (endpoint, slot), so two schedulers emitting the same slot send one message.
//
// Schedules are parsed with robfig/cron/v3 (see schedule.ParseSchedule) but
// timed here,
// with a min-heap of next-fire times: robfig's cron.Cron re-sorts every entry
// on each wake and on each AddFunc, which does not scale to 100k endpoints.
//
// Slots are deterministic, the same in every replica and across restarts:
// a cron expression fires at its times (UTC unless CRON_TZ= is given), and
// "@every D" fires at a fixed per-endpoint offset (a hash of the ID) inside
// each D-long period counted from the Unix epoch, which also spreads
// endpoints sharing an interval evenly over it. That placement lives in
// pkg/schedule (schedule.Slots), which the scheduler itself uses, so the
// aggregator can tell a window in which an endpoint was due but nothing
// arrived (no_data) from one in which it was simply not scheduled.
//
// Missed slots: the scheduler keeps no state across restarts. On start every
// endpoint is scheduled for its next slot after now; slots that fell into the
// downtime are not emitted. When the loop falls behind while running (a
// blocked sender, a suspended host, a clock jump) only the latest missed slot
// of each endpoint is emitted, never the backlog: one fresh probe is worth
// more than a storm of stale ones whose verdict windows may already be
// decided. A wall clock stepped back reschedules every endpoint from the
// clock's new time (steppedBack), rather than waiting out the step.
package scheduler

import (
	"cmp"
	"container/heap"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mcpmon/mcpmon/pkg/clock"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/msg"
	"github.com/mcpmon/mcpmon/pkg/queue"
	"github.com/mcpmon/mcpmon/pkg/schedule"
)

// CommandSender publishes one message; *queue.Publisher satisfies it.
type CommandSender interface {
	Publish(ctx context.Context, in queue.SendInput) (messageID string, err error)
}

// Options configure a Scheduler. Zero values use defaults.
type Options struct {
	// Clock tells the time; default wall time. Waiting uses time.Timer, so a
	// test drives time with testing/synctest rather than a fake clock.
	Clock clock.Clock
	// Logger; default discards.
	Logger *slog.Logger
	// Metrics; optional.
	Metrics *Metrics
	// Concurrency is how many Publish calls may be in flight at once; the
	// publisher batches concurrent calls, so this bounds throughput
	// (default 64). Each endpoint always publishes through the same worker,
	// so its commands are sent in slot order.
	Concurrency int
	// Regions, when set, fan every slot out: one command per region the
	// endpoint is due in (schedule.DueRegions of these names and the
	// endpoint's Regions), each to its region's sender (the region's
	// commands queue). The sender given to New is then unused. Empty: one
	// command per slot to New's sender, as without a region set.
	Regions []Region
	// Locations takes the commands of agent locations
	// (schedule.IsLocation), with or without a region set: agents fetch
	// them through the API, not from a queue. Nil: location slots are not
	// emitted.
	Locations LocationSink
}

// LocationSink holds the commands of agent locations until their agents
// fetch them; *Locations satisfies it.
type LocationSink interface {
	Put(tenant, location string, cmd msg.ProbeCommand)
}

// Region is one region of the deployment's set and where its commands go.
type Region struct {
	Name   string
	Sender CommandSender
}

// Scheduler emits probe commands for due slots. Upsert, Remove and Sync are
// safe to call concurrently with Run and with each other.
type Scheduler struct {
	send    CommandSender
	clock   clock.Clock
	log     *slog.Logger
	metrics *Metrics
	workers int
	// regions and regionNames are Options.Regions (nil: no fan-out).
	regions     map[string]CommandSender
	regionNames []string
	locations   LocationSink

	mu      sync.Mutex
	entries map[string]*entry
	heap    entryHeap
	wake    chan struct{} // buffered(1): the heap's head may have changed
	// gen counts direct changes (Upsert, Remove). A resync whose list was
	// read before a direct change must not undo it: see syncLocked.
	gen uint64
	// removed holds the gen at which an endpoint was last removed directly,
	// until a resync listed after that removal has run.
	removed map[string]uint64
}

type entry struct {
	id       string
	schedule string // normalized source, to detect changes
	slots    schedule.Slots
	next     int64  // Unix seconds of the next slot
	index    int    // in the heap
	shard    uint32 // publishing worker
	version  int64  // store version last applied
	gen      uint64 // Scheduler.gen of the last direct Upsert (0: from a resync)
	// regions is the endpoint's own region choice (model.Endpoint.Regions),
	// replaced, never mutated, so a job may hold it without the lock.
	regions []string
	// tenant owns the endpoint: an agent location is the tenant's own.
	tenant string
}

type job struct {
	id      string
	slot    time.Time
	shard   uint32
	regions []string
	tenant  string
}

// New returns a Scheduler that publishes through send.
func New(send CommandSender, opts Options) *Scheduler {
	if opts.Clock == nil {
		opts.Clock = clock.Real{}
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Concurrency <= 0 {
		opts.Concurrency = 64
	}
	var regions map[string]CommandSender
	var names []string
	for _, r := range opts.Regions {
		if regions == nil {
			regions = map[string]CommandSender{}
		}
		regions[r.Name] = r.Sender
		names = append(names, r.Name)
	}
	return &Scheduler{
		regions:     regions,
		regionNames: names,
		locations:   opts.Locations,
		send:        send,
		clock:       opts.Clock,
		log:         opts.Logger.With("component", "scheduler"),
		metrics:     opts.Metrics,
		workers:     opts.Concurrency,
		entries:     make(map[string]*entry),
		removed:     make(map[string]uint64),
		wake:        make(chan struct{}, 1),
	}
}

// Upsert schedules ep, or re-schedules it when its schedule changed. A paused
// endpoint is removed. An endpoint whose schedule does not parse is removed
// too (it cannot be scheduled as stored) and the error, wrapping
// schedule.ErrInvalidSchedule, is returned.
func (s *Scheduler) Upsert(ep model.Endpoint) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gen++
	err := s.upsertLocked(ep, s.clock.Now(), s.gen)
	s.updateGauge()
	return err
}

// upsertLocked applies ep; gen is the direct-change generation, 0 for a
// resync.
func (s *Scheduler) upsertLocked(ep model.Endpoint, now time.Time, gen uint64) error {
	if e, ok := s.entries[ep.ID]; ok && ep.Version != 0 && ep.Version < e.version {
		return nil // an older copy of the endpoint than the one applied
	}
	if ep.Paused {
		s.unschedule(ep.ID, gen)
		return nil
	}
	src := strings.TrimSpace(ep.Schedule)
	if e, ok := s.entries[ep.ID]; ok && e.schedule == src {
		e.regions, e.tenant = regionChoice(ep.Regions), ep.Tenant
		e.version = max(e.version, ep.Version)
		e.gen = max(e.gen, gen)
		return nil
	}
	// The same placement the aggregator and prober read.
	sl, err := schedule.New(ep.ID, ep.Schedule)
	if err != nil {
		s.unschedule(ep.ID, gen)
		return err
	}
	next := sl.Next(now).Unix()
	if e, ok := s.entries[ep.ID]; ok {
		e.schedule, e.slots, e.next = src, sl, next
		e.regions, e.tenant = regionChoice(ep.Regions), ep.Tenant
		e.version, e.gen = max(e.version, ep.Version), max(e.gen, gen)
		heap.Fix(&s.heap, e.index)
	} else {
		h := fnv.New32a()
		h.Write([]byte(ep.ID))
		e := &entry{id: ep.ID, schedule: src, slots: sl, next: next, shard: h.Sum32() % uint32(s.workers),
			version: ep.Version, gen: gen, regions: regionChoice(ep.Regions), tenant: ep.Tenant}
		s.entries[ep.ID] = e
		heap.Push(&s.heap, e)
	}
	s.poke()
	return nil
}

// Remove stops scheduling endpoint id; unknown IDs are ignored.
func (s *Scheduler) Remove(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gen++
	s.unschedule(id, s.gen)
	s.updateGauge()
}

// unschedule removes id, remembering a direct removal so that a resync
// listed before it does not bring the endpoint back.
func (s *Scheduler) unschedule(id string, gen uint64) {
	if gen != 0 {
		s.removed[id] = gen
	}
	s.removeLocked(id)
}

func (s *Scheduler) removeLocked(id string) {
	e, ok := s.entries[id]
	if !ok {
		return
	}
	heap.Remove(&s.heap, e.index)
	delete(s.entries, id)
	s.poke()
}

// Sync makes the scheduled set equal to eps: new endpoints are added,
// changed ones re-scheduled, missing or paused ones removed; unchanged ones
// keep their next slot. Endpoints with invalid schedules are skipped and
// reported in the joined error; the rest are applied.
//
// Sync treats eps as current: a direct Upsert or Remove that raced with
// reading eps from the store may be undone until the next Sync. SyncEvery
// does not have that race.
func (s *Scheduler) Sync(ctx context.Context, eps []model.Endpoint) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.syncLocked(eps, s.gen)
}

// syncLocked applies a list read from the store when the direct-change
// generation was listedAt. Direct changes made after that are newer than the
// list: an endpoint upserted since is kept even if missing from the list,
// one removed since is not re-added, and a list entry with a lower store
// version than the one applied is ignored (upsertLocked).
func (s *Scheduler) syncLocked(eps []model.Endpoint, listedAt uint64) error {
	now := s.clock.Now()
	seen := make(map[string]struct{}, len(eps))
	var errs []error
	for _, ep := range eps {
		seen[ep.ID] = struct{}{}
		if g, ok := s.removed[ep.ID]; ok && g > listedAt {
			continue
		}
		if err := s.upsertLocked(ep, now, 0); err != nil {
			errs = append(errs, err)
		}
	}
	for id, e := range s.entries {
		if _, ok := seen[id]; !ok && e.gen <= listedAt {
			s.removeLocked(id)
		}
	}
	for id, g := range s.removed {
		if g <= listedAt {
			delete(s.removed, id)
		}
	}
	s.updateGauge()
	return errors.Join(errs...)
}

// EndpointLister is where SyncEvery reads the full endpoint list; every
// store.Store implements it.
type EndpointLister interface {
	ListEndpoints(ctx context.Context) ([]model.Endpoint, error)
}

// SyncEvery calls Sync with src's endpoints now and then every interval
// until ctx is done, so endpoints created, changed or deleted through
// another API replica take effect here within one interval. When src keeps
// an endpoints stamp (EndpointStamper) an unchanged stamp skips the
// listing. A resync reads
// and decodes every endpoint, so a large fleet stretches the interval: the
// wait is at least resyncBudget times what the last resync took (list and
// apply), which keeps the resync under 1/resyncBudget of the time — at
// 100,000 endpoints on bolt a resync takes about 0.45 s, so the interval
// becomes about 90 s instead of 15 s. A failed list
// never clears the schedule: it is logged once and retried after a second,
// doubling up to the interval, so a scheduler started while its store was
// unreachable loads its endpoints soon after the store returns. It returns
// nil when ctx is done.
func (s *Scheduler) SyncEvery(ctx context.Context, src EndpointLister, interval time.Duration) error {
	failures := 0
	stamper, _ := src.(EndpointStamper)
	var (
		synced     bool   // the last listing was applied
		syncedAt   uint64 // the stamp read before it
		syncedGen  uint64 // s.gen when it was read
		lastListed time.Time
	)
	for {
		// With a stamp the store moves on every endpoint write, an
		// unchanged stamp means nothing to resync: the listing (which
		// decodes every endpoint) is skipped. A full listing still runs
		// every staleListing, in case a write path ever forgets the stamp.
		// A direct change since the last listing (an API write here,
		// which moved the stamp) also lists: the same stamp then means the
		// store lost its counters (an emptied Redis counts from 0 again)
		// and came back to the number last seen.
		var stamp uint64
		stampOK := false
		if stamper != nil {
			n, err := stamper.EndpointsStamp(ctx)
			stamp, stampOK = n, err == nil
		}
		s.mu.Lock()
		gen := s.gen
		s.mu.Unlock()
		if stampOK && synced && stamp == syncedAt && gen == syncedGen && s.clock.Now().Sub(lastListed) < staleListing*interval {
			if !clock.Sleep(ctx, interval) {
				return nil
			}
			continue
		}
		s.mu.Lock()
		listedAt := s.gen
		s.mu.Unlock()
		began := s.clock.Now()
		eps, err := src.ListEndpoints(ctx)
		wait := interval
		synced = false
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil:
			if failures == 0 {
				s.log.Warn("listing endpoints for resync failed; keeping the current schedule and retrying", "err", err)
			}
			failures++
			wait = min(time.Second<<min(failures-1, 10), interval)
		default:
			if failures > 0 {
				s.log.Info("endpoints listed again; schedule resynced", "failed_attempts", failures)
				failures = 0
			}
			s.mu.Lock()
			err := s.syncLocked(eps, listedAt)
			s.mu.Unlock()
			if err != nil {
				s.log.Warn("resync skipped endpoints with invalid schedules", "err", err)
			}
			synced, syncedAt, syncedGen, lastListed = stampOK, stamp, listedAt, began
			wait = max(interval, s.clock.Now().Sub(began)*resyncBudget)
		}
		if !clock.Sleep(ctx, wait) {
			return nil
		}
	}
}

// EndpointStamper is the optional capability of an EndpointLister whose
// store counts endpoint writes (bolt, Redis): SyncEvery lists again only
// when the stamp has moved.
type EndpointStamper interface {
	EndpointsStamp(ctx context.Context) (uint64, error)
}

// staleListing bounds, in resync intervals, how long an unchanged stamp
// may stand in for a listing.
const staleListing = 20

// resyncBudget bounds the share of time SyncEvery spends resyncing to
// 1/resyncBudget (0.5 %): an idle process with a large fleet should not
// spend a noticeable share of a core re-reading a list that rarely changes.
// Changes made through this replica's API take effect at once (Upsert,
// Remove) whatever the interval.
const resyncBudget = 200

// Len is the number of scheduled endpoints.
func (s *Scheduler) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.entries)
}

// Next returns endpoint id's next slot.
func (s *Scheduler) Next(id string) (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.entries[id]
	if !ok {
		return time.Time{}, false
	}
	return time.Unix(e.next, 0).UTC(), true
}

func (s *Scheduler) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *Scheduler) updateGauge() {
	if s.metrics != nil {
		s.metrics.endpoints.Set(float64(len(s.entries)))
	}
}

// Run emits commands until ctx is done, then waits for in-flight publishes to
// return and returns nil. Call it once.
func (s *Scheduler) Run(ctx context.Context) error {
	shards := make([]chan job, s.workers)
	var wg sync.WaitGroup
	for i := range shards {
		jobs := make(chan job, 64)
		shards[i] = jobs
		wg.Go(func() {
			for j := range jobs {
				_ = s.publish(ctx, j) // logged by publishTo; the next slot is tried as scheduled
			}
		})
	}
	defer func() {
		for _, jobs := range shards {
			close(jobs)
		}
		wg.Wait()
	}()

	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	var due []job
	var prevNow, prevMono time.Time
	for {
		now := s.clock.Now()
		// A wall clock stepped back since the last turn: every slot is
		// then that much further away by the clock, and the timer (which
		// runs on the monotonic clock) would leave every endpoint
		// unprobed for the step's length.
		mono := time.Now()
		if !prevNow.IsZero() {
			if back := mono.Sub(prevMono) - now.Round(0).Sub(prevNow.Round(0)); back > clockStepTolerance {
				s.steppedBack(now, back)
			}
		}
		prevNow, prevMono = now, mono
		var wait time.Duration
		var skipped int
		due, wait, skipped = s.popDue(now, due[:0])
		if skipped > 0 {
			s.log.Warn("scheduler fell behind; emitting only the latest missed slot of each late endpoint",
				"endpoints", skipped)
		}
		for _, j := range due {
			select {
			case shards[j.shard] <- j:
			case <-ctx.Done():
				return nil
			}
		}
		if len(due) > 0 {
			continue // publishing may have taken a while: look again
		}
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			return nil
		case <-s.wake:
		case <-timer.C:
		}
	}
}

// clockStepTolerance is the least backward step of the wall clock that
// reschedules every endpoint; a smaller one only delays the next slots by
// as much.
const clockStepTolerance = time.Second

// steppedBack reschedules every endpoint for its next slot after now, the
// clock stepped back by back, and says so: the verdict windows decided
// before the step lie ahead of the clock now, and results for windows up
// to them are refused as late (store.ErrWindowDecided), so verdicts resume
// once the clock passes them.
func (s *Scheduler) steppedBack(now time.Time, back time.Duration) {
	s.mu.Lock()
	for _, e := range s.heap {
		// From the start of now's second: a slot in it is due now.
		if next := e.slots.Next(now.Truncate(time.Second).Add(-time.Nanosecond)); !next.IsZero() {
			e.next = next.Unix()
		}
	}
	heap.Init(&s.heap)
	n := len(s.heap)
	s.mu.Unlock()
	s.log.Warn("the wall clock stepped back: every endpoint is rescheduled from the clock's time. Verdict windows decided before the step are not decided again: results for them are refused as late, and verdicts resume once the clock passes them",
		"stepped_back", back.Round(time.Millisecond).String(), "verdicts_resume_about", now.Add(back).UTC().Format(time.RFC3339), "endpoints", n)
}

// idleWait is how long the loop sleeps with nothing scheduled; Upsert wakes it.
const idleWait = time.Hour

// popDue appends the due slot of every endpoint whose next slot is ≤ now,
// advances those endpoints to their following slot, and returns how long to
// wait for the next one and how many endpoints had missed slots skipped.
func (s *Scheduler) popDue(now time.Time, due []job) (_ []job, wait time.Duration, skipped int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	nowSec := now.Unix() // slots are whole seconds: due once that second began
	for len(s.heap) > 0 {
		e := s.heap[0]
		if e.next > nowSec {
			return due, time.Unix(e.next, 0).Sub(now), skipped
		}
		missed := time.Unix(e.next, 0).UTC()
		slot := e.slots.LatestDue(missed, now)
		if !slot.Equal(missed) {
			skipped++
			s.log.Debug("skipping missed slots", "endpoint", e.id, "oldest_missed", missed, "emitting", slot)
		}
		due = append(due, job{id: e.id, slot: slot, shard: e.shard, regions: e.regions, tenant: e.tenant})
		next := e.slots.Next(slot)
		e.next = next.Unix()
		if next.IsZero() {
			// A cron spec with no further date: nothing left to schedule.
			heap.Pop(&s.heap)
			delete(s.entries, e.id)
			s.updateGauge()
			continue
		}
		heap.Fix(&s.heap, 0)
	}
	return due, idleWait, skipped
}

// publish sends j's command: once, or once per due region with a region
// set. The body is the same in every region's queue (content dedup works
// per queue), so a region's copy is deduplicated against that region's
// copies from other schedulers, never against another region's. A region
// whose send fails does not hold back the others: its slot is no_data for
// that region only. An agent location's copy goes to the location sink.
// The error joins every region's failure.
func (s *Scheduler) publish(ctx context.Context, j job) error {
	cmd := msg.NewProbeCommand(j.id, j.slot)
	in := queue.SendInput{GroupID: cmd.GroupID(), Body: cmd.Body()}
	var errs []error
	if s.regions == nil && schedule.Central(j.regions) {
		errs = append(errs, s.publishTo(ctx, s.send, "", j, in))
	}
	for _, r := range schedule.DueRegions(s.regionNames, j.regions) {
		switch {
		case schedule.IsLocation(r):
			s.putLocation(r, j, cmd)
		case s.regions != nil:
			errs = append(errs, s.publishTo(ctx, s.regions[r], r, j, in))
		}
	}
	return errors.Join(errs...)
}

func (s *Scheduler) putLocation(location string, j job, cmd msg.ProbeCommand) {
	if s.locations == nil {
		return
	}
	s.locations.Put(cmp.Or(j.tenant, model.DefaultTenant), location, cmd)
	if s.metrics != nil {
		s.metrics.commands.Inc()
		s.metrics.lag.Observe(s.clock.Now().Sub(j.slot).Seconds())
	}
}

func (s *Scheduler) publishTo(ctx context.Context, send CommandSender, region string, j job, in queue.SendInput) error {
	if _, err := send.Publish(ctx, in); err != nil {
		if ctx.Err() == nil {
			s.log.Warn("publish probe command failed; the endpoint's next slot will be tried as scheduled",
				"endpoint", j.id, "slot", j.slot, "region", region, "err", err)
		}
		return fmt.Errorf("scheduler: publish probe command of %s for %s (region %q): %w", j.id, j.slot.Format(time.RFC3339), region, err)
	}
	if s.metrics != nil {
		s.metrics.commands.Inc()
		s.metrics.lag.Observe(s.clock.Now().Sub(j.slot).Seconds())
	}
	return nil
}

// ProbeNow publishes ep's command for slot (whole seconds) outside its
// schedule, to the queues a scheduled slot of ep goes to: one per due
// region with a region set. The command is an ordinary one, so its run ID
// is the slot's and the prober, aggregator and alerter treat its result
// like a scheduled one; two calls for one slot are one probe, deduplicated
// by the commands queue. A paused endpoint is the caller's to refuse.
func (s *Scheduler) ProbeNow(ctx context.Context, ep model.Endpoint, slot time.Time) error {
	j := job{id: ep.ID, slot: slot.UTC().Truncate(time.Second), regions: regionChoice(ep.Regions)}
	return s.publish(ctx, j)
}

// regionChoice keeps an endpoint's region choice, nil when it chose none
// (every region), so the common case costs no allocation.
func regionChoice(rs []string) []string {
	if len(rs) == 0 {
		return nil
	}
	return slices.Clone(rs)
}

// entryHeap orders entries by next slot.
type entryHeap []*entry

func (h entryHeap) Len() int           { return len(h) }
func (h entryHeap) Less(i, j int) bool { return h[i].next < h[j].next }
func (h entryHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index = i
	h[j].index = j
}
func (h *entryHeap) Push(x any) {
	e := x.(*entry)
	e.index = len(*h)
	*h = append(*h, e)
}
func (h *entryHeap) Pop() any {
	old := *h
	n := len(old)
	e := old[n-1]
	old[n-1] = nil
	e.index = -1
	*h = old[:n-1]
	return e
}
