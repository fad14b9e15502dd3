// Package alerter owns incidents and their notifications: it turns the
// aggregator's verdicts into incidents (open → acknowledged → resolved) and
// delivers one notification per incident event per sink.
//
// Data enters through Handle, the queue.Handler for the verdicts queue. Each
// verdict's transition is decided by a pure function (transition, in
// tracker.go) and written in one compare-and-set of the endpoint's Tracker:
// the incident and the notifications it owes go into the tracker's outbox in
// the same transaction, and the store lists the outbox as pending and the
// incident as open in it too. The outbox (outbox.go) is then drained: the
// maintenance stage (maintenance.go: gate decides, mute writes) sends,
// defers or drops each notification, and what it sends goes through the
// notify pipeline (alerter/notify: fan-out → record → ledger claim → send
// with retry → ledger done) out to the alert.Sinks and, for the API, the
// store's delivery records. Change events (events.go) take the same notify
// pipeline without the maintenance and record stages. Run sweeps the
// outboxes the store lists as pending that no verdict drains (a
// maintenance window ending, a crash after the state change, a sink that
// came back). docs/design/architecture.md draws the stages.
//
// Once-only rests on three things: verdicts older than the tracker's last
// window never change state; a notification exists durably before it is
// sent; and the ledger key msg.LedgerKey(endpoint, incident, kind, sink) is
// claimed before and marked done after each send.
//
// # The one duplicate window
//
// Every crash point is covered (TestCrashAtEveryStep) except one: a crash,
// or a lost store connection, after a sink accepted a notification and
// before the ledger marked its key done. The claim then lapses with its
// lease (Options.Lease, default 2m) and the next redelivery or sweep sends
// again, with the same Notification.Key and IncidentID. PagerDuty
// (dedup_key) and Opsgenie (alias) collapse the repeat; Slack, email and a
// plain webhook (unless the receiver dedups on the key) show it twice. The
// window is one store round trip (~1 ms on bolt, one RTT on Redis) per
// notification, and it only opens when the process dies or the store
// becomes unreachable inside it. A sink call cut off by a timeout after the
// receiver got the request is the same ambiguity and resolves the same way.
//
// # Rules
//
// Defaults: open after 2 of the last 3 windows are down (a steady outage
// opens on its second down window; down-up-down opens once), resolve after
// 2 consecutive up windows. Degraded and regional windows count as neither
// down nor up; no_data is not folded. A verdict whose window is not after
// the tracker's last window never changes state.
package alerter

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/mcpmon/mcpmon/alerter/notify"
	"github.com/mcpmon/mcpmon/pkg/alert"
	"github.com/mcpmon/mcpmon/pkg/clock"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/msg"
	"github.com/mcpmon/mcpmon/pkg/queue"
	"github.com/mcpmon/mcpmon/pkg/store"
)

// Defaults.
const (
	DefaultLease          = 2 * time.Minute
	DefaultRetryAttempts  = 4
	DefaultRetryBudget    = 30 * time.Second
	DefaultBackoffInitial = time.Second
	DefaultBackoffMax     = 10 * time.Second
	DefaultSendTimeout    = 10 * time.Second
	DefaultSweepInterval  = 30 * time.Second
	maxCASAttempts        = 20
)

// Store is what the alerter needs from pkg/store.
type Store interface {
	GetTracker(ctx context.Context, endpointID string) (model.Tracker, error)
	SaveTracker(ctx context.Context, t model.Tracker, incidents ...model.Incident) error
	GetIncident(ctx context.Context, id string) (model.Incident, error)
	// PendingOutboxes and CountOpenIncidents read the indexes SaveTracker
	// keeps: the sweep's cost follows what is pending and open, not the
	// deployment's age.
	PendingOutboxes(ctx context.Context) ([]string, error)
	CountOpenIncidents(ctx context.Context) (int, error)
	GetEndpoint(ctx context.Context, id string) (model.Endpoint, error)
	notify.Ledger
	notify.Recorder
	// The endpoint's tenant's maintenance windows, decoded once per change
	// of its stamp (store.Windows).
	store.WindowSource
	// The groups of grouping sinks (group.go), kind store.KindAlertGroup.
	GetObject(ctx context.Context, kind, id string) ([]byte, error)
	PutObject(ctx context.Context, kind, id string, doc []byte) error
	ListObjects(ctx context.Context, kind string) (map[string][]byte, error)
	DeleteObject(ctx context.Context, kind, id string) error
}

// Options configure an Alerter. Store is required.
type Options struct {
	Store Store
	// Sinks receive every endpoint's notifications unless SinksFor is set.
	Sinks []alert.Sink
	// SinksFor, when set, picks the sinks for one endpoint (per-endpoint
	// sinks from model.Endpoint.Sinks plus the global ones).
	SinksFor func(ctx context.Context, ep model.Endpoint) ([]alert.Sink, error)
	// Rules override the package defaults for every endpoint; an endpoint's
	// own model.Rules override these.
	Rules  model.Rules
	Clock  clock.Clock
	Logger *slog.Logger
	// Metrics (nil: unregistered).
	Metrics *Metrics
	// Owner identifies this replica in ledger claims (default
	// hostname-pid). A restarted alerter with the same Owner re-takes its
	// own live claims at once instead of waiting out the lease.
	Owner string
	// Lease is how long a ledger claim is held before another replica may
	// take it over (default 2m). RetryBudget plus SendTimeout is capped at
	// half of it (SendTimeout at a quarter) so a live sender never loses its
	// claim mid-delivery.
	Lease time.Duration
	// RetryAttempts and RetryBudget bound one sink delivery: at most this
	// many calls within this much time (defaults 4 and 30s); past them the
	// claim is released and the notification left in the outbox for the sweep.
	RetryAttempts  int
	RetryBudget    time.Duration
	BackoffInitial time.Duration // default 1s, doubled per attempt, full jitter
	BackoffMax     time.Duration // default 10s
	SendTimeout    time.Duration // per sink call, default 10s
	// SweepInterval is how often Run drains outboxes (default 30s): the
	// latency of a maintenance window's deferred alert after its end.
	SweepInterval time.Duration
	// GiveUpAfter is how long a sink may keep failing one notification
	// (incident or change event) before the alerter gives up on it for
	// that sink (default 24h); until then later drains retry it with
	// backoff (notify.Redelivery).
	GiveUpAfter time.Duration
	// Subscribers, when set, is told of the incident events owed to status
	// page subscribers (subscribers.go); nil: none are sent.
	Subscribers SubscriberNotifier
	// AgentOfflineAfter is how long an agent may go without a poll before
	// its tenant is told it is offline (agents.go; default
	// model.DefaultAgentOfflineAfter).
	AgentOfflineAfter time.Duration
}

// Alerter folds verdicts into incidents and dispatches their notifications.
// Any number of Alerters (goroutines, replicas) may share one store.
type Alerter struct {
	opts Options
	st   Store
	clk  clock.Clock
	log  *slog.Logger
	m    *Metrics
	rec  notify.Records
	// incidents and events are the notify pipelines (buildPipelines): one
	// builder, with the record stage for incidents only.
	incidents, events *notify.Pipeline

	// hook is a fault-injection point for the crash tests: called at
	// "received", "applied", "adopted" (update notices taken into the
	// outbox), "claimed", "sent", "marked" and "settled"; an
	// error wrapping notify.ErrCrash aborts processing as a crash would.
	hook  func(point string) error
	sleep func(ctx context.Context, d time.Duration) error
	// redeliver decides when a failing sink is called again; jitter
	// places each wait inside its range.
	redeliver notify.Redelivery
	jitter    func() float64
	// eventRetries is the redelivery state of change events (guarded by
	// eventsMu), keyed by ledger key.
	eventRetries map[string]notify.RetryState

	// drainLocks serialise drains of one endpoint inside this process. The
	// sweep and a queue handler may drain the same outbox at once, and with
	// one Owner the ledger would let both claims through (a live claim is
	// re-acquired by its owner); across processes the ledger separates them.
	drainLocks [64]sync.Mutex
	// eventsMu serialises NotifyEvents in this process: with one Owner the
	// ledger would let two concurrent claims of a key through.
	eventsMu sync.Mutex
	// agentsMu serialises NotifyAgents in this process, for the same
	// reason; agentSeries are the agent_online series it set (agents.go).
	agentsMu    sync.Mutex
	agentSeries map[[2]string]bool
	// subsMu serialises NotifySubscribers in this process, for the same
	// reason; subRetries is its redelivery state, keyed by ledger key.
	subsMu     sync.Mutex
	subRetries map[string]notify.RetryState
	subSweep   subscriberSweep // the last full walk (subscribers.go)
	subs       *notify.Pipeline
	// windows are the maintenance windows the gate reads (outbox.go).
	windows *store.Windows
	// groups are the in-process locks and wake-up of grouping (group.go).
	groups groupState
}

// New returns an Alerter.
func New(opts Options) (*Alerter, error) {
	if opts.Store == nil {
		return nil, errors.New("alerter: Options.Store is required")
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
	if opts.Owner == "" {
		host, _ := os.Hostname()
		opts.Owner = fmt.Sprintf("%s-%d", cmpOr(host, "alerter"), os.Getpid())
	}
	if opts.Lease <= 0 {
		opts.Lease = DefaultLease
	}
	if opts.RetryAttempts <= 0 {
		opts.RetryAttempts = DefaultRetryAttempts
	}
	if opts.RetryBudget <= 0 {
		opts.RetryBudget = DefaultRetryBudget
	}
	if opts.BackoffInitial <= 0 {
		opts.BackoffInitial = DefaultBackoffInitial
	}
	if opts.BackoffMax <= 0 {
		opts.BackoffMax = DefaultBackoffMax
	}
	if opts.SendTimeout <= 0 {
		opts.SendTimeout = DefaultSendTimeout
	}
	if opts.SweepInterval <= 0 {
		opts.SweepInterval = DefaultSweepInterval
	}
	// A delivery must end well inside its claim's lease, or another replica
	// takes the claim over mid-retry and both send. Its worst case is the
	// whole retry budget followed by a call that uses the whole send
	// timeout, so the two together get half the lease; the other half
	// absorbs store round trips and clock skew between replicas.
	opts.SendTimeout = min(opts.SendTimeout, opts.Lease/4)
	opts.RetryBudget = min(opts.RetryBudget, opts.Lease/2-opts.SendTimeout)
	a := &Alerter{
		opts:  opts,
		st:    opts.Store,
		clk:   opts.Clock,
		log:   opts.Logger.With("component", "alerter"),
		m:     opts.Metrics,
		hook:  func(string) error { return nil },
		sleep: notify.SleepCtx,

		redeliver:    notify.NewRedelivery(opts.GiveUpAfter),
		jitter:       rand.Float64,
		eventRetries: map[string]notify.RetryState{},
		subRetries:   map[string]notify.RetryState{},
	}
	a.groups.wake = make(chan struct{}, 1)
	a.rec = notify.Records{Store: a.st, Log: a.log}
	a.windows = store.NewWindows(a.st, a.log)
	for _, s := range opts.Sinks {
		a.m.sink(alert.MetricLabel(s))
	}
	a.buildPipelines()
	return a, nil
}

// buildPipelines builds the incident, change-event and subscriber pipelines from the
// options and the alerter's current clock, sleep, redelivery rule and hook
// (tests replace those after New, then build again).
func (a *Alerter) buildPipelines() {
	c := notify.Config{
		Ledger: a.st, Owner: a.opts.Owner, Lease: a.opts.Lease,
		Attempts: a.opts.RetryAttempts, Budget: a.opts.RetryBudget,
		BackoffInitial: a.opts.BackoffInitial, BackoffMax: a.opts.BackoffMax, SendTimeout: a.opts.SendTimeout,
		Redelivery: a.redeliver,
		Jitter:     func() float64 { return a.jitter() },
		Clock:      a.clk,
		Sleep:      func(ctx context.Context, d time.Duration) error { return a.sleep(ctx, d) },
		Redact:     redact,
		Metrics:    notify.Metrics{LedgerClaims: a.m.LedgerClaims, UnmarkedSeconds: a.m.UnmarkedSeconds},
		Hook:       func(point string) error { return a.hook(point) },
	}
	a.events = notify.New(c)
	// A subscriber notice gets one attempt a walk: the walk's redelivery
	// backoff retries it, and a receiver that holds every request to the
	// timeout costs the walk one SendTimeout per notice, not a retry
	// budget (subscriberWalkTime).
	sc := c
	sc.Attempts = 1
	a.subs = notify.New(sc)
	c.Records = &a.rec
	a.incidents = notify.New(c)
}

// Handle processes one verdicts-queue message: fold the verdict, then drain
// the endpoint's outbox. It returns nil (delete the message) once the
// verdict is folded and every notification it caused or found pending is
// delivered, deferred by maintenance, dropped — or failed at a sink past
// its retry budget: that notification stays in the outbox, which the sweep
// retries, and holding the verdict back would only block the verdicts
// queued behind it in the endpoint's FIFO group (received with it on every
// attempt, they would follow it to the DLQ unapplied). A store outage is
// returned as store.ErrUnavailable, which the consumer treats as transient
// (queue.ConsumerOptions.Transient): it retries the message in place, kept
// in flight by the heartbeat, so an outage of any length does not send the
// verdicts to the DLQ unapplied. Any other error leaves the message for
// redelivery (a claim held by another replica) and, after maxReceiveCount,
// for the DLQ. Any other failure
// after the verdict is folded (a sink, the endpoint's sink configuration)
// leaves the work to the outbox in the same way.
func (a *Alerter) Handle(ctx context.Context, m queue.Message) error {
	if err := a.hook("received"); err != nil {
		return err
	}
	var v msg.Verdict
	if err := msg.Decode(m.Body, &v); err != nil {
		return fmt.Errorf("alerter: verdict message %s (dedup %s): %w", m.ID, m.DedupID, err)
	}
	if v.EndpointID == "" {
		return fmt.Errorf("alerter: verdict message %s: missing endpointId", m.ID)
	}
	err := a.process(ctx, v)
	switch {
	case errors.As(err, new(drainError)) && !errors.Is(err, notify.ErrClaimHeld) && !errors.Is(err, store.ErrUnavailable) && !errors.Is(err, notify.ErrCrash):
		if errors.Is(err, notify.ErrDelivery) {
			// drain logged each sink's failure.
			a.log.Debug("verdict folded; undelivered notifications stay in the outbox for the sweep", "endpoint", v.EndpointID, "window", v.Window)
		} else {
			a.log.Warn("verdict folded; its notifications stay in the outbox for the sweep", "endpoint", v.EndpointID, "window", v.Window, "err", err)
		}
		return nil
	case errors.Is(err, store.ErrUnavailable):
		// The consumer holds the message in flight and retries it
		// (queue.ConsumerOptions.Transient), logging the outage once.
		return err
	case err != nil:
		// The message stays queued; past maxReceiveCount it moves to the DLQ
		// and the notification stays in the outbox for the sweep.
		if !errors.Is(err, notify.ErrCrash) {
			a.log.Warn("verdict left for redelivery", "endpoint", v.EndpointID, "window", v.Window, "receive_count", m.ReceiveCount, "err", err)
		}
		return err
	}
	return nil
}

// process folds v and drains its endpoint's outbox.
func (a *Alerter) process(ctx context.Context, v msg.Verdict) error {
	owes, err := a.apply(ctx, v)
	if err != nil {
		return err
	}
	if err := a.hook("applied"); err != nil {
		return err
	}
	// A stale verdict drains too: it may be the redelivery of one whose
	// state change was saved before a crash left its notification pending
	// (apply then reads a tracker that owes it). A tracker that owes
	// nothing is not read again for a drain: a notification queued since
	// is listed as pending by the write that queued it (Tracker.Pending),
	// and the sweep or the next verdict drains it.
	if !owes {
		return nil
	}
	if err := a.drain(ctx, v.EndpointID); err != nil {
		return drainError{err}
	}
	return nil
}

// drainError marks a failure after the verdict was folded: what is left
// waits in the outbox, which every later drain and the sweep retry.
type drainError struct{ error }

func (e drainError) Unwrap() error { return e.error }

// endpoint loads the endpoint; a deleted one yields ok=false.
func (a *Alerter) endpoint(ctx context.Context, id string) (model.Endpoint, bool, error) {
	ep, err := a.st.GetEndpoint(ctx, id)
	switch {
	case errors.Is(err, model.ErrNotFound):
		return model.Endpoint{ID: id}, false, nil
	case err != nil:
		return model.Endpoint{}, false, fmt.Errorf("alerter: endpoint %s: %w", id, err)
	}
	return ep, true, nil
}

// apply folds v into the endpoint's tracker: it reads the tracker and its
// incident, decides with transition, and writes the result in one
// compare-and-set, retrying on conflicts with other replicas or the API.
// A verdict that changes nothing a later decision reads (a steady up on a
// quiet endpoint: tracker.go's unchanged) writes nothing.
//
// The tracker, its incidents and the notifications the change owes (the
// outbox) are one SaveTracker, which also lists the outbox as pending and
// the incident as open. A crash before it changes nothing: the redelivered
// verdict decides again. A crash after it leaves the notifications durable
// for the drain, the redelivery or the sweep. Metrics and the log line come
// after the write, so a conflict or a crash never counts an event twice.
//
// owes reports whether the tracker, as apply last read or wrote it, holds
// notifications to drain (Pending > 0); for an endpoint apply does not know
// it is true, so the drain looks.
func (a *Alerter) apply(ctx context.Context, v msg.Verdict) (owes bool, err error) {
	ep, ok, err := a.endpoint(ctx, v.EndpointID)
	if err != nil {
		return false, err
	}
	if !ok {
		a.log.Info("verdict for an unknown endpoint ignored", "endpoint", v.EndpointID, "window", v.Window)
		return true, nil
	}
	r := effectiveRules(a.opts.Rules, ep.Rules)
	for range maxCASAttempts {
		in, err := a.transitionInput(ctx, v, r)
		if err != nil {
			return false, err
		}
		in.Tenant = model.TenantOf(ep.Tenant)
		if in.Tracker.Version > 0 && !v.Window.After(in.Tracker.LastWindow) {
			a.log.Debug("stale verdict: state unchanged", "endpoint", v.EndpointID, "window", v.Window, "last", in.Tracker.LastWindow)
			return in.Tracker.Pending > 0, nil
		}
		out, err := a.decide(ctx, in)
		if err != nil {
			return false, err
		}
		if out.Unchanged {
			return in.Tracker.Pending > 0, nil // nothing to write (transition's unchanged)
		}
		err = a.st.SaveTracker(ctx, out.Tracker, out.Incidents...)
		if errors.Is(err, store.ErrConflict) {
			continue
		}
		if err != nil {
			return false, fmt.Errorf("alerter: save tracker of endpoint %s (window %s): %w", v.EndpointID, v.Window.Format(time.RFC3339), err)
		}
		if out.Acknowledged {
			a.m.Incidents.WithLabelValues(eventAcknowledged).Inc()
		}
		if out.Event != "" {
			a.m.Incidents.WithLabelValues(out.Event).Inc()
			a.log.Info("incident "+out.Event, "endpoint", v.EndpointID, "incident", out.Incidents[0].ID, "window", v.Window, "class", v.Class)
		}
		if out.RegionalEvent != "" {
			a.log.Info("regional incident "+out.RegionalEvent, "endpoint", v.EndpointID, "incident", out.Incidents[len(out.Incidents)-1].ID, "window", v.Window, "regions", v.FailingRegions)
		}
		return out.Tracker.Pending > 0, nil
	}
	return false, fmt.Errorf("alerter: tracker of endpoint %s kept changing: %w", v.EndpointID, store.ErrConflict)
}

// transitionInput reads what v's transition is decided from: the tracker
// and the incident it points at.
func (a *Alerter) transitionInput(ctx context.Context, v msg.Verdict, r rules) (transitionInput, error) {
	in := transitionInput{Verdict: v, Rules: r, Now: a.clk.Now()}
	var err error
	if in.Tracker, err = a.st.GetTracker(ctx, v.EndpointID); err != nil {
		return in, fmt.Errorf("alerter: tracker of endpoint %s: %w", v.EndpointID, err)
	}
	if id := in.Tracker.OpenIncidentID; id != "" {
		inc, err := a.st.GetIncident(ctx, id)
		switch {
		case err == nil:
			in.Open = &inc
		case !errors.Is(err, model.ErrNotFound):
			return in, fmt.Errorf("alerter: incident %s: %w", id, err)
		}
	}
	return in, a.regionalInput(ctx, &in)
}

// decide runs transition. An incident it opens is looked up first: if it
// is already stored (the tracker that opened it was lost), the transition
// is decided again knowing that, so nothing is opened or notified twice.
func (a *Alerter) decide(ctx context.Context, in transitionInput) (transitionResult, error) {
	out, err := transition(in)
	if err != nil || (out.Event != eventOpened && out.RegionalEvent != eventOpened) {
		return out, err
	}
	stored := func(id string) (bool, error) {
		switch _, err := a.st.GetIncident(ctx, id); {
		case errors.Is(err, model.ErrNotFound):
			return false, nil
		case err != nil:
			return false, fmt.Errorf("alerter: incident %s: %w", id, err)
		}
		return true, nil
	}
	again := false
	if out.Event == eventOpened {
		if in.AlreadyOpened, err = stored(out.Incidents[0].ID); err != nil {
			return out, err
		}
		again = in.AlreadyOpened
	}
	if out.RegionalEvent == eventOpened {
		if in.RegionalAlreadyOpened, err = stored(out.Incidents[len(out.Incidents)-1].ID); err != nil {
			return out, err
		}
		again = again || in.RegionalAlreadyOpened
	}
	if !again {
		return out, nil
	}
	return transition(in)
}

// safeURL is ep's URL as notifications show it: credentials hidden by the
// one rule the API also applies (model.RedactURL).
func safeURL(raw string) string { return model.RedactURL(raw) }

// redact renders err without the URL a *url.Error carries: a sink's URL
// (Slack webhook, PagerDuty relay) is itself a secret, so it is shown as a
// model.SecretURL (scheme and host).
func redact(err error) string {
	s := err.Error()
	if ue, ok := errors.AsType[*url.Error](err); ok && ue.URL != "" {
		s = strings.ReplaceAll(s, ue.URL, model.SecretURL(ue.URL).String())
	}
	return s
}

// redactedError keeps an error's identity (errors.Is) while printing it
// without URLs.
type redactedError struct {
	msg string
	err error
}

func (e redactedError) Error() string { return e.msg }
func (e redactedError) Unwrap() error { return e.err }

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
