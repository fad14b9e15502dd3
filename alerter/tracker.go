package alerter

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/mcpmon/mcpmon/alerter/notify"
	"github.com/mcpmon/mcpmon/pkg/alert"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/msg"
)

// Default rules: open after 2 of the last 3 windows are down, so a steady
// outage opens on its second down verdict (the "2 consecutive" of the
// foundation issue) and a flapping endpoint (down, up, down) opens once;
// resolve after 2 consecutive up windows.
const (
	DefaultOpenAfter    = 2
	DefaultOpenWindow   = 3
	DefaultResolveAfter = 2
)

// rules are the effective, defaulted model.Rules for one endpoint.
type rules struct {
	openAfter, openWindow, resolveAfter int
	repeat                              time.Duration
}

func effectiveRules(global model.Rules, ep *model.Rules) rules {
	r := rules{openAfter: DefaultOpenAfter, openWindow: DefaultOpenWindow, resolveAfter: DefaultResolveAfter}
	for _, src := range []*model.Rules{&global, ep} {
		if src == nil {
			continue
		}
		if src.OpenAfter > 0 {
			r.openAfter = src.OpenAfter
		}
		if src.OpenWindow > 0 {
			r.openWindow = src.OpenWindow
		}
		if src.ResolveAfter > 0 {
			r.resolveAfter = src.ResolveAfter
		}
		if src.RepeatInterval > 0 {
			r.repeat = src.RepeatInterval
		}
	}
	r.openWindow = max(r.openWindow, r.openAfter)
	return r
}

// pending is one notification in a tracker's outbox: written in the same
// SaveTracker transaction as the state change that caused it, removed in a
// later one after every sink has it (or it is dropped). Because it is
// durable before any send, a crash anywhere between the state change and
// the sink's answer leaves work that the redelivered verdict or the sweep
// finishes; the ledger makes finishing it twice harmless.
type pending struct {
	IncidentID string `json:"incidentId"`
	// Kind is open, resolve, reminder-N or update-N (the ledger kind).
	Kind      string    `json:"kind"`
	Seq       int       `json:"seq,omitempty"` // reminder or update number
	CreatedAt time.Time `json:"createdAt"`
	// VerdictEmittedAt feeds pipeline_delay_seconds{stage="verdict_to_alert"}.
	VerdictEmittedAt time.Time `json:"verdictEmittedAt,omitzero"`
	// DeferredUntil is set while a maintenance window holds the
	// notification back; Deferred stays true once it has been.
	Deferred      bool      `json:"deferred,omitempty"`
	DeferredUntil time.Time `json:"deferredUntil,omitzero"`
	Attempts      int       `json:"attempts,omitempty"`
	LastError     string    `json:"lastError,omitempty"`
	// GaveUp are the sinks that failed this notification permanently
	// (alert.ErrPermanent: the receiver refused it, or the SSRF guard
	// refused the receiver's address). They are not tried again for it: the
	// failure is recorded once on the incident, and the notification leaves
	// the outbox once every other sink has it.
	GaveUp []string `json:"gaveUp,omitempty"`
	// Retry is each failing sink's redelivery state (notify.Redelivery): when
	// it may be called again for this notification, and since when it
	// fails.
	Retry map[string]notify.RetryState `json:"retry,omitempty"`
}

func (p pending) same(o pending) bool { return p.IncidentID == o.IncidentID && p.Kind == o.Kind }

func (p pending) alertKind() alert.Kind {
	switch p.Kind {
	case string(alert.KindOpen):
		return alert.KindOpen
	case string(alert.KindResolve):
		return alert.KindResolve
	}
	if isUpdateKind(p.Kind) {
		return alert.KindUpdate
	}
	return alert.KindReminder
}

func reminderKind(n int) string { return notify.ReminderKind(n) }

// trackerData is the alerter-private part of model.Tracker.
type trackerData struct {
	// Windows parallels Tracker.Recent: the window of each folded verdict,
	// so an incident knows its first failure.
	Windows []time.Time `json:"windows,omitempty"`
	Outbox  []pending   `json:"outbox,omitempty"`
	// Regional is the regional incident's fold (regional.go).
	Regional *regionalTrack `json:"regional,omitempty"`
}

// incidentData is the alerter-private part of model.Incident.
type incidentData struct {
	// OpenNotified: the open notification reached every sink; only then is a
	// resolve sent (an incident nobody heard of is not resolved to anyone).
	OpenNotified bool `json:"openNotified,omitempty"`
	// OpenSuppressed: opened and resolved inside a maintenance window.
	OpenSuppressed bool `json:"openSuppressed,omitempty"`
	// NotifiedAt is when the open or the last reminder was settled; the next
	// reminder is due RepeatInterval after it.
	NotifiedAt time.Time `json:"notifiedAt,omitzero"`
	Reminders  int       `json:"reminders,omitempty"`
	// AckCounted: incidents_total{event="acknowledged"} counted this ack.
	AckCounted bool `json:"ackCounted,omitempty"`
}

// setTrackerData stores d in t, with the outbox's size and the update
// notices not yet taken into it in t.Pending: the store lists the endpoint
// as pending from it, in the same transaction.
func setTrackerData(t *model.Tracker, d trackerData) {
	t.Data = encodeData(d)
	t.Pending = len(d.Outbox) + len(t.Notices)
}

func decodeData[T any](raw json.RawMessage, what string) (T, error) {
	var v T
	if len(raw) == 0 {
		return v, nil
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return v, fmt.Errorf("decode %s data: %w", what, err)
	}
	return v, nil
}

func encodeData(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("alerter: encode %T: %v", v, err)) // plain structs: unreachable
	}
	return b
}

// fold applies verdict v to tracker t (and its data d) under rules r. It
// returns the incident opened, or whether the open one resolves. It does
// not check staleness; the caller rejects v.Window <= t.LastWindow first.
//
// Verdict states count as follows: down counts toward opening; up counts
// toward resolving; degraded and regional count as neither (they keep an
// incident open and break a run of ups, but never open one); no_data is not
// folded at all, so a sparse schedule cannot dilute N of M.
func fold(t *model.Tracker, d *trackerData, v msg.Verdict, r rules) (open bool, resolve bool) {
	t.LastWindow = v.Window.UTC()
	if v.State == msg.StateNoData {
		return false, false
	}
	t.Recent = append(t.Recent, v.State)
	d.Windows = append(d.Windows, v.Window.UTC())
	if n := len(t.Recent) - r.openWindow; n > 0 {
		t.Recent = slices.Clone(t.Recent[n:])
		if len(d.Windows) >= n {
			d.Windows = slices.Clone(d.Windows[n:])
		}
	}
	t.ConsecutiveUp = upRun(t.ConsecutiveUp, v.State)
	return incidentRule(t.Recent, t.ConsecutiveUp, t.OpenIncidentID != "", v.State, msg.StateDown, r)
}

// upRun is the run of up windows after a verdict in state st.
func upRun(run int, st msg.State) int {
	if st == msg.StateUp {
		return run + 1
	}
	return 0
}

// incidentRule is the rule both incident kinds follow, over a fold's
// recent states (newest last, at most openWindow): with none open, open
// when the verdict is failing and at least openAfter recent states are;
// with one open, resolve after resolveAfter up windows in a row.
func incidentRule(recent []msg.State, upRun int, isOpen bool, st, failing msg.State, r rules) (open, resolve bool) {
	if isOpen {
		return false, upRun >= r.resolveAfter
	}
	n := 0
	for _, s := range recent {
		if s == failing {
			n++
		}
	}
	return st == failing && n >= r.openAfter, false
}

// firstFailure is the window of the earliest down verdict still folded.
func firstFailure(t model.Tracker, d trackerData, fallback time.Time) time.Time {
	for i, s := range t.Recent {
		if s == msg.StateDown && i < len(d.Windows) {
			return d.Windows[i]
		}
	}
	return fallback
}

// Incident events, the values of incidents_total's event label.
const (
	eventOpened       = "opened"
	eventResolved     = "resolved"
	eventAcknowledged = "acknowledged"
)

// transitionInput is what a verdict's transition is decided from: the
// stored tracker and the incident it points at, the verdict, the rules and
// the time.
type transitionInput struct {
	Tracker model.Tracker
	// Open is the incident the tracker points at as stored, nil if it points
	// at none or at one that no longer exists.
	Open *model.Incident
	// AlreadyOpened: the incident this verdict would open is already stored
	// (the tracker that opened it was lost or rebuilt). Its notification
	// exists; the tracker just points at it again.
	AlreadyOpened bool
	Verdict       msg.Verdict
	Rules         rules
	Now           time.Time
	// Tenant is the endpoint's; an incident opened carries it, so it stays
	// its tenant's in the API after the endpoint is deleted.
	Tenant string
	// RegionalOpen and RegionalAlreadyOpened are Open and AlreadyOpened
	// for the regional incident (regional.go).
	RegionalOpen          *model.Incident
	RegionalAlreadyOpened bool
}

// transitionResult is a verdict's transition: everything one SaveTracker
// writes, and what to count once it is written.
type transitionResult struct {
	// Tracker is the folded tracker, its outbox (Data) holding Owed at the
	// end and its Pending count set.
	Tracker model.Tracker
	// Incidents are the incidents to write with the tracker (opened,
	// resolved, or with alerter data updated).
	Incidents []model.Incident
	// Owed are the notifications the transition adds to the outbox.
	Owed []pending
	// Event is eventOpened, eventResolved or "" (incidents_total).
	Event string
	// Acknowledged: an API acknowledgement seen for the first time, counted
	// once (incidents_total{event="acknowledged"}).
	Acknowledged bool
	// RegionalEvent is Event for the regional incident, whose incident
	// (if any) follows the global one's in Incidents.
	RegionalEvent string
	// Unchanged: nothing a later decision reads changed (see unchanged),
	// so there is nothing to write.
	Unchanged bool
}

// transition decides what verdict v does to its endpoint's tracker and
// incident: a pure function of its input, so every rule is a table test and
// apply only reads, writes and counts. It does not check staleness; the
// caller rejects v.Window <= t.LastWindow first.
func transition(in transitionInput) (transitionResult, error) {
	v, now := in.Verdict, in.Now.UTC()
	t := in.Tracker
	t.EndpointID = v.EndpointID
	t.Recent = slices.Clone(t.Recent) // fold appends: never into the caller's array
	d, err := decodeData[trackerData](t.Data, "tracker "+v.EndpointID)
	if err != nil {
		return transitionResult{}, err
	}
	cur := in.Open
	if cur == nil || cur.State == model.IncidentResolved {
		cur, t.OpenIncidentID = nil, "" // gone, or resolved elsewhere (API): start afresh
	}
	before := d // fold and regionalStep append to d's slices and replace Regional: before keeps its lengths and Regional
	opened, resolved := fold(&t, &d, v, in.Rules)
	var out transitionResult
	switch {
	case opened && in.AlreadyOpened:
		t.OpenIncidentID = msg.IncidentID(v.EndpointID, v.Window)
	case opened:
		inc := openedIncident(t, d, v, now)
		inc.Tenant = in.Tenant
		t.OpenIncidentID = inc.ID
		out.Incidents, out.Event = []model.Incident{inc}, eventOpened
		out.Owed = []pending{{IncidentID: inc.ID, Kind: string(alert.KindOpen), CreatedAt: now, VerdictEmittedAt: v.EmittedAt}}
	case resolved && cur != nil:
		inc := resolvedIncident(*cur, t, v, now)
		t.OpenIncidentID, t.Recent, t.ConsecutiveUp, d.Windows = "", nil, 0, nil
		out.Incidents, out.Event = []model.Incident{inc}, eventResolved
		out.Owed = []pending{{IncidentID: inc.ID, Kind: string(alert.KindResolve), CreatedAt: now, VerdictEmittedAt: v.EmittedAt}}
	case cur != nil && cur.State == model.IncidentAcknowledged:
		// The API acknowledges; the alerter counts it once, on the next
		// verdict, in the same compare-and-set as the tracker.
		idata, err := decodeData[incidentData](cur.Data, "incident "+cur.ID)
		if err != nil {
			return transitionResult{}, err
		}
		if !idata.AckCounted {
			idata.AckCounted, out.Acknowledged = true, true
			out.Incidents = []model.Incident{withData(*cur, idata)}
		}
	case cur != nil && cur.State == model.IncidentOpen && in.Rules.repeat > 0:
		// Reminders ride on verdicts, which keep coming every window while
		// the endpoint is probed: no timer to lose.
		inc, p, ok, err := reminder(*cur, d, in.Rules, v, now)
		if err != nil {
			return transitionResult{}, err
		}
		if ok {
			out.Incidents, out.Owed = []model.Incident{inc}, []pending{p}
		}
	}
	rincs, rowed, revent := regionalStep(in, &d, t.OpenIncidentID != "", now)
	out.Incidents, out.Owed, out.RegionalEvent = append(out.Incidents, rincs...), append(out.Owed, rowed...), revent
	d.Outbox = append(d.Outbox, out.Owed...)
	setTrackerData(&t, d)
	out.Tracker = t
	out.Unchanged = unchanged(in, before, out, d)
	return out, nil
}

// unchanged says a transition leaves nothing that a later verdict, a
// drain, the sweep or a reader decides from: the tracker was stored, no
// incident is open before or after (global or regional), no incident is
// written, nothing is owed, counted or pending, and the folded states are
// the same, none of them failing. What differs then is only LastWindow,
// the up runs and the times in d.Windows. An up run is read only while an
// incident is open, and the failing verdict that opens one resets it; a
// window's time is read only for a down state. The endpoint's FIFO group
// delivers its verdicts in order and a window has one verdict, so a
// redelivery the older LastWindow lets in folds the same way again; only
// a verdict never applied and replayed from the DLQ after newer ones
// could be folded as the newest, so the stored LastWindow is kept within
// quietLag of the newest. At steady state that leaves nine verdicts in ten
// unwritten: a tracker encoding and a random leaf of the file per probe.
func unchanged(in transitionInput, before trackerData, out transitionResult, after trackerData) bool {
	t0, t, v := in.Tracker, out.Tracker, in.Verdict
	switch {
	case t0.Version == 0, out.Event != "", out.RegionalEvent != "", out.Acknowledged, len(out.Incidents) > 0, len(out.Owed) > 0:
		return false
	case v.Window.Sub(t0.LastWindow) >= quietLag(v.WindowSecs):
		return false
	case t0.OpenIncidentID != "", t.OpenIncidentID != "", t0.Pending != 0, t.Pending != 0, len(t0.Notices) > 0, len(before.Outbox) > 0:
		return false
	case !sameStates(t0.Recent, t.Recent, msg.StateDown), len(before.Windows) != len(after.Windows):
		return false
	}
	r0, r := before.Regional, after.Regional
	if r0 == nil || r == nil {
		return r0 == nil && r == nil
	}
	return r0.OpenIncidentID == "" && r.OpenIncidentID == "" && sameStates(r0.Recent, r.Recent, msg.StateRegional)
}

// quietLag bounds how far the stored LastWindow lags behind the verdicts
// folded without a write (unchanged): quietWrites windows of windowSecs or
// quietFor, whichever is longer. An endpoint probed once a window is
// written every tenth verdict; so is one probed every minute in 5-second
// windows (a bound of ten windows alone would write each of its verdicts,
// twelve windows apart). The stored fold cannot tell the spacing of the
// verdicts: those folded without a write are not in it.
func quietLag(windowSecs int) time.Duration {
	return max(quietWrites*time.Duration(max(windowSecs, 1))*time.Second, quietFor)
}

const (
	quietWrites = 10
	quietFor    = 10 * time.Minute
)

// sameStates: a and b hold the same states, none of them failing.
func sameStates(a, b []msg.State, failing msg.State) bool {
	return slices.Equal(a, b) && !slices.Contains(b, failing)
}

// openedIncident is the incident verdict v opens on folded tracker t.
func openedIncident(t model.Tracker, d trackerData, v msg.Verdict, now time.Time) model.Incident {
	w := v.Window.UTC()
	downs := 0
	for _, s := range t.Recent {
		if s == msg.StateDown {
			downs++
		}
	}
	return model.Incident{
		ID: msg.IncidentID(v.EndpointID, v.Window), EndpointID: v.EndpointID, State: model.IncidentOpen,
		OpenedWindow: w, OpenedAt: now, FirstFailure: firstFailure(t, d, w),
		Class: v.Class, Reason: v.Reason,
		Transitions: []model.Transition{{At: now, To: model.IncidentOpen,
			Reason: fmt.Sprintf("%d of the last %d windows down; window %s: %s", downs, len(t.Recent), w.Format(time.RFC3339), cmpOr(v.Reason, v.Class))}},
	}
}

// resolvedIncident is inc resolved by verdict v on folded tracker t.
func resolvedIncident(inc model.Incident, t model.Tracker, v msg.Verdict, now time.Time) model.Incident {
	w := v.Window.UTC()
	inc.Transitions = append(slices.Clone(inc.Transitions), model.Transition{At: now, From: inc.State, To: model.IncidentResolved,
		Reason: fmt.Sprintf("%d consecutive up windows; window %s", t.ConsecutiveUp, w.Format(time.RFC3339))})
	inc.State, inc.ResolvedWindow, inc.ResolvedAt = model.IncidentResolved, &w, &now
	return inc
}

// reminder returns the next reminder of open incident inc if one is due:
// the open was notified, RepeatInterval has passed since the last
// notification, and nothing of inc is still pending.
func reminder(inc model.Incident, d trackerData, r rules, v msg.Verdict, now time.Time) (model.Incident, pending, bool, error) {
	idata, err := decodeData[incidentData](inc.Data, "incident "+inc.ID)
	if err != nil {
		return inc, pending{}, false, err
	}
	due := idata.OpenNotified && !idata.NotifiedAt.IsZero() && !now.Before(idata.NotifiedAt.Add(r.repeat))
	if !due || slices.ContainsFunc(d.Outbox, func(p pending) bool { return p.IncidentID == inc.ID }) {
		return inc, pending{}, false, nil
	}
	idata.Reminders++
	p := pending{IncidentID: inc.ID, Kind: reminderKind(idata.Reminders), Seq: idata.Reminders, CreatedAt: now, VerdictEmittedAt: v.EmittedAt}
	return withData(inc, idata), p, true, nil
}

// withData returns inc carrying idata as its alerter data.
func withData(inc model.Incident, idata incidentData) model.Incident {
	inc.Data = encodeData(idata)
	return inc
}
