// Digests: a sink may take the change events of chosen severities as one
// message per period (a day or a week, ending at a time of day in a time
// zone) instead of one message each. DigestRule is the setting,
// DigestSchedule its parsed form with the period maths, DigestNotification
// what the sink receives at a period's end, and DigestNotifier the
// optional interface of a sink that carries digests.
package alert

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Digest periods.
const (
	DigestDaily  = "daily"
	DigestWeekly = "weekly"
)

// MaxDigestEvents bounds the events one digest lists; DigestNotification.Total
// counts them all.
const MaxDigestEvents = 100

// DigestSeverities are the change-event severities a digest may take.
func DigestSeverities() []string { return []string{"info", "warning", "breaking", "critical"} }

// DigestRule is a sink's digest setting (the "digest" object of its
// configuration): the change events of Severities go into one message
// per period, Every day or week, each period ending At (HH:MM, 24-hour;
// default 00:00) in TimeZone (an IANA name; default UTC), a weekly one on
// Weekday (default monday).
type DigestRule struct {
	Severities []string `json:"severities"`
	Every      string   `json:"every"`
	At         string   `json:"at,omitempty"`
	TimeZone   string   `json:"timeZone,omitempty"`
	Weekday    string   `json:"weekday,omitempty"`
}

// Takes reports whether the rule digests events of severity.
func (r DigestRule) Takes(severity string) bool { return slices.Contains(r.Severities, severity) }

// ErrDigestRule wraps every DigestRule problem.
var ErrDigestRule = errors.New("invalid digest")

var weekdays = map[string]time.Weekday{
	"sunday": time.Sunday, "monday": time.Monday, "tuesday": time.Tuesday, "wednesday": time.Wednesday,
	"thursday": time.Thursday, "friday": time.Friday, "saturday": time.Saturday,
}

// Schedule checks r and parses it. Its errors name the field and never
// quote more than the value given.
func (r DigestRule) Schedule() (DigestSchedule, error) {
	var s DigestSchedule
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: %s: %s", ErrDigestRule, field, fmt.Sprintf(format, args...)))
	}
	if len(r.Severities) == 0 {
		bad("severities", "at least one of %s", strings.Join(DigestSeverities(), ", "))
	}
	for i, sev := range r.Severities {
		switch {
		case !slices.Contains(DigestSeverities(), sev):
			bad("severities", "%q: want some of %s", sev, strings.Join(DigestSeverities(), ", "))
		case slices.Contains(r.Severities[:i], sev):
			bad("severities", "%q listed twice", sev)
		}
	}
	switch r.Every {
	case DigestDaily:
		if r.Weekday != "" {
			bad("weekday", "only for a weekly digest")
		}
	case DigestWeekly:
		s.weekly, s.weekday = true, time.Monday
		if r.Weekday != "" {
			wd, ok := weekdays[r.Weekday]
			if !ok {
				bad("weekday", "%q: want monday … sunday", r.Weekday)
			}
			s.weekday = wd
		}
	default:
		bad("every", "%q: want daily or weekly", r.Every)
	}
	if r.At != "" {
		t, err := time.Parse("15:04", r.At)
		if err != nil || len(r.At) != 5 {
			bad("at", "%q: want HH:MM (24-hour, e.g. 09:00)", r.At)
		}
		s.hour, s.minute = t.Hour(), t.Minute()
	}
	s.loc = time.UTC
	if r.TimeZone != "" {
		loc, err := time.LoadLocation(r.TimeZone)
		if err != nil || r.TimeZone == "Local" {
			bad("timeZone", "%q: want an IANA time zone such as Europe/Berlin", r.TimeZone)
		} else {
			s.loc = loc
		}
	}
	if err := errors.Join(errs...); err != nil {
		return DigestSchedule{}, err
	}
	return s, nil
}

// DigestSchedule is a checked DigestRule's periods.
type DigestSchedule struct {
	loc          *time.Location
	hour, minute int
	weekly       bool
	weekday      time.Weekday
}

// Period is the period t falls in: start <= t < end, each at the rule's
// time of day in its zone, a day apart (a week for a weekly rule) on the
// calendar. Across a DST change a period is an hour shorter or longer; a
// time of day the change skips falls where the zone's rules put it (Go's
// time.Date). Consecutive periods tile: the end of one is the start of the
// next.
func (s DigestSchedule) Period(t time.Time) (start, end time.Time) {
	loc := s.loc
	if loc == nil {
		loc = time.UTC
	}
	lt := t.In(loc)
	y, m, d := lt.Date()
	step := 1
	if s.weekly {
		step = 7
		d -= (int(lt.Weekday()) - int(s.weekday) + 7) % 7
	}
	at := func(day int) time.Time { return time.Date(y, m, day, s.hour, s.minute, 0, 0, loc) }
	if at(d).After(t) {
		d -= step
	}
	return at(d), at(d + step)
}

// DigestEvent is one change event in a digest.
type DigestEvent struct {
	EventID      string    `json:"eventId"`
	EndpointID   string    `json:"endpointId"`
	EndpointName string    `json:"endpointName"`
	Kind         string    `json:"kind"`
	Severity     string    `json:"severity,omitempty"`
	ObservedAt   time.Time `json:"observedAt"`
	Message      string    `json:"message"`
}

// DigestNotification is one period's digest for one sink.
type DigestNotification struct {
	// Key is the once-only ledger key: DigestKey.
	Key string `json:"key"`
	// Scope is what the digest covers: a tenant for a global sink, an
	// endpoint for an endpoint's own sink.
	Scope       string    `json:"scope"`
	Every       string    `json:"every"`
	PeriodStart time.Time `json:"periodStart"`
	PeriodEnd   time.Time `json:"periodEnd"`
	// Events are the period's first MaxDigestEvents events, oldest
	// first; Total counts every one.
	Events []DigestEvent `json:"events"`
	Total  int           `json:"total"`
}

// DigestKey is the ledger key of one period's digest for one sink:
// digest-<sink>-<scope>-<period start, RFC 3339 UTC>.
func DigestKey(sink, scope string, periodStart time.Time) string {
	return "digest-" + sink + "-" + scope + "-" + periodStart.UTC().Format(time.RFC3339)
}

// DigestNotifier is implemented by sinks that can carry digests.
type DigestNotifier interface {
	// NotifyDigest delivers n; errors as for Sink.Notify.
	NotifyDigest(ctx context.Context, n DigestNotification) error
}

// ForwardDigest delivers n through s when it carries digests, for
// wrappers that embed a Sink.
func ForwardDigest(ctx context.Context, s Sink, n DigestNotification) error {
	if dn, ok := s.(DigestNotifier); ok {
		return dn.NotifyDigest(ctx, n)
	}
	return fmt.Errorf("sink %s does not carry digests: %w", s.Name(), ErrPermanent)
}

// Digester is implemented by sinks configured with a digest.
type Digester interface {
	DigestRule() (DigestRule, DigestSchedule)
}

// DigestOf is s's digest setting; ok is false when it has none.
func DigestOf(s Sink) (r DigestRule, sched DigestSchedule, ok bool) {
	d, ok := s.(Digester)
	if !ok {
		return DigestRule{}, DigestSchedule{}, false
	}
	r, sched = d.DigestRule()
	return r, sched, true
}

// Digested wraps s (a sink built with its wrappers) with a digest rule
// delivered through to, the sink underneath the wrappers. The wrapper
// keeps s's name, metric label, notify list, severity routing and change
// events.
func Digested(s Sink, to DigestNotifier, rule DigestRule, sched DigestSchedule) Sink {
	return digested{Sink: s, to: to, rule: rule, sched: sched}
}

type digested struct {
	Sink
	to    DigestNotifier
	rule  DigestRule
	sched DigestSchedule
}

func (s digested) DigestRule() (DigestRule, DigestSchedule) { return s.rule, s.sched }
func (s digested) NotifyDigest(ctx context.Context, n DigestNotification) error {
	return s.to.NotifyDigest(ctx, n)
}
func (s digested) MetricLabel() string           { return MetricLabel(s.Sink) }
func (s digested) Subscribes(kind string) bool   { return Subscribes(s.Sink, kind) }
func (s digested) TakesSeverity(sev string) bool { return Takes(s.Sink, sev) }
func (s digested) NotifyEvent(ctx context.Context, n EventNotification) error {
	return ForwardEvent(ctx, s.Sink, n)
}

// A digest sink may also group incidents: the group setting and grouped
// sends reach the sink underneath.
func (s digested) Grouping() Grouping {
	g, _ := GroupingOf(s.Sink)
	return g
}
func (s digested) NotifyGroup(ctx context.Context, n GroupNotification) error {
	return ForwardGroup(ctx, s.Sink, n)
}
