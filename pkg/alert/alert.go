// Package alert is the contract between the alerter and its sinks: the
// Notification for one incident event (open, resolve, reminder, an owner's
// update), the EventNotification for one change event, the
// DigestNotification for one period's digested change events, the Sink
// interface every sink package implements (alerter/sinks/...)
// with its optional severity and event opt-ins.
// It delivers nothing itself, so sinks, the alerter and the API can depend on
// it without depending on each other.
package alert

import (
	"context"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"
)

// Kind is the incident event a notification announces.
type Kind string

const (
	KindOpen     Kind = "open"
	KindResolve  Kind = "resolve"
	KindReminder Kind = "reminder"
	// KindUpdate carries an update the incident's owner posted with
	// notify set (Notification.Update).
	KindUpdate Kind = "update"
)

// Kinds are the incident notification kinds, in the order docs and
// metrics list them.
func Kinds() []Kind { return []Kind{KindOpen, KindResolve, KindReminder, KindUpdate} }

// Update is the owner's update an update notification carries.
type Update struct {
	// Seq numbers the incident's updates from 1, in the order posted.
	Seq     int       `json:"seq"`
	At      time.Time `json:"at"`
	Status  string    `json:"status"` // investigating | identified | monitoring | resolved
	Message string    `json:"message"`
}

// Notification is one incident event for one sink.
type Notification struct {
	// Key is the once-only ledger key (msg.LedgerKey); sinks with native
	// dedup use IncidentID (PagerDuty dedup_key, Opsgenie alias) instead.
	Key          string            `json:"key"`
	Kind         Kind              `json:"kind"`
	EndpointID   string            `json:"endpointId"`
	EndpointName string            `json:"endpointName"`
	EndpointURL  string            `json:"endpointUrl"` // without userinfo or query secrets
	Labels       map[string]string `json:"labels,omitempty"`
	IncidentID   string            `json:"incidentId"`
	State        string            `json:"state"` // open | acknowledged | resolved
	Class        string            `json:"class,omitempty"`
	Reason       string            `json:"reason,omitempty"`
	FirstFailure time.Time         `json:"firstFailure"`
	OpenedAt     time.Time         `json:"openedAt"`
	ResolvedAt   *time.Time        `json:"resolvedAt,omitempty"`
	// Sequence numbers reminders (1, 2, ...) and updates (Update.Seq);
	// 0 otherwise.
	Sequence int `json:"sequence,omitempty"`
	// Update is the owner's update (KindUpdate only).
	Update *Update `json:"update,omitempty"`
	// Severity is critical for a global incident, warning for a regional
	// one (some regions down, fewer than the quorum), whose failing
	// Regions are named; IncidentKind is global or regional.
	Severity     string   `json:"severity,omitempty"`
	IncidentKind string   `json:"incidentKind,omitempty"`
	Regions      []string `json:"regions,omitempty"`
}

// SeverityRouter is implemented by sinks that take only some severities
// (a sink's "severities" setting); a sink without it takes every one.
type SeverityRouter interface {
	TakesSeverity(severity string) bool
}

// Takes reports whether sink s takes notifications of severity.
func Takes(s Sink, severity string) bool {
	r, ok := s.(SeverityRouter)
	return !ok || r.TakesSeverity(severity)
}

// Sink delivers notifications to one destination.
type Sink interface {
	// Name identifies the sink in ledger keys, logs and metric labels. It
	// must be stable across restarts and never contain secrets.
	Name() string
	// Notify delivers n. An error wrapping ErrPermanent is not retried;
	// a *RetryAfterError says when to try again.
	Notify(ctx context.Context, n Notification) error
}

// ErrPermanent marks a delivery failure that retrying cannot fix (a 400 from
// the receiver, a rejected routing key).
var ErrPermanent = errors.New("permanent delivery failure")

// RetryAfterError asks the caller to wait before retrying (HTTP 429).
type RetryAfterError struct {
	After time.Duration
	Err   error
}

func (e *RetryAfterError) Error() string {
	return fmt.Sprintf("%v (retry after %s)", e.Err, e.After)
}

func (e *RetryAfterError) Unwrap() error { return e.Err }

// MetricLabeler is implemented by sinks counted under a label other than
// their name. Per-endpoint sinks are named by API callers; counting them by
// name would let endpoint churn grow the alert metrics without bound, so they
// are counted under a label such as "endpoint:webhook".
type MetricLabeler interface {
	MetricLabel() string
}

// MetricLabel is the label s is counted under in metrics.
func MetricLabel(s Sink) string {
	if l, ok := s.(MetricLabeler); ok {
		return l.MetricLabel()
	}
	return s.Name()
}

// Truncate cuts s to at most n runes, the last of them an ellipsis when it
// cut: the one rule every sink's field limits and the delivery records use,
// so a cut never splits a UTF-8 sequence.
func Truncate(s string, n int) string {
	if n <= 0 {
		return ""
	}
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}
