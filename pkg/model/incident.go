package model

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mcpmon/mcpmon/pkg/msg"
)

// Severities of incidents, which sinks can route on.
const (
	SeverityCritical = "critical" // a global incident
	SeverityWarning  = "warning"  // a regional incident
)

// IncidentState is an incident's lifecycle state.
type IncidentState string

const (
	IncidentOpen         IncidentState = "open"
	IncidentAcknowledged IncidentState = "acknowledged"
	IncidentResolved     IncidentState = "resolved"
)

// Incident is one outage of one endpoint, from the window that opened it to
// the window that resolved it.
type Incident struct {
	ID         string `json:"id"` // msg.IncidentID(endpoint, opening window)
	EndpointID string `json:"endpointId"`
	// Tenant is the endpoint's, copied when the incident opens so the
	// incident stays its tenant's after the endpoint is deleted (empty:
	// DefaultTenant, for incidents opened before tenants).
	Tenant string `json:"tenant,omitempty"`
	// Kind is IncidentGlobal (empty in records written before regional
	// incidents) or IncidentRegional; Severity follows from it
	// (IncidentSeverity). Regions names the failing regions at the open.
	Kind           IncidentKind  `json:"kind,omitempty"`
	Regions        []string      `json:"regions,omitempty"`
	State          IncidentState `json:"state"`
	OpenedWindow   time.Time     `json:"openedWindow"`
	OpenedAt       time.Time     `json:"openedAt"`
	FirstFailure   time.Time     `json:"firstFailure"`
	Class          string        `json:"class,omitempty"`
	Reason         string        `json:"reason,omitempty"`
	AckedAt        *time.Time    `json:"ackedAt,omitempty"`
	AckedBy        string        `json:"ackedBy,omitempty"`
	ResolvedWindow *time.Time    `json:"resolvedWindow,omitempty"`
	ResolvedAt     *time.Time    `json:"resolvedAt,omitempty"`
	Transitions    []Transition  `json:"transitions"`
	// Updates are what the incident's owner posted about it, oldest
	// first (in the order they were appended); see AddUpdate.
	Updates []IncidentUpdate `json:"updates,omitempty"`
	// Data holds alerter-private state (pending notifications, reminders).
	Data    json.RawMessage `json:"data,omitempty"`
	Version int64           `json:"version"`
}

// Began is when the incident began for the people it concerns: its first
// failure, or, for a record without one, the window that opened it. The
// status page, its feed and the subscriber mails all say this time.
func (inc Incident) Began() time.Time {
	if inc.FirstFailure.IsZero() {
		return inc.OpenedWindow
	}
	return inc.FirstFailure
}

// IncidentKind tells a global incident (the region quorum failed, or a
// deployment without regions) from a regional one (some regions, fewer than
// the quorum, failing).
type IncidentKind string

const (
	IncidentGlobal   IncidentKind = "global"
	IncidentRegional IncidentKind = "regional"
)

// IncidentSeverity is the severity of an incident of kind k: warning for a
// regional incident, critical otherwise.
func IncidentSeverity(k IncidentKind) string {
	if k == IncidentRegional {
		return SeverityWarning
	}
	return SeverityCritical
}

// Transition is one step of an incident's history.
type Transition struct {
	At     time.Time     `json:"at"`
	From   IncidentState `json:"from,omitempty"`
	To     IncidentState `json:"to"`
	Reason string        `json:"reason"`
}

// Tracker is the alerter's per-endpoint evaluation state: the recent verdict
// states it has folded and the incident currently open, if any.
type Tracker struct {
	EndpointID     string      `json:"endpointId"`
	LastWindow     time.Time   `json:"lastWindow"`
	Recent         []msg.State `json:"recent"` // newest last, at most M
	ConsecutiveUp  int         `json:"consecutiveUp"`
	OpenIncidentID string      `json:"openIncidentId,omitempty"`
	// Data holds alerter-private state, including its outbox of pending
	// notifications.
	Data json.RawMessage `json:"data,omitempty"`
	// Notices are the update notifications the incident owners asked for
	// (QueueUpdateNotice) that the alerter has not yet taken into its
	// outbox.
	Notices []UpdateNotice `json:"notices,omitempty"`
	// Pending is how many notifications the outbox in Data and Notices
	// hold. The store cannot read Data; SaveTracker lists the endpoint in
	// PendingOutboxes exactly while Pending > 0, in the same transaction
	// as the tracker.
	Pending int   `json:"pending,omitempty"`
	Version int64 `json:"version"` // 0 = never saved
}

// UpdateNotice asks the alerter to send the Seq-th update (from 1) of an
// incident to the incident's sinks.
type UpdateNotice struct {
	IncidentID string `json:"incidentId"`
	Seq        int    `json:"seq"`
}

// QueueUpdateNotice asks for the seq-th update of incident to be sent:
// saved with the incident that holds the update (one SaveTracker), it is
// durable from the moment the update is, and the store lists the
// endpoint's outbox as pending in that write. Asking twice is asking once.
func (t *Tracker) QueueUpdateNotice(incidentID string, seq int) {
	n := UpdateNotice{IncidentID: incidentID, Seq: seq}
	if slices.Contains(t.Notices, n) {
		return
	}
	t.Notices = append(slices.Clip(t.Notices), n)
	t.Pending++
}

// DeliveryOutcome is where one notification stands at one sink.
type DeliveryOutcome string

const (
	// DeliveryDelivered: the sink accepted the notification.
	DeliveryDelivered DeliveryOutcome = "delivered"
	// DeliveryFailed: the sink failed past its retry budget (or rejected the
	// notification); it waits in the outbox for the next drain or sweep.
	DeliveryFailed DeliveryOutcome = "failed"
	// DeliveryMuted: a maintenance window held the notification back
	// (deferred to its end, or dropped).
	DeliveryMuted DeliveryOutcome = "muted"
	// DeliverySkipped: the ledger already had the notification done (another
	// replica, or an earlier attempt, delivered it).
	DeliverySkipped DeliveryOutcome = "skipped"
	// DeliveryGaveUp: the alerter stopped trying this sink for the
	// notification: it failed permanently, or kept failing past the
	// give-up age. LastError says which.
	DeliveryGaveUp DeliveryOutcome = "gave_up"
	// DeliveryGrouped: the sink got the notification inside a grouped one
	// that listed this incident with others of the same cause
	// (alerter/group.go); no message of its own was sent.
	DeliveryGrouped DeliveryOutcome = "grouped"
)

// Delivery is what happened to one notification of an incident at one sink:
// one record per (Kind, Sink), updated in place by MergeDelivery.
type Delivery struct {
	// Kind is the ledger kind: open, resolve or reminder-N. It never
	// contains ':'.
	Kind    string          `json:"kind"`
	Sink    string          `json:"sink"`
	Outcome DeliveryOutcome `json:"outcome"`
	// Attempts counts sink calls over every dispatch of the notification.
	Attempts       int       `json:"attempts"`
	FirstAttemptAt time.Time `json:"firstAttemptAt,omitzero"`
	LastAttemptAt  time.Time `json:"lastAttemptAt,omitzero"`
	DeliveredAt    time.Time `json:"deliveredAt,omitzero"`
	// LastError is the last sink error, already redacted by the alerter
	// (never a webhook URL, token or secret).
	LastError string `json:"lastError,omitempty"`
}

// Unresolved reports whether inc belongs in the open-incident index that
// CountOpenIncidents reads: open and acknowledged incidents do, resolved
// ones do not.
func (inc Incident) Unresolved() bool { return inc.State != IncidentResolved }

// UpdateStatus is what an incident's owner says of it in an update. It is
// the owner's word only: State moves on verdicts and acknowledgements, so
// an update saying resolved does not resolve the incident.
type UpdateStatus string

const (
	UpdateInvestigating UpdateStatus = "investigating"
	UpdateIdentified    UpdateStatus = "identified"
	UpdateMonitoring    UpdateStatus = "monitoring"
	UpdateResolved      UpdateStatus = "resolved"
)

// UpdateStatuses are the statuses an update may carry, in the order an
// incident usually goes through them.
var UpdateStatuses = []UpdateStatus{UpdateInvestigating, UpdateIdentified, UpdateMonitoring, UpdateResolved}

const (
	// MaxUpdateMessage bounds an update's message, in bytes: it is read
	// on the public status page and in every list of incidents.
	MaxUpdateMessage = 2000
	// MaxIncidentUpdates bounds the updates one incident keeps: they live
	// inside the incident record, which the alerter reads on every
	// verdict while the incident is open.
	MaxIncidentUpdates = 100
)

// ErrTooManyUpdates reports an incident that already holds
// MaxIncidentUpdates updates.
var ErrTooManyUpdates = errors.New("incident holds the most updates it may keep")

// ErrInvalidUpdate reports an update that breaks a rule of Problems.
var ErrInvalidUpdate = errors.New("invalid incident update")

// IncidentUpdate is one note an incident's owner posted: a status and a
// message, shown with the incident in the API and on its public page.
type IncidentUpdate struct {
	At      time.Time    `json:"at"`
	Status  UpdateStatus `json:"status"`
	Message string       `json:"message"`
	// By names the API key that posted it (its name, else its ID); empty
	// when the API runs without keys. Never shown on a public page.
	By string `json:"by,omitempty"`
	// Notify: the owner asked for the update to go to the incident's
	// sinks (Tracker.QueueUpdateNotice).
	Notify bool `json:"notify,omitempty"`
}

// Problems are the rules u breaks, in field order ("status", "message"):
// a known status, and a message that is present and at most
// MaxUpdateMessage bytes. Display-text rules (control characters) belong
// to whoever reads the text in: the API checks them with the other
// free-text fields.
func (u IncidentUpdate) Problems() []FieldError {
	var errs []FieldError
	if !slices.Contains(UpdateStatuses, u.Status) {
		names := make([]string, len(UpdateStatuses))
		for i, s := range UpdateStatuses {
			names[i] = string(s)
		}
		errs = append(errs, FieldError{Field: "status", Detail: "must be one of " + strings.Join(names, ", ")})
	}
	switch {
	case u.Message == "":
		errs = append(errs, FieldError{Field: "message", Detail: "is required"})
	case len(u.Message) > MaxUpdateMessage:
		errs = append(errs, FieldError{Field: "message", Detail: fmt.Sprintf("must be at most %d bytes", MaxUpdateMessage)})
	}
	return errs
}

// AddUpdate is inc with u appended: ErrInvalidUpdate when u breaks a rule,
// ErrTooManyUpdates when inc already keeps MaxIncidentUpdates. It never
// writes into inc's own Updates array, so a caller retrying on fresh state
// keeps the copy it read intact.
func (inc Incident) AddUpdate(u IncidentUpdate) (Incident, error) {
	if p := u.Problems(); len(p) > 0 {
		return inc, fmt.Errorf("%w: %s %s", ErrInvalidUpdate, p[0].Field, p[0].Detail)
	}
	if len(inc.Updates) >= MaxIncidentUpdates {
		return inc, fmt.Errorf("incident %s keeps %d updates: %w", inc.ID, len(inc.Updates), ErrTooManyUpdates)
	}
	inc.Updates = append(slices.Clip(inc.Updates), u)
	return inc, nil
}

// UpdatesNewestFirst are inc's updates, the last posted first. Order is
// the order of posting, not of At: replicas' clocks may disagree by a
// little, the append order does not.
func (inc Incident) UpdatesNewestFirst() []IncidentUpdate {
	out := slices.Clone(inc.Updates)
	slices.Reverse(out)
	return out
}
