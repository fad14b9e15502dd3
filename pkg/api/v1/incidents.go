package apiv1

import "time"

// IncidentView is an incident as the API returns it (without the alerter's
// private data).
type IncidentView struct {
	ID         string `json:"id"`
	EndpointID string `json:"endpointId"`
	// Kind is global or regional (some regions, fewer than the quorum,
	// failing: Regions names them); Severity critical or warning.
	Kind     string   `json:"kind"`
	Severity string   `json:"severity"`
	Regions  []string `json:"regions,omitempty"`
	// State is open, acknowledged or resolved.
	State          string           `json:"state"`
	OpenedWindow   time.Time        `json:"openedWindow"`
	OpenedAt       time.Time        `json:"openedAt"`
	FirstFailure   time.Time        `json:"firstFailure"`
	Class          string           `json:"class,omitempty"`
	Reason         string           `json:"reason,omitempty"`
	AckedAt        *time.Time       `json:"ackedAt,omitempty"`
	AckedBy        string           `json:"ackedBy,omitempty"`
	ResolvedWindow *time.Time       `json:"resolvedWindow,omitempty"`
	ResolvedAt     *time.Time       `json:"resolvedAt,omitempty"`
	Transitions    []TransitionView `json:"transitions"`
	// Updates are what the owner posted (POST /v1/incidents/{id}/updates),
	// newest first; absent when there are none.
	Updates []UpdateView `json:"updates,omitempty"`
	Version int64        `json:"version"`
}

// UpdateView is one update of an incident. Status is investigating,
// identified, monitoring or resolved: the owner's word, which does not
// change the incident's state. By names the key that posted it.
type UpdateView struct {
	At      time.Time `json:"at"`
	Status  string    `json:"status"`
	Message string    `json:"message"`
	By      string    `json:"by,omitempty"`
}

// UpdateInput is the body of POST /v1/incidents/{id}/updates.
type UpdateInput struct {
	Status  string `json:"status"`
	Message string `json:"message"`
	// Notify sends the update to the incident's sinks as an update
	// notification, once per sink; false (the default) keeps it to the
	// API and the status page.
	Notify bool `json:"notify,omitempty"`
}

// TransitionView is one step of an incident's history: From is absent on
// the step that opened it.
type TransitionView struct {
	At     time.Time `json:"at"`
	From   string    `json:"from,omitempty"`
	To     string    `json:"to"`
	Reason string    `json:"reason"`
}

// IncidentDetail is one incident with what each sink was told about it
// (GET /v1/incidents/{id}).
type IncidentDetail struct {
	IncidentView
	// Notifications has one entry per notification kind (open,
	// reminder-N, resolve) and sink, in that order. Errors come redacted
	// from the alerter: no sink URL, token or secret. A tenant other than
	// the operator's sees only its endpoint's own sinks here.
	Notifications []DeliveryView `json:"notifications"`
	// OperatorNotifications counts the notifications left out of
	// Notifications: those to sinks the tenant does not configure (the
	// operator's global sinks), whose names, receivers and errors are the
	// operator's network, not the tenant's.
	OperatorNotifications int `json:"operatorNotifications,omitempty"`
}

// DeliveryView is what happened to one notification of an incident at
// one sink. Outcome is delivered, failed, muted, skipped or gave_up.
type DeliveryView struct {
	// Kind is the notification: open, resolve or reminder-N.
	Kind    string `json:"kind"`
	Sink    string `json:"sink"`
	Outcome string `json:"outcome"`
	// Attempts counts sink calls over every dispatch of the notification.
	Attempts       int       `json:"attempts"`
	FirstAttemptAt time.Time `json:"firstAttemptAt,omitzero"`
	LastAttemptAt  time.Time `json:"lastAttemptAt,omitzero"`
	DeliveredAt    time.Time `json:"deliveredAt,omitzero"`
	// LastError is the last sink error, redacted (never a webhook URL,
	// token or secret).
	LastError string `json:"lastError,omitempty"`
}

// AckInput is the optional body of POST /v1/incidents/{id}/ack.
type AckInput struct {
	By     string `json:"by,omitempty"`
	Reason string `json:"reason,omitempty"`
}
