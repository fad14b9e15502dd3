// Change events: where what a probe saw change becomes durable.
//
// The aggregator sees every result, so it is where a result's events
// (msg.ProbeResult.Events, and the certificate expiry it carries) become
// the endpoint's event history (store.Events). ChangeEvents is the pure
// half — a result in, the events it shows out, each with a fingerprint of
// what changed — and recordEvents the effect: one AppendEvents, which the
// store makes idempotent by fingerprint and which lists each new event for
// notification in the same transaction.
//
// Order in Handle: events are appended before the result joins its window,
// and the result message is acknowledged only after both. A crash before the
// append loses nothing (the message is redelivered and appended then); a
// crash after it appends nothing twice (the redelivery finds the
// fingerprints). A late result — its window already decided — still records
// its events: a change is news whatever window it falls in.

package aggregator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/msg"
	"github.com/mcpmon/mcpmon/pkg/store"
)

// DefaultCertWarning is how long before a certificate expires a
// certificate_expiry event is raised.
const DefaultCertWarning = 14 * 24 * time.Hour

// EventStore is what recording events needs; the aggregator's store
// provides it when it implements it (every store.Store does).
type EventStore interface {
	AppendEvents(ctx context.Context, evs ...model.ChangeEvent) ([]model.ChangeEvent, error)
}

// catalogDiff is the prober's catalog diff (prober.CatalogDiff), read to
// decide the kinds. The diff is kept as the prober wrote it unless it is
// over maxEventDiffBytes (boundedDiff).
type catalogDiff struct {
	Severity       string        `json:"severity"`
	Added          []string      `json:"added,omitempty"`
	Removed        []string      `json:"removed,omitempty"`
	Changed        []changedTool `json:"changed,omitempty"`
	More           int           `json:"more,omitempty"`
	OldFingerprint string        `json:"oldFingerprint"`
	NewFingerprint string        `json:"newFingerprint"`
}

type changedTool struct {
	Name               string   `json:"name"`
	DescriptionChanged bool     `json:"descriptionChanged,omitempty"`
	Breaking           []string `json:"breaking,omitempty"`
	Info               []string `json:"info,omitempty"`
}

// A change event is kept in the history and sent to sinks, so what a
// target's catalog churn puts in one is bounded: its message names at most
// maxEventNames tools, its diff holds at most maxEventDiffBytes, and the
// tools beyond either are counted ("… and N more").
// Any other event's details are kept whole up to maxEventDetailsBytes
// (what the prober attaches is a few hundred bytes) and dropped past it,
// and the versions read from them are display lines of at most
// maxEventVersionLen: an agent's result carries whatever it was given.
const (
	maxEventNames        = 20
	maxEventDiffBytes    = 32 << 10
	maxEventDetailsBytes = 8 << 10
	maxEventVersionLen   = 256
)

// boundedDetails is details as an event keeps them: whole, or none past
// maxEventDetailsBytes.
func boundedDetails(details json.RawMessage) json.RawMessage {
	if len(details) > maxEventDetailsBytes {
		return nil
	}
	return details
}

// nameList joins names, the ones beyond maxEventNames counted.
func nameList(names []string) string {
	if len(names) <= maxEventNames {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s … and %d more", strings.Join(names[:maxEventNames], ", "), len(names)-maxEventNames)
}

// boundedDiff is details when it fits maxEventDiffBytes; otherwise d with
// the reasons dropped and only the tool names that fit, removed first,
// then changed, then added, the rest counted in More.
func boundedDiff(details json.RawMessage, d catalogDiff) json.RawMessage {
	if len(details) <= maxEventDiffBytes {
		return details
	}
	budget := maxEventDiffBytes - 512 // the fingerprints, severity and field names
	fits := func(name string) bool {
		if budget -= len(name) + 64; budget < 0 {
			d.More++
			return false
		}
		return true
	}
	keep := func(names []string) []string {
		var out []string
		for _, n := range names {
			if fits(n) {
				out = append(out, n)
			}
		}
		return out
	}
	d.Removed = keep(d.Removed)
	var changed []changedTool
	for _, c := range d.Changed {
		if fits(c.Name) {
			changed = append(changed, changedTool{Name: c.Name, DescriptionChanged: c.DescriptionChanged})
		}
	}
	d.Changed = changed
	d.Added = keep(d.Added)
	b, err := json.Marshal(d)
	if err != nil {
		return nil
	}
	return b
}

// ChangeEvents returns the durable events result r shows: a catalog drift
// as catalog_breaking or catalog_info (at most one of them) plus
// catalog_security when a tool's description changed; a protocol or server
// change as version; a certificate expiring within certWarning of the
// probe as certificate_expiry (once per certificate: its expiry is the
// fingerprint); and any result event whose kind is already one of
// model.EventKinds (credential_expiry) as it is. Fingerprints cover what
// changed, never when or where it was seen, so every sighting of one change
// maps to one event. It reads nothing but r.
func ChangeEvents(r msg.ProbeResult, certWarning time.Duration) []model.ChangeEvent {
	if certWarning <= 0 {
		certWarning = DefaultCertWarning
	}
	observed := r.Slot
	if observed.IsZero() {
		observed = r.StartedAt
	}
	base := model.ChangeEvent{EndpointID: r.EndpointID, ObservedAt: observed.UTC(), ProbeRunID: r.ProbeRunID, Region: r.Region}
	var out []model.ChangeEvent
	for _, ev := range r.Events {
		details := rawJSON(ev.Details)
		e := base
		e.Source, e.Severity, e.Message = ev.Kind, ev.Severity, ev.Message
		switch {
		case ev.Kind == msg.EventCatalogChanged:
			out = append(out, catalogEvents(e, details)...)
		case ev.Kind == msg.EventVersionChanged || ev.Kind == msg.EventServerChanged:
			var d map[string]string
			_ = json.Unmarshal(details, &d)
			if ev.Kind == msg.EventVersionChanged {
				e.Before, e.After = d["from"], d["to"]
			} else {
				e.Before, e.After = strings.TrimSpace(d["fromName"]+" "+d["fromVersion"]), strings.TrimSpace(d["toName"]+" "+d["toVersion"])
			}
			e.Before, e.After = model.DisplayLine(e.Before, maxEventVersionLen), model.DisplayLine(e.After, maxEventVersionLen)
			e.Kind = model.EventVersion
			e.Fingerprint = model.EventFingerprint(r.EndpointID, e.Kind, ev.Kind, e.Before, e.After, string(details))
			e.Details = boundedDetails(details)
			out = append(out, e)
		case ev.Kind == msg.EventCertExpiring:
			// Decided from r.CertExpiry below, with this package's period.
		case model.IsEventKind(ev.Kind):
			e.Kind, e.Details = ev.Kind, boundedDetails(details)
			id := ev.Fingerprint
			if id == "" {
				// Details, not the message: a message may count down
				// ("expires in 70h") while the change stays the same.
				id = string(stableDetails(details))
				if len(details) == 0 {
					id = ev.Message
				}
			}
			e.Fingerprint = model.EventFingerprint(r.EndpointID, e.Kind, id)
			out = append(out, e)
		}
	}
	if r.CertExpiry != nil && r.CertExpiry.Sub(observed) < certWarning {
		exp := r.CertExpiry.UTC()
		e := base
		e.Kind, e.Source, e.Severity = model.EventCertificateExpiry, msg.EventCertExpiring, "warning"
		e.After = exp.Format(time.RFC3339)
		if left := exp.Sub(observed); left > 0 {
			e.Message = fmt.Sprintf("TLS certificate expires %s (in %s)", e.After, left.Round(time.Hour))
		} else {
			e.Message = fmt.Sprintf("TLS certificate expired %s", e.After)
		}
		e.Details, _ = json.Marshal(map[string]any{"notAfter": exp, "warning": certWarning.String()})
		e.Fingerprint = model.EventFingerprint(r.EndpointID, e.Kind, e.After)
		out = append(out, e)
	}
	return out
}

// catalogEvents splits one catalog drift into its kinds. Each keeps the
// whole diff, so a reader of any of them sees everything that changed.
func catalogEvents(e model.ChangeEvent, details json.RawMessage) []model.ChangeEvent {
	var d catalogDiff
	if json.Unmarshal(details, &d) != nil {
		return nil
	}
	e.Before, e.After, e.Diff = d.OldFingerprint, d.NewFingerprint, boundedDiff(details, d)
	fp := func(kind string) string {
		return model.EventFingerprint(e.EndpointID, kind, d.OldFingerprint, d.NewFingerprint)
	}
	var described []string
	breaking, info := d.Severity == "breaking" || len(d.Removed) > 0, len(d.Added) > 0
	for _, c := range d.Changed {
		if c.DescriptionChanged {
			described = append(described, c.Name)
		}
		breaking = breaking || len(c.Breaking) > 0
		info = info || len(c.Info) > 0
	}
	var out []model.ChangeEvent
	switch {
	case breaking:
		b := e
		b.Kind, b.Severity, b.Fingerprint = model.EventCatalogBreaking, "breaking", fp(model.EventCatalogBreaking)
		out = append(out, b)
	case info:
		i := e
		i.Kind, i.Severity, i.Fingerprint = model.EventCatalogInfo, "info", fp(model.EventCatalogInfo)
		out = append(out, i)
	}
	if len(described) > 0 {
		s := e
		s.Kind, s.Severity, s.Fingerprint = model.EventCatalogSecurity, "security", fp(model.EventCatalogSecurity)
		s.Message = fmt.Sprintf("the description of %s changed: tool descriptions are instructions to the model, and a silent change is how tool poisoning looks; review it", nameList(described))
		out = append(out, s)
	}
	return out
}

// stableDetails drops the fields of an event's details that count down
// from probe to probe (hoursLeft, remaining, expiresIn, ttl…), so a
// generic event without a Fingerprint still names the change, not the
// moment it was seen. Details that are not an object are kept whole.
func stableDetails(details json.RawMessage) json.RawMessage {
	var m map[string]json.RawMessage
	if json.Unmarshal(details, &m) != nil {
		return details
	}
	for k := range m {
		l := strings.ToLower(k)
		if strings.Contains(l, "left") || strings.Contains(l, "remaining") || strings.Contains(l, "expiresin") || l == "ttl" || strings.HasSuffix(l, "ago") {
			delete(m, k)
		}
	}
	b, err := json.Marshal(m) // keys sorted
	if err != nil {
		return details
	}
	return b
}

func rawJSON(v any) json.RawMessage {
	if v == nil {
		return nil
	}
	if r, ok := v.(json.RawMessage); ok {
		return r
	}
	b, err := json.Marshal(v) // map keys sorted: a stable encoding
	if err != nil || string(b) == "null" {
		return nil
	}
	return b
}

// recordEvents appends r's events (the effect of ChangeEvents). A store
// outage is returned, so the result stays queued and is retried; an event
// the store refuses as invalid is logged and skipped, never holding the
// endpoint's results back.
func (a *Aggregator) recordEvents(ctx context.Context, r msg.ProbeResult) error {
	if a.events == nil {
		return nil
	}
	evs := ChangeEvents(r, a.opts.CertWarning)
	if len(evs) == 0 {
		return nil
	}
	return a.appendEvents(ctx, fmt.Sprintf("events of result %s of endpoint %s", r.ProbeRunID, r.EndpointID), evs...)
}

// appendEvents is the one effect that records change events: what names
// them in messages. A store outage is returned (the caller's message or
// window is retried); an event the store refuses as invalid is logged and
// skipped. Each event the store did not already hold is counted and logged
// once.
func (a *Aggregator) appendEvents(ctx context.Context, what string, evs ...model.ChangeEvent) error {
	added, err := a.events.AppendEvents(ctx, evs...)
	switch {
	case errors.Is(err, store.ErrUnavailable):
		return fmt.Errorf("aggregator: record %s: %w", what, err)
	case err != nil:
		a.log.Warn("change events not recorded", "what", what, "err", err)
		return nil
	}
	for _, e := range added {
		a.m.Events.WithLabelValues(e.Kind).Inc()
		if e.Source == model.EventSourceFlapping {
			a.m.EventsFlapping.WithLabelValues(e.Kind).Inc()
		}
		a.log.Info("change event", "endpoint", e.EndpointID, "kind", e.Kind, "fingerprint", e.Fingerprint, "message", e.Message)
	}
	return nil
}
