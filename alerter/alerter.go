// Package alerter owns incidents and their notifications: it turns the
// aggregator's verdicts into incidents (open → acknowledged → resolved) and
// delivers one notification per incident event per sink.
//
// Data enters through Handle, the queue.Handler for the verdicts queue. Each
// verdict is folded into the endpoint's Tracker (compare-and-set in the
// store); a state change writes the incident and a pending notification to
// the tracker's outbox in the same transaction. The outbox is then drained
// through the dispatch pipeline — maintenance → ledger claim → send with
// retry → ledger done → delivery record — and data leaves through the
// alert.Sinks (and, for the API, the store's delivery records). Run sweeps
// outboxes that no verdict drains (a maintenance window ending, a crash after
// the state change, a sink that came back).
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
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mcpmon/mcpmon/pkg/alert"
	"github.com/mcpmon/mcpmon/pkg/clock"
	"github.com/mcpmon/mcpmon/pkg/msg"
	"github.com/mcpmon/mcpmon/pkg/queue"
	"github.com/mcpmon/mcpmon/pkg/store"
)

// OutboxKind is the store.Objects kind of the outbox index: one (empty)
// object per endpoint whose tracker may hold pending notifications, so the
// sweep visits only those. It is written before the tracker and deleted
// after the outbox is empty, so it is always a superset of the truth.
const OutboxKind = "alerter-outbox"

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
	GetTracker(ctx context.Context, endpointID string) (store.Tracker, error)
	SaveTracker(ctx context.Context, t store.Tracker, incidents ...store.Incident) error
	GetIncident(ctx context.Context, id string) (store.Incident, error)
	ListIncidents(ctx context.Context, f store.IncidentFilter) ([]store.Incident, error)
	GetEndpoint(ctx context.Context, id string) (store.Endpoint, error)
	Ledger
	DeliveryRecorder
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
	// sinks from store.Endpoint.Sinks plus the global ones).
	SinksFor func(ctx context.Context, ep store.Endpoint) ([]alert.Sink, error)
	// Rules override the package defaults for every endpoint; an endpoint's
	// own store.Rules override these.
	Rules  store.Rules
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
}

// Alerter folds verdicts into incidents and dispatches their notifications.
// Any number of Alerters (goroutines, replicas) may share one store.
type Alerter struct {
	opts   Options
	st     Store
	clk    clock.Clock
	log    *slog.Logger
	m      *Metrics
	fanout func(sinks []alert.Sink) FanoutStage
	rec    recorder

	// hook is a fault-injection point for the crash tests: called at
	// "received", "applied", "claimed", "sent", "marked" and "settled"; an error
	// aborts processing as a crash would.
	hook  func(point string) error
	sleep func(ctx context.Context, d time.Duration) error

	// drainLocks serialise drains of one endpoint inside this process. The
	// sweep and a queue handler may drain the same outbox at once, and with
	// one Owner the ledger would let both claims through (a live claim is
	// re-acquired by its owner); across processes the ledger separates them.
	drainLocks [64]sync.Mutex
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
		sleep: sleepCtx,
	}
	a.rec = recorder{st: a.st, log: a.log}
	for _, s := range opts.Sinks {
		a.m.sink(alert.MetricLabel(s))
	}
	unmarked := newKeySet()
	a.fanout = func(sinks []alert.Sink) FanoutStage {
		return FanoutStage{Sinks: sinks, Pipeline: recordStage{recorder: a.rec, next: ledgerStage{
			ledger: a.st, owner: a.opts.Owner, lease: a.opts.Lease, m: a.m, now: a.clk.Now, hook: a.fault, unmarked: unmarked,
			next: retryStage{
				attempts: a.opts.RetryAttempts, budget: a.opts.RetryBudget,
				initial: a.opts.BackoffInitial, limit: a.opts.BackoffMax, sendTimeout: a.opts.SendTimeout,
				now: a.clk.Now, sleep: func(ctx context.Context, d time.Duration) error { return a.sleep(ctx, d) },
			},
		}}}
	}
	return a, nil
}

func (a *Alerter) fault(point string) error { return a.hook(point) }

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
	case errors.As(err, new(drainError)) && !errors.Is(err, ErrClaimHeld) && !errors.Is(err, store.ErrUnavailable) && !errors.Is(err, errInjectedCrash):
		if errors.Is(err, ErrDelivery) {
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
		if !errors.Is(err, errInjectedCrash) {
			a.log.Warn("verdict left for redelivery", "endpoint", v.EndpointID, "window", v.Window, "receive_count", m.ReceiveCount, "err", err)
		}
		return err
	}
	return nil
}

// process folds v and drains its endpoint's outbox.
func (a *Alerter) process(ctx context.Context, v msg.Verdict) error {
	if err := a.apply(ctx, v); err != nil {
		return err
	}
	if err := a.hook("applied"); err != nil {
		return err
	}
	// A stale verdict drains too: it may be the redelivery of one whose
	// state change was saved before a crash left its notification pending.
	if err := a.drain(ctx, v.EndpointID, false); err != nil {
		return drainError{err}
	}
	return nil
}

// drainError marks a failure after the verdict was folded: what is left
// waits in the outbox, which every later drain and the sweep retry.
type drainError struct{ error }

func (e drainError) Unwrap() error { return e.error }

// endpoint loads the endpoint; a deleted one yields ok=false.
func (a *Alerter) endpoint(ctx context.Context, id string) (store.Endpoint, bool, error) {
	ep, err := a.st.GetEndpoint(ctx, id)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return store.Endpoint{ID: id}, false, nil
	case err != nil:
		return store.Endpoint{}, false, fmt.Errorf("alerter: endpoint %s: %w", id, err)
	}
	return ep, true, nil
}

// apply folds v into the endpoint's tracker, compare-and-set, retrying on
// conflicts with other replicas or the API.
func (a *Alerter) apply(ctx context.Context, v msg.Verdict) error {
	ep, ok, err := a.endpoint(ctx, v.EndpointID)
	if err != nil {
		return err
	}
	if !ok {
		a.log.Info("verdict for an unknown endpoint ignored", "endpoint", v.EndpointID, "window", v.Window)
		return nil
	}
	r := effectiveRules(a.opts.Rules, ep.Rules)
	for range maxCASAttempts {
		t, err := a.st.GetTracker(ctx, v.EndpointID)
		if err != nil {
			return fmt.Errorf("alerter: tracker of endpoint %s: %w", v.EndpointID, err)
		}
		if t.Version > 0 && !v.Window.After(t.LastWindow) {
			a.log.Debug("stale verdict: state unchanged", "endpoint", v.EndpointID, "window", v.Window, "last", t.LastWindow)
			return nil
		}
		t.EndpointID = v.EndpointID
		d, err := decodeData[trackerData](t.Data, "tracker "+v.EndpointID)
		if err != nil {
			return err
		}
		var cur *store.Incident
		if t.OpenIncidentID != "" {
			inc, err := a.st.GetIncident(ctx, t.OpenIncidentID)
			switch {
			case errors.Is(err, store.ErrNotFound):
				t.OpenIncidentID = ""
			case err != nil:
				return fmt.Errorf("alerter: incident %s: %w", t.OpenIncidentID, err)
			case inc.State == store.IncidentResolved:
				t.OpenIncidentID = "" // resolved elsewhere (API): start afresh
			default:
				cur = &inc
			}
		}
		ackSeen := false
		now := a.clk.Now().UTC()
		opened, resolved := fold(&t, &d, v, r)
		var (
			incs  []store.Incident
			event string
		)
		switch {
		case opened:
			id := msg.IncidentID(v.EndpointID, v.Window)
			if _, err := a.st.GetIncident(ctx, id); err == nil {
				// Already opened by this very verdict (tracker rebuilt or lost):
				// its notification exists; just point at it again.
				t.OpenIncidentID = id
				break
			} else if !errors.Is(err, store.ErrNotFound) {
				return fmt.Errorf("alerter: incident %s: %w", id, err)
			}
			downs := 0
			for _, s := range t.Recent {
				if s == msg.StateDown {
					downs++
				}
			}
			incs = append(incs, store.Incident{
				ID: id, EndpointID: v.EndpointID, State: store.IncidentOpen,
				OpenedWindow: v.Window.UTC(), OpenedAt: now,
				FirstFailure: firstFailure(t, d, v.Window.UTC()),
				Class:        v.Class, Reason: v.Reason,
				Transitions: []store.Transition{{At: now, To: store.IncidentOpen,
					Reason: fmt.Sprintf("%d of the last %d windows down; window %s: %s", downs, len(t.Recent), v.Window.UTC().Format(time.RFC3339), cmpOr(v.Reason, v.Class))}},
			})
			t.OpenIncidentID = id
			d.Outbox = append(d.Outbox, pending{IncidentID: id, Kind: string(alert.KindOpen), CreatedAt: now, VerdictEmittedAt: v.EmittedAt})
			event = "opened"
		case resolved && cur != nil:
			inc := *cur
			w := v.Window.UTC()
			inc.Transitions = append(inc.Transitions, store.Transition{At: now, From: inc.State, To: store.IncidentResolved,
				Reason: fmt.Sprintf("%d consecutive up windows; window %s", t.ConsecutiveUp, w.Format(time.RFC3339))})
			inc.State, inc.ResolvedWindow, inc.ResolvedAt = store.IncidentResolved, &w, &now
			incs = append(incs, inc)
			t.OpenIncidentID, t.Recent, t.ConsecutiveUp, d.Windows = "", nil, 0, nil
			d.Outbox = append(d.Outbox, pending{IncidentID: inc.ID, Kind: string(alert.KindResolve), CreatedAt: now, VerdictEmittedAt: v.EmittedAt})
			event = "resolved"
		case cur != nil && cur.State == store.IncidentAcknowledged:
			// The API acknowledges; the alerter counts it once, on the next
			// verdict, in the same compare-and-set as the tracker.
			idata, err := decodeData[incidentData](cur.Data, "incident "+cur.ID)
			if err != nil {
				return err
			}
			if !idata.AckCounted {
				idata.AckCounted, ackSeen = true, true
				inc := *cur
				inc.Data = encodeData(idata)
				incs = append(incs, inc)
			}
		case cur != nil && cur.State == store.IncidentOpen && r.repeat > 0:
			// Reminders ride on verdicts, which keep coming every window
			// while the endpoint is probed: no timer to lose.
			idata, err := decodeData[incidentData](cur.Data, "incident "+cur.ID)
			if err != nil {
				return err
			}
			due := idata.OpenNotified && !idata.NotifiedAt.IsZero() && !now.Before(idata.NotifiedAt.Add(r.repeat))
			if due && !slices.ContainsFunc(d.Outbox, func(p pending) bool { return p.IncidentID == cur.ID }) {
				idata.Reminders++
				inc := *cur
				inc.Data = encodeData(idata)
				incs = append(incs, inc)
				d.Outbox = append(d.Outbox, pending{IncidentID: cur.ID, Kind: reminderKind(idata.Reminders), Seq: idata.Reminders, CreatedAt: now, VerdictEmittedAt: v.EmittedAt})
			}
		}
		t.Data = encodeData(d)
		if len(incs) > 0 && len(d.Outbox) > 0 {
			if err := a.st.PutObject(ctx, OutboxKind, v.EndpointID, []byte("{}")); err != nil {
				return fmt.Errorf("alerter: outbox index of endpoint %s: %w", v.EndpointID, err)
			}
		}
		err = a.st.SaveTracker(ctx, t, incs...)
		if errors.Is(err, store.ErrConflict) {
			continue
		}
		if err != nil {
			return fmt.Errorf("alerter: save tracker of endpoint %s (window %s): %w", v.EndpointID, v.Window.Format(time.RFC3339), err)
		}
		if ackSeen {
			a.m.Incidents.WithLabelValues("acknowledged").Inc()
		}
		if event != "" {
			a.m.Incidents.WithLabelValues(event).Inc()
			a.log.Info("incident "+event, "endpoint", v.EndpointID, "incident", incs[0].ID, "window", v.Window, "class", v.Class)
		}
		return nil
	}
	return fmt.Errorf("alerter: tracker of endpoint %s kept changing: %w", v.EndpointID, store.ErrConflict)
}

type action int

const (
	actSend action = iota
	actDefer
	actDrop
)

// gate is the maintenance/silence stage for one pending notification.
// openLeft: the incident's open is still pending for some sinks; a resolve
// then goes to the sinks that have the open (the drain holds it back from
// the others) instead of being dropped as never notified.
func gate(p pending, inc store.Incident, idata incidentData, active, openLeft bool) (action, string) {
	switch p.Kind {
	case string(alert.KindOpen):
		if active {
			return actDefer, "maintenance"
		}
		if p.Deferred && inc.State == store.IncidentResolved {
			return actDrop, "opened and resolved during maintenance"
		}
		return actSend, ""
	case string(alert.KindResolve):
		if !idata.OpenNotified && !openLeft {
			return actDrop, "open was never notified"
		}
		if active {
			return actDefer, "maintenance"
		}
		return actSend, ""
	default:
		if active {
			return actDrop, "maintenance"
		}
		if inc.State != store.IncidentOpen {
			return actDrop, "incident " + string(inc.State)
		}
		return actSend, ""
	}
}

// maintenanceEnd reports whether a maintenance window silences ep at now,
// and when the last of the active ones ends.
func (a *Alerter) maintenanceEnd(ctx context.Context, ep store.Endpoint, now time.Time) (bool, time.Time, error) {
	docs, err := a.st.ListObjects(ctx, alert.MaintenanceKind)
	if err != nil {
		return false, time.Time{}, fmt.Errorf("alerter: list maintenance windows: %w", err)
	}
	ref := alert.EndpointRef{ID: ep.ID, Labels: ep.Labels}
	var (
		active bool
		end    time.Time
	)
	for id, doc := range docs {
		mw, err := alert.DecodeMaintenance(doc)
		if err != nil {
			a.log.Warn("unreadable maintenance window skipped", "maintenance", id, "err", err)
			continue
		}
		if !mw.Matches(ref) {
			continue
		}
		if _, e, ok := mw.Window(now); ok {
			active = true
			end = maxTime(end, e)
		}
	}
	return active, end, nil
}

// drain delivers the endpoint's pending notifications in order. Order is
// kept per sink: a sink that has not taken a notification (failing, or its
// claim held by another replica) gets none of the later ones in this drain,
// so an open never trails its resolve, while the other sinks carry on — one
// broken sink must not silence the rest. A maintenance deferral stops the
// drain for every sink.
func (a *Alerter) drain(ctx context.Context, endpointID string, sweep bool) error {
	mu := &a.drainLocks[fnv32(endpointID)%uint32(len(a.drainLocks))]
	mu.Lock()
	defer mu.Unlock()
	t, err := a.st.GetTracker(ctx, endpointID)
	if err != nil {
		return fmt.Errorf("alerter: tracker of endpoint %s: %w", endpointID, err)
	}
	d, err := decodeData[trackerData](t.Data, "tracker "+endpointID)
	if err != nil {
		return err
	}
	if len(d.Outbox) == 0 {
		if sweep {
			return a.dropIndex(ctx, endpointID)
		}
		return nil
	}
	if !sweep {
		// apply writes the index before the tracker, but a sweep elsewhere
		// may have dropped it in between (it saw the outbox still empty).
		// Restore it now that the outbox is visibly non-empty, so what this
		// drain leaves behind (deferred by maintenance, a failing sink) is
		// swept even if no further verdict comes.
		if err := a.st.PutObject(ctx, OutboxKind, endpointID, []byte("{}")); err != nil {
			return fmt.Errorf("alerter: outbox index of endpoint %s: %w", endpointID, err)
		}
	}
	ep, _, err := a.endpoint(ctx, endpointID)
	if err != nil {
		return err
	}
	sinks := a.opts.Sinks
	if a.opts.SinksFor != nil {
		if sinks, err = a.opts.SinksFor(ctx, ep); err != nil {
			return fmt.Errorf("alerter: sinks of endpoint %s: %w", endpointID, err)
		}
	}
	// One delivery per sink name: the name is the ledger key's last part,
	// and two sinks sharing it would share one claim (same owner: both sent).
	sinks = slices.CompactFunc(slices.SortedStableFunc(slices.Values(sinks), func(x, y alert.Sink) int {
		return strings.Compare(x.Name(), y.Name())
	}), func(x, y alert.Sink) bool { return x.Name() == y.Name() })
	var (
		errs     []error
		blocked  = map[string]bool{} // sinks that did not take an earlier notification
		openLeft = map[string]bool{} // incidents whose open stays pending for some sink
	)
	for _, p := range d.Outbox {
		inc, err := a.st.GetIncident(ctx, p.IncidentID)
		if errors.Is(err, store.ErrNotFound) {
			a.log.Warn("pending notification for a missing incident dropped", "incident", p.IncidentID, "kind", p.Kind)
			if err := a.rewrite(ctx, endpointID, p, nil, nil); err != nil {
				return err
			}
			continue
		}
		if err != nil {
			return fmt.Errorf("alerter: incident %s: %w", p.IncidentID, err)
		}
		idata, err := decodeData[incidentData](inc.Data, "incident "+inc.ID)
		if err != nil {
			return err
		}
		now := a.clk.Now().UTC()
		active, end, err := a.maintenanceEnd(ctx, ep, now)
		if err != nil {
			return err
		}
		act, why := gate(p, inc, idata, active, openLeft[p.IncidentID])
		switch act {
		case actDefer:
			if !p.Deferred || !p.DeferredUntil.Equal(end) {
				if !p.Deferred {
					for _, s := range sinks {
						a.m.alert(alert.MetricLabel(s), p.alertKind(), OutcomeSuppressed)
					}
					a.rec.muted(ctx, p, sinks)
				}
				q := p
				q.Deferred, q.DeferredUntil = true, end
				if err := a.rewrite(ctx, endpointID, p, &q, nil); err != nil {
					return err
				}
				a.log.Info("notification deferred by maintenance", "incident", p.IncidentID, "kind", p.Kind, "until", end)
			}
			// Later notifications of this endpoint fall in the same window.
			return errors.Join(errs...)
		case actDrop:
			for _, s := range sinks {
				a.m.alert(alert.MetricLabel(s), p.alertKind(), OutcomeSuppressed)
			}
			a.log.Info("notification dropped", "incident", p.IncidentID, "kind", p.Kind, "reason", why)
			if active || p.Deferred {
				a.rec.muted(ctx, p, sinks)
			}
			err := a.rewrite(ctx, endpointID, p, nil, func(_ *store.Incident, id *incidentData) {
				if p.Kind == string(alert.KindOpen) {
					id.OpenSuppressed = true
				} else {
					id.NotifiedAt = now
				}
			})
			if err != nil {
				return err
			}
			continue
		}

		var targets []alert.Sink
		for _, s := range sinks {
			if !blocked[s.Name()] {
				targets = append(targets, s)
			}
		}
		if len(targets) < len(sinks) && p.Kind == string(alert.KindOpen) {
			openLeft[p.IncidentID] = true
		}
		if len(targets) == 0 {
			continue
		}
		n := notification(ep, inc, p)
		ds := a.fanout(targets).execAll(ctx, n, func(sink string) string {
			return msg.LedgerKey(endpointID, inc.ID, p.Kind, sink)
		})
		var perr []error
		for _, dl := range ds {
			switch {
			case dl.Err == nil:
				a.m.alert(alert.MetricLabel(dl.Sink), n.Kind, dl.Outcome)
				if dl.Outcome == OutcomeSent && !p.VerdictEmittedAt.IsZero() {
					a.m.VerdictToAlert.Observe(a.clk.Now().Sub(p.VerdictEmittedAt).Seconds())
				}
			case errors.Is(dl.Err, errInjectedCrash):
				return dl.Err
			case errors.Is(dl.Err, ErrClaimHeld):
				blocked[dl.Sink.Name()] = true
				perr = append(perr, dl.Err)
			default:
				if errors.Is(dl.Err, ErrDelivery) {
					a.m.alert(alert.MetricLabel(dl.Sink), n.Kind, OutcomeFailed)
				}
				a.log.Warn("notification not delivered; it stays in the outbox for the next drain", "sink", dl.Sink.Name(), "incident", inc.ID, "kind", p.Kind, "err", redact(dl.Err))
				blocked[dl.Sink.Name()] = true
				perr = append(perr, redactedError{msg: redact(dl.Err), err: dl.Err})
			}
		}
		if len(perr) > 0 {
			if p.Kind == string(alert.KindOpen) {
				openLeft[p.IncidentID] = true
			}
			q := p
			q.Attempts++
			q.LastError = truncate(redact(errors.Join(perr...)), 512)
			if rerr := a.rewrite(ctx, endpointID, p, &q, nil); rerr != nil {
				a.log.Debug("record delivery attempt", "err", rerr)
			}
			errs = append(errs, fmt.Errorf("alerter: %s notification of incident %s: %w", p.Kind, inc.ID, errors.Join(perr...)))
			continue
		}
		if len(targets) < len(sinks) {
			// Delivered to the sinks not held back; the rest get it once
			// they have taken what precedes it.
			continue
		}
		err = a.rewrite(ctx, endpointID, p, nil, func(_ *store.Incident, id *incidentData) {
			switch p.alertKind() {
			case alert.KindOpen:
				id.OpenNotified, id.NotifiedAt = true, now
			case alert.KindReminder:
				id.NotifiedAt = now
			}
		})
		if err != nil {
			return err
		}
		if err := a.hook("settled"); err != nil {
			return err
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	return a.dropIndex(ctx, endpointID)
}

// dropIndex removes the endpoint's outbox index entry if its outbox is
// empty. It re-reads the tracker after the delete: a concurrent apply that
// wrote the index and then a pending notification in between gets its
// index entry back.
func (a *Alerter) dropIndex(ctx context.Context, endpointID string) error {
	if err := a.st.DeleteObject(ctx, OutboxKind, endpointID); err != nil && !errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("alerter: drop outbox index of endpoint %s: %w", endpointID, err)
	}
	t, err := a.st.GetTracker(ctx, endpointID)
	if err != nil {
		return fmt.Errorf("alerter: tracker of endpoint %s: %w", endpointID, err)
	}
	if d, err := decodeData[trackerData](t.Data, "tracker "+endpointID); err == nil && len(d.Outbox) > 0 {
		return a.st.PutObject(ctx, OutboxKind, endpointID, []byte("{}"))
	}
	return nil
}

// rewrite replaces (q != nil) or removes (q == nil) pending notification p in
// the endpoint's outbox and applies mut to its incident's data, in one
// compare-and-set. A p already gone (settled by another replica) is a no-op.
func (a *Alerter) rewrite(ctx context.Context, endpointID string, p pending, q *pending, mut func(*store.Incident, *incidentData)) error {
	for range maxCASAttempts {
		t, err := a.st.GetTracker(ctx, endpointID)
		if err != nil {
			return fmt.Errorf("alerter: tracker of endpoint %s: %w", endpointID, err)
		}
		d, err := decodeData[trackerData](t.Data, "tracker "+endpointID)
		if err != nil {
			return err
		}
		i := slices.IndexFunc(d.Outbox, p.same)
		if i < 0 {
			return nil
		}
		if q != nil {
			d.Outbox[i] = *q
		} else {
			d.Outbox = slices.Delete(d.Outbox, i, i+1)
		}
		t.Data = encodeData(d)
		var incs []store.Incident
		if mut != nil {
			inc, err := a.st.GetIncident(ctx, p.IncidentID)
			switch {
			case err == nil:
				idata, err := decodeData[incidentData](inc.Data, "incident "+inc.ID)
				if err != nil {
					return err
				}
				mut(&inc, &idata)
				inc.Data = encodeData(idata)
				incs = append(incs, inc)
			case !errors.Is(err, store.ErrNotFound):
				return fmt.Errorf("alerter: incident %s: %w", p.IncidentID, err)
			}
		}
		err = a.st.SaveTracker(ctx, t, incs...)
		if errors.Is(err, store.ErrConflict) {
			continue
		}
		if err != nil {
			return fmt.Errorf("alerter: save outbox of endpoint %s: %w", endpointID, err)
		}
		return nil
	}
	return fmt.Errorf("alerter: outbox of endpoint %s kept changing: %w", endpointID, store.ErrConflict)
}

// notification builds what the sinks receive.
func notification(ep store.Endpoint, inc store.Incident, p pending) alert.Notification {
	state := string(inc.State)
	switch p.alertKind() {
	case alert.KindOpen:
		state = string(store.IncidentOpen)
	case alert.KindResolve:
		state = string(store.IncidentResolved)
	}
	return alert.Notification{
		Kind:         p.alertKind(),
		EndpointID:   inc.EndpointID,
		EndpointName: ep.Name,
		EndpointURL:  safeURL(ep.URL),
		Labels:       ep.Labels,
		IncidentID:   inc.ID,
		State:        state,
		Class:        inc.Class,
		Reason:       inc.Reason,
		FirstFailure: inc.FirstFailure,
		OpenedAt:     inc.OpenedAt,
		ResolvedAt:   inc.ResolvedAt,
		Sequence:     p.Seq,
	}
}

// Run sweeps every SweepInterval until ctx is done.
func (a *Alerter) Run(ctx context.Context) error {
	t := time.NewTicker(a.opts.SweepInterval)
	defer t.Stop()
	for {
		switch err := a.Sweep(ctx); {
		case err == nil || ctx.Err() != nil:
		case errors.Is(err, store.ErrUnavailable):
			// The store logs its outage once; the next sweep retries.
			a.log.Debug("sweep waits for the store", "err", err)
		default:
			a.log.Warn("sweep", "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Sweep drains every outbox the index lists (deferred notifications whose
// maintenance ended, notifications a crash left behind, sinks that came
// back) and refreshes the open-incidents gauge. It is Run's body, exported
// for tests and one-shot runners.
func (a *Alerter) Sweep(ctx context.Context) error {
	ids, err := a.st.ListObjects(ctx, OutboxKind)
	if err != nil {
		return fmt.Errorf("alerter: list outbox index: %w", err)
	}
	var errs []error
	for id := range ids {
		if err := a.drain(ctx, id, true); err != nil {
			if errors.Is(err, ErrClaimHeld) {
				a.log.Debug("sweep: claim held elsewhere", "endpoint", id)
				continue
			}
			errs = append(errs, err)
		}
	}
	open := 0
	for _, s := range []store.IncidentState{store.IncidentOpen, store.IncidentAcknowledged} {
		incs, err := a.st.ListIncidents(ctx, store.IncidentFilter{State: s})
		if err != nil {
			errs = append(errs, fmt.Errorf("alerter: list %s incidents: %w", s, err))
			break
		}
		open += len(incs)
	}
	if len(errs) == 0 {
		a.m.IncidentsOpen.Set(float64(open))
	}
	return errors.Join(errs...)
}

// safeURL drops userinfo, query and fragment: they may carry credentials.
func safeURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	u.User, u.RawQuery, u.Fragment, u.RawFragment = nil, "", "", ""
	return u.String()
}

// redact renders err without the URL a *url.Error carries: a sink's URL
// (Slack webhook, PagerDuty relay) is itself a secret.
func redact(err error) string {
	s := err.Error()
	if ue, ok := errors.AsType[*url.Error](err); ok && ue.URL != "" {
		s = strings.ReplaceAll(s, ue.URL, "<redacted-url>")
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

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

func fnv32(s string) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(s); i++ {
		h ^= uint32(s[i])
		h *= 16777619
	}
	return h
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
