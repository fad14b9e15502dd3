package prober

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/mcpmon/mcpmon/pkg/clock"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/msg"
	"github.com/mcpmon/mcpmon/pkg/queue"
	"github.com/mcpmon/mcpmon/pkg/schedule"
	"github.com/mcpmon/mcpmon/pkg/store"
)

// EndpointSource loads an endpoint; store.Endpoints satisfies it.
type EndpointSource interface {
	GetEndpoint(ctx context.Context, id string) (model.Endpoint, error)
}

// ResultPublisher sends a result to the results queue; *queue.Publisher
// satisfies it.
type ResultPublisher interface {
	Publish(ctx context.Context, in queue.SendInput) (string, error)
}

// LatestResultStore keeps each endpoint's latest result: the previous one
// tells the probe which era to try first and whether the protocol version
// changed. store.Results satisfies it.
type LatestResultStore interface {
	LatestResult(ctx context.Context, endpointID string) (msg.ProbeResult, error)
	PutLatestResult(ctx context.Context, r msg.ProbeResult) error
}

// WorkerOptions configure a Worker.
type WorkerOptions struct {
	// Latest is optional: without it there are no version-change events and
	// every auto probe starts with server/discover.
	Latest  LatestResultStore
	Logger  *slog.Logger
	Metrics *WorkerMetrics // optional
	// Clock tells whether a command's slot has been superseded. Default: real.
	Clock clock.Clock
	// Canary, when set, marks the results published while the prober is
	// blind (canary.go); nil: every result is sighted.
	Canary BlindnessSource
	// KeepConformance publishes results with their conformance: for a
	// publisher whose receiver stores the latest result from the body (an
	// agent posting to the API). Otherwise a set Latest is the
	// conformance's home and the results message leaves it out
	// (msg.ProbeResult.WithoutConformance).
	KeepConformance bool
	// Slots is how many commands the worker is handed at once (the
	// consumer's concurrency, --probe-concurrency): with more than one,
	// a tenant holds at most its share of them while they are contended
	// (share.go). 0 or 1: no limit (an agent probes for one tenant).
	Slots int
}

// BlindnessSource says whether the prober is blind; *Canary satisfies it.
type BlindnessSource interface {
	Blind() (since time.Time, blind bool)
	Settle(ctx context.Context, after time.Time) (since time.Time, blind bool)
	SettleBound() time.Duration
}

// WorkerMetrics count the commands a worker skipped instead of probing.
type WorkerMetrics struct {
	skipped *prometheus.CounterVec
}

// Reasons a command is skipped.
const (
	// SkipSuperseded: the endpoint's next slot was already due when the
	// command was received, so a probe for it would report on a moment
	// that has passed and delay the probe that is current.
	SkipSuperseded = "superseded"
	// SkipTenantShare (share.go): probe slots were contended and the
	// command's tenant held its share of them.
)

// NewWorkerMetrics registers the worker's metrics with reg.
func NewWorkerMetrics(reg prometheus.Registerer) *WorkerMetrics {
	m := &WorkerMetrics{skipped: promauto.With(reg).NewCounterVec(prometheus.CounterOpts{
		Namespace: "mcpmon", Name: "probe_commands_skipped_total",
		Help: "Probe commands dropped without probing, by reason (superseded: a newer slot of the endpoint was already due; tenant_share: probe slots were contended and the endpoint's tenant held its share of them).",
	}, []string{"reason"})}
	m.skipped.WithLabelValues(SkipSuperseded)
	m.skipped.WithLabelValues(SkipTenantShare)
	return m
}

func (m *WorkerMetrics) skip(reason string) {
	if m != nil {
		m.skipped.WithLabelValues(reason).Inc()
	}
}

// Worker turns commands from the commands queue into results on the results
// queue.
type Worker struct {
	p         *Prober
	endpoints EndpointSource
	pub       ResultPublisher
	latest    LatestResultStore
	log       *slog.Logger
	m         *WorkerMetrics
	clk       clock.Clock
	known     knownEndpoints
	canary    BlindnessSource
	keepConf  bool
	share     *tenantShare // share.go; nil: no limit
}

// NewWorker returns a Worker.
func NewWorker(p *Prober, endpoints EndpointSource, pub ResultPublisher, opts WorkerOptions) *Worker {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Clock == nil {
		opts.Clock = clock.Real{}
	}
	w := &Worker{p: p, endpoints: endpoints, pub: pub, latest: opts.Latest, m: opts.Metrics, clk: opts.Clock,
		canary: opts.Canary, keepConf: opts.KeepConformance, log: opts.Logger.With("component", "prober-worker")}
	if opts.Slots > 1 {
		w.share = newTenantShare(opts.Slots, opts.Clock, w.log)
	}
	return w
}

// Superseded reports whether the slot of a command received at now has been
// overtaken by the endpoint's next slot: a probe in flight, a killed
// replica's visibility timeout or a store outage left the command queued
// past the moment it was meant to observe. Probing it would report on a
// moment that has passed, too late for its window, and delay the probe of
// the current slot; the next slot's command is queued behind it.
func Superseded(sl schedule.Slots, slot, now time.Time) bool {
	next := sl.Next(slot)
	return !next.IsZero() && !next.After(now)
}

// ProbeDeadline is when the probe of slot must end: slot + timeout, so a hung
// target reports at a fixed time after its slot however late the command
// was received, and the probe ends before the next slot (the API keeps the
// timeout within the schedule's interval). A command received late still
// gets half its timeout, so a slow but healthy target is not called hung
// because the queue was slow.
func ProbeDeadline(slot, receivedAt time.Time, timeout time.Duration) time.Time {
	return later(slot.Add(timeout), receivedAt.Add(timeout/2))
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// Handle is a queue.Handler for the commands queue. It returns nil when the
// command is done (probed and published, or its endpoint deleted) and an
// error to leave it for redelivery. A redelivered command probes again and
// publishes under the same dedup ID (<endpointId>-<probeRunId>, the run ID
// derived from the command), so the results queue drops the duplicate.
func (w *Worker) Handle(ctx context.Context, m queue.Message) error {
	var cmd msg.ProbeCommand
	if err := msg.Decode(m.Body, &cmd); err != nil {
		return fmt.Errorf("prober: command message %s: %w", m.ID, err)
	}
	ep, err := w.endpoint(ctx, cmd.EndpointID)
	if errors.Is(err, model.ErrNotFound) {
		w.log.Info("endpoint deleted; dropping probe command", "endpoint", cmd.EndpointID, "slot", cmd.Slot)
		return nil
	}
	if err != nil {
		return fmt.Errorf("prober: load endpoint %s: %w", cmd.EndpointID, err)
	}
	if ep.Paused {
		w.log.Debug("endpoint paused; dropping probe command", "endpoint", ep.ID, "slot", cmd.Slot)
		return nil
	}
	now := w.clk.Now()
	if sl, err := schedule.New(ep.ID, ep.Schedule); err == nil && Superseded(sl, cmd.Slot, now) {
		w.m.skip(SkipSuperseded)
		w.log.Debug("slot superseded by a newer one; skipping its probe", "endpoint", ep.ID, "slot", cmd.Slot)
		return nil
	}
	release, ok := w.share.acquire(ep.Tenant, cmd.Slot)
	if !ok {
		w.m.skip(SkipTenantShare)
		w.log.Debug("probe slots contended and the tenant holds its share; skipping the probe", "endpoint", ep.ID, "slot", cmd.Slot)
		return nil
	}
	defer release()
	pctx, cancel := context.WithDeadline(ctx, ProbeDeadline(cmd.Slot, now, w.p.timeoutOf(ep)))
	res, mem := w.p.Run(pctx, ep, cmd, w.previous(ctx, ep.ID, cmd.Slot))
	cancel()
	if err := ctx.Err(); err != nil {
		// Shutting down mid-probe: the outcome says nothing about the
		// endpoint. Leave the command for redelivery.
		return fmt.Errorf("prober: probe of %s interrupted: %w", ep.ID, err)
	}
	w.markBlind(ctx, &res)
	return w.publish(ctx, res, mem)
}

// markBlind marks res blind while the prober is blind. A result that
// failed the way a broken local network fails waits (at most SettleBound)
// for the canaries' word first: blindness takes BlindAfter failed rounds
// to establish, and the results of those seconds would otherwise reach
// the aggregator as down and page every owner at once.
func (w *Worker) markBlind(ctx context.Context, res *msg.ProbeResult) {
	if w.canary == nil {
		return
	}
	since, blind := w.canary.Blind()
	if !blind && res.Status == msg.StatusDown && NetworkClass(res.Class) {
		sctx, cancel := context.WithTimeout(ctx, w.canary.SettleBound())
		since, blind = w.canary.Settle(sctx, res.FinishedAt)
		cancel()
	}
	if blind {
		res.Blind, res.BlindSince = true, since.UTC()
	}
}

// NetworkClass reports whether a failure of class could be the prober's
// own network failing (no answer at all), as opposed to a target that
// answered wrongly.
func NetworkClass(class string) bool {
	switch class {
	case ClassTimeout, ClassRefused, ClassDNS, ClassTLS, ClassNetwork:
		return true
	}
	return false
}

// endpoint loads the endpoint of a command. While the store is unavailable
// it answers from the copy last loaded, so probing goes on through a store
// outage (nobody can change an endpoint meanwhile: the API needs the store
// too) and the results wait in the results queue instead of never being
// taken; an outage then costs no down windows of an outage that overlaps it.
func (w *Worker) endpoint(ctx context.Context, id string) (model.Endpoint, error) {
	ep, err := w.endpoints.GetEndpoint(ctx, id)
	switch {
	case err == nil:
		w.known.put(ep, w.clk.Now())
	case errors.Is(err, model.ErrNotFound):
		w.known.drop(id)
	case errors.Is(err, store.ErrUnavailable):
		if cached, ok := w.known.get(id); ok {
			w.log.Debug("store unavailable; probing with the endpoint as last loaded", "endpoint", id)
			return cached, nil
		}
	}
	return ep, err
}

// previous is the endpoint's latest stored result if it is older than slot,
// else nil (probing without history).
func (w *Worker) previous(ctx context.Context, id string, slot time.Time) *msg.ProbeResult {
	if w.latest == nil {
		return nil
	}
	pr, err := w.latest.LatestResult(ctx, id)
	switch {
	case err == nil && pr.Slot.Before(slot):
		return &pr
	case err != nil && !errors.Is(err, model.ErrNotFound):
		w.storeFailed("read latest result failed; probing without history", id, err)
	}
	return nil
}

// publish stores the latest result, publishes it, then stores what the
// probe learnt. The latest result is stored before publishing so the API
// shows it no later than the aggregator sees it (a redelivery overwrites
// it); the memory only after, so a failed publish cannot make the
// redelivered probe find its change already remembered. A failure of either
// store write costs the API a stale view or a repeated event at the next
// probe, never a lost result.
func (w *Worker) publish(ctx context.Context, res msg.ProbeResult, mem Memory) error {
	if w.latest != nil {
		if err := w.latest.PutLatestResult(ctx, res); err != nil {
			w.storeFailed("store latest result failed", res.EndpointID, err)
		}
	}
	sent := res
	if w.latest != nil && !w.keepConf {
		sent = res.WithoutConformance() // stored just above with it
	}
	if _, err := queue.SendValue(ctx, w.pub, res.GroupID(), res.DedupID(), sent, sent.Body); err != nil {
		return fmt.Errorf("prober: publish result %s: %w", res.DedupID(), err)
	}
	// Detached: the result is out, so a shutdown now must not cost the
	// memory that goes with it (the next probe would repeat its events).
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), rememberTimeout)
	defer cancel()
	if err := w.p.Remember(rctx, mem); err != nil {
		w.storeFailed("remember catalog and server identity failed; the next probe may report the same change again", res.EndpointID, err)
	}
	return nil
}

// rememberTimeout bounds the store writes after a publish.
const rememberTimeout = 5 * time.Second

// storeFailed logs a failed best-effort store operation: at debug while the
// store is unavailable (the store logs its outage once), else a warning.
func (w *Worker) storeFailed(what, endpointID string, err error) {
	lvl := slog.LevelWarn
	if errors.Is(err, store.ErrUnavailable) {
		lvl = slog.LevelDebug
	}
	w.log.Log(context.Background(), lvl, what, "endpoint", endpointID, "err", err)
}

// knownEndpoints keeps the endpoints a worker loaded last, for store
// outages. Entries not refreshed for knownTTL are swept now and then, so
// endpoints deleted while no command came for them do not stay forever.
type knownEndpoints struct {
	mu   sync.Mutex
	m    map[string]knownEndpoint
	puts int
}

type knownEndpoint struct {
	ep     model.Endpoint
	loaded time.Time
}

const knownTTL = time.Hour

func (k *knownEndpoints) put(ep model.Endpoint, now time.Time) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.m == nil {
		k.m = map[string]knownEndpoint{}
	}
	k.m[ep.ID] = knownEndpoint{ep: ep, loaded: now}
	if k.puts++; k.puts%1024 == 0 {
		for id, e := range k.m {
			if now.Sub(e.loaded) > knownTTL {
				delete(k.m, id)
			}
		}
	}
}

func (k *knownEndpoints) get(id string) (model.Endpoint, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	e, ok := k.m[id]
	return e.ep, ok
}

func (k *knownEndpoints) drop(id string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	delete(k.m, id)
}

// Run consumes the commands queue until ctx is done.
func (w *Worker) Run(ctx context.Context, q queue.Queue, opts queue.ConsumerOptions) error {
	if opts.Logger == nil {
		opts.Logger = w.log
	}
	return queue.Consume(ctx, q, w.Handle, opts)
}
