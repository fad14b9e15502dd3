package model

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/mcpmon/mcpmon/pkg/schedule"
)

// ErrInvalidMaintenance reports a maintenance window that cannot be applied.
var ErrInvalidMaintenance = errors.New("invalid maintenance window")

// maxMergedWindows bounds how many overlapping recurring occurrences Window
// merges into one, so a window whose Duration exceeds its period cannot loop
// forever.
const maxMergedWindows = 1000

// Maintenance silences alerts for a set of endpoints during a window: either
// one-off (Start..End) or recurring (every Cron activation, for Duration).
//
// The alerter applies it at dispatch time: no notification is sent while a
// matching window is active; a notification deferred by a window is sent
// at the window's end only if it still matters then (an incident opened
// during the window and still open after it alerts once; one alerted before
// the window is not re-alerted).
type Maintenance struct {
	ID   string `json:"id"`
	Name string `json:"name,omitempty"`
	// Tenant owns the window (empty: the default tenant, for windows
	// written before tenants). A window matches its own tenant's endpoints
	// only, by ID or selector: a tenant can neither silence nor probe for
	// another's endpoints.
	Tenant string `json:"tenant,omitempty"`
	// EndpointIDs and Selector choose the endpoints: an endpoint matches when
	// its ID is listed or when every Selector label equals the endpoint's.
	EndpointIDs []string          `json:"endpointIds,omitempty"`
	Selector    map[string]string `json:"selector,omitempty"`

	// One-off window: [Start, End).
	Start time.Time `json:"start,omitzero"`
	End   time.Time `json:"end,omitzero"`

	// Recurring window: [activation, activation+Duration) for each Cron
	// activation (5-field or descriptor, UTC unless CRON_TZ= is given).
	Cron     string        `json:"cron,omitempty"`
	Duration time.Duration `json:"duration,omitempty"`

	CreatedAt time.Time `json:"createdAt,omitzero"`
}

// EndpointRef is what a maintenance window matches on.
type EndpointRef struct {
	ID     string
	Tenant string // empty: the default tenant
	Labels map[string]string
}

// Validate reports whether m can be applied. It does not require an ID, so
// the API can validate a request before assigning one.
func (m Maintenance) Validate() error {
	if len(m.EndpointIDs) == 0 && len(m.Selector) == 0 {
		return fmt.Errorf("%w %q: set endpointIds or a label selector", ErrInvalidMaintenance, m.ID)
	}
	oneOff := !m.Start.IsZero() || !m.End.IsZero()
	recurring := m.Cron != "" || m.Duration != 0
	switch {
	case oneOff && recurring:
		return fmt.Errorf("%w %q: set either start/end (one-off) or cron/duration (recurring), not both", ErrInvalidMaintenance, m.ID)
	case oneOff:
		if m.Start.IsZero() || m.End.IsZero() {
			return fmt.Errorf("%w %q: a one-off window needs both start and end", ErrInvalidMaintenance, m.ID)
		}
		if !m.End.After(m.Start) {
			return fmt.Errorf("%w %q: end %s is not after start %s", ErrInvalidMaintenance, m.ID, m.End.Format(time.RFC3339), m.Start.Format(time.RFC3339))
		}
	case recurring:
		if m.Cron == "" {
			return fmt.Errorf("%w %q: a recurring window needs a cron spec", ErrInvalidMaintenance, m.ID)
		}
		if m.Duration <= 0 {
			return fmt.Errorf("%w %q: a recurring window needs a positive duration", ErrInvalidMaintenance, m.ID)
		}
		if _, err := schedule.ParseSchedule(m.Cron); err != nil {
			return fmt.Errorf("%w %q: cron %q: %v", ErrInvalidMaintenance, m.ID, m.Cron, err)
		}
	default:
		return fmt.Errorf("%w %q: set start/end (one-off) or cron/duration (recurring)", ErrInvalidMaintenance, m.ID)
	}
	return nil
}

// Matches reports whether m applies to ep: same tenant first, then by ID
// or selector.
func (m Maintenance) Matches(ep EndpointRef) bool {
	if !SameTenant(m.Tenant, ep.Tenant) {
		return false
	}
	if slices.Contains(m.EndpointIDs, ep.ID) {
		return true
	}
	if len(m.Selector) == 0 {
		return false
	}
	for k, v := range m.Selector {
		if got, ok := ep.Labels[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// ActiveAt reports whether m silences ep at t.
func (m Maintenance) ActiveAt(t time.Time, ep EndpointRef) bool {
	if !m.Matches(ep) {
		return false
	}
	_, _, ok := m.Window(t)
	return ok
}

// MaintenanceUntil reports whether a window of ms that matches ep is
// active at t and, if so, until when: the first instant after t at which
// none of them is. Windows that overlap or meet are one span, so end is
// when ep stops being in maintenance, not when the first window closes.
// Every rule about "during maintenance" (the alerter's gate, subscriber
// notices, the public status page) asks this one function.
func MaintenanceUntil(ms []Maintenance, ep EndpointRef, t time.Time) (end time.Time, ok bool) {
	end = t
	// Each round moves end to the latest end of the windows active at it;
	// the bound keeps a chain of back-to-back windows from looping.
	for range maxMergedWindows {
		next := end
		for _, m := range ms {
			if !m.Matches(ep) {
				continue
			}
			if _, e, in := m.Window(end); in && e.After(next) {
				next = e
			}
		}
		if !next.After(end) {
			break
		}
		end, ok = next, true
	}
	return end, ok
}

// QuietInMaintenance reports whether inc opened while ep was in
// maintenance and was resolved before that maintenance (MaintenanceUntil)
// ended: nobody is told it opened or resolved, neither the owner's sinks
// nor the status page's subscribers. An incident that opened before a
// window is told, its notices held to the window's end, whenever they
// were due: what decides is when the outage began, not when a drain or a
// sweep got to it.
func QuietInMaintenance(ms []Maintenance, ep EndpointRef, inc Incident) bool {
	end, in := MaintenanceUntil(ms, ep, inc.OpenedAt)
	return in && inc.ResolvedAt != nil && inc.ResolvedAt.Before(end)
}

// MaintenanceSpan is one stretch of maintenance of an endpoint: [Start,
// End), windows that overlap or meet joined.
type MaintenanceSpan struct {
	Start, End time.Time
}

// maxAheadStarts bounds how many activations of one recurring window
// MaintenanceAhead looks at.
const maxAheadStarts = 64

// MaintenanceAhead lists, in order, at most limit spans of maintenance of
// ep that start after from and before to, each ending where
// MaintenanceUntil says. A span already under way at from is not listed.
// Of a recurring window it looks at the first 64 activations after from.
func MaintenanceAhead(ms []Maintenance, ep EndpointRef, from, to time.Time, limit int) []MaintenanceSpan {
	var starts []time.Time
	for _, m := range ms {
		if !m.Matches(ep) {
			continue
		}
		if m.Cron == "" {
			if m.Start.After(from) && m.Start.Before(to) && m.End.After(m.Start) {
				starts = append(starts, m.Start)
			}
			continue
		}
		sched, err := schedule.ParseSchedule(m.Cron)
		if err != nil || m.Duration <= 0 {
			continue
		}
		for a, i := sched.Next(from), 0; !a.IsZero() && a.Before(to) && i < maxAheadStarts; a, i = sched.Next(a), i+1 {
			starts = append(starts, a)
		}
	}
	slices.SortFunc(starts, time.Time.Compare)
	after := from
	if end, ok := MaintenanceUntil(ms, ep, from); ok {
		after = end
	}
	var out []MaintenanceSpan
	for _, s := range starts {
		if len(out) == limit {
			break
		}
		if s.Before(after) {
			continue // inside the span before it
		}
		end, ok := MaintenanceUntil(ms, ep, s)
		if !ok {
			continue
		}
		out = append(out, MaintenanceSpan{Start: s, End: end})
		after = end
	}
	return out
}

// Window returns the window of m that contains t, regardless of endpoints.
// Overlapping recurring occurrences are merged into one window, so end is
// when m stops silencing. ok is false when no window contains t or m is
// invalid.
func (m Maintenance) Window(t time.Time) (start, end time.Time, ok bool) {
	if m.Cron == "" {
		if m.Start.IsZero() || m.End.IsZero() {
			return time.Time{}, time.Time{}, false
		}
		if !t.Before(m.Start) && t.Before(m.End) {
			return m.Start, m.End, true
		}
		return time.Time{}, time.Time{}, false
	}
	if m.Duration <= 0 {
		return time.Time{}, time.Time{}, false
	}
	sched, err := schedule.ParseSchedule(m.Cron)
	if err != nil {
		return time.Time{}, time.Time{}, false
	}
	// An activation a contains t when a <= t < a+Duration, i.e. a lies in
	// (t-Duration, t]. Next is strictly after its argument, so this finds the
	// earliest such activation.
	first := sched.Next(t.Add(-m.Duration))
	if first.IsZero() || first.After(t) {
		return time.Time{}, time.Time{}, false
	}
	end = first.Add(m.Duration)
	for a, i := first, 0; i < maxMergedWindows; i++ {
		a = sched.Next(a)
		if a.IsZero() || a.After(end) {
			break
		}
		end = a.Add(m.Duration)
	}
	return first, end, true
}

// The caps of one maintenance window. A window is decoded by every
// decision about its tenant's endpoints, so its size is bounded where it
// enters (the API refuses a larger one with the field and the limit); the
// store's per-tenant index keeps it from costing any other tenant.
const (
	MaxWindowEndpointIDs = 1000 // endpointIds entries
	MaxWindowIDLen       = 64   // bytes of one endpointIds entry
	MaxWindowSelector    = 32   // selector labels
	MaxWindowLabelKeyLen = 63   // bytes of a selector label name
	MaxWindowLabelValLen = 255  // bytes of a selector label value
	MaxWindowNameLen     = 200  // bytes of the name
	MaxWindowCronLen     = 200  // bytes of the cron spec
	// MaxWindowBytes bounds a window's request body and its stored
	// document: above what the field caps allow together, every character
	// JSON-escaped (about 140 KiB).
	MaxWindowBytes = 256 << 10
)

// Bounds returns the first field of m past its cap, as a JSON pointer into
// the window's wire form with a detail naming the limit; "" when m is
// within every cap. An endpointIds entry must also look like an endpoint
// ID (letters, digits, '.', '_', '-'), which keeps its stored form as
// short as its length. It reads lengths and bytes only, so it is cheap on
// any input.
func (m Maintenance) Bounds() (pointer, detail string) {
	switch {
	case len(m.Name) > MaxWindowNameLen:
		return "#/name", fmt.Sprintf("must be at most %d bytes", MaxWindowNameLen)
	case len(m.Cron) > MaxWindowCronLen:
		return "#/cron", fmt.Sprintf("must be at most %d bytes", MaxWindowCronLen)
	case len(m.EndpointIDs) > MaxWindowEndpointIDs:
		return "#/endpointIds", fmt.Sprintf("at most %d endpoint IDs per window (got %d); use a label selector for more", MaxWindowEndpointIDs, len(m.EndpointIDs))
	case len(m.Selector) > MaxWindowSelector:
		return "#/selector", fmt.Sprintf("at most %d labels (got %d)", MaxWindowSelector, len(m.Selector))
	}
	for i, id := range m.EndpointIDs {
		if len(id) > MaxWindowIDLen {
			return "#/endpointIds/" + strconv.Itoa(i), fmt.Sprintf("must be at most %d bytes", MaxWindowIDLen)
		}
		if !idLike(id) {
			return "#/endpointIds/" + strconv.Itoa(i), "must be an endpoint ID: letters, digits, '.', '_' or '-'"
		}
	}
	for _, k := range slices.Sorted(maps.Keys(m.Selector)) {
		switch {
		case len(k) > MaxWindowLabelKeyLen:
			return "#/selector", fmt.Sprintf("label names must be at most %d bytes", MaxWindowLabelKeyLen)
		case len(m.Selector[k]) > MaxWindowLabelValLen:
			return "#/selector/" + escapePointer(k), fmt.Sprintf("must be at most %d bytes", MaxWindowLabelValLen)
		}
	}
	return "", ""
}

func idLike(id string) bool {
	for i := range len(id) {
		c := id[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

// escapePointer escapes a JSON pointer reference token (RFC 6901).
func escapePointer(s string) string {
	out := make([]byte, 0, len(s))
	for i := range len(s) {
		switch s[i] {
		case '~':
			out = append(out, '~', '0')
		case '/':
			out = append(out, '~', '1')
		default:
			out = append(out, s[i])
		}
	}
	return string(out)
}

// DecodeMaintenance reads a stored maintenance document.
func DecodeMaintenance(doc []byte) (Maintenance, error) {
	var m Maintenance
	if err := json.Unmarshal(doc, &m); err != nil {
		return Maintenance{}, fmt.Errorf("decode maintenance window: %w", err)
	}
	return m, nil
}
