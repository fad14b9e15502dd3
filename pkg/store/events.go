// The change-event history: what a probe saw change on an endpoint (its tool
// catalog, protocol or server version, a certificate or credential nearing
// expiry), kept per endpoint as an append-only log, and the rules every
// backend applies to it: which kinds exist, how an event's ID and
// fingerprint are formed, and which events a filter selects.
//
// An event is identified by its fingerprint, a digest of *what* changed
// (kind, before and after), never of when or by whom it was seen: a result
// redelivered, two replicas or regions seeing the same change, or a prober
// that crashed before remembering a catalog and reports the same drift again
// all append one event. The store keeps the fingerprint index in the
// transaction that appends, together with a pending-notification index the
// alerter drains, so an appended event is never without its notification
// and never notified twice for being appended twice.

package store

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mcpmon/mcpmon/pkg/alert"
)

// Change-event kinds: their one definition is in pkg/alert (the leaf sinks
// opt into them from); the store records exactly those.
const (
	EventCatalogBreaking   = alert.EventCatalogBreaking
	EventCatalogInfo       = alert.EventCatalogInfo
	EventCatalogSecurity   = alert.EventCatalogSecurity
	EventVersion           = alert.EventVersion
	EventCertificateExpiry = alert.EventCertificateExpiry
	EventCredentialExpiry  = alert.EventCredentialExpiry
	EventCatalogDivergent  = alert.EventCatalogDivergent
	EventAuthServerChanged = alert.EventAuthServerChanged
)

// EventKinds lists every change-event kind, for validation and metric
// label values (alert.EventKinds).
func EventKinds() []string { return alert.EventKinds() }

func IsEventKind(k string) bool { return slices.Contains(EventKinds(), k) }

// MaxEventList bounds one ListEvents answer.
const MaxEventList = 1000

// ChangeEvent is one durable change of one endpoint.
type ChangeEvent struct {
	// ID is assigned by AppendEvents: unique within the endpoint and
	// ordered like (ObservedAt, append order), so it is the page cursor.
	ID         string `json:"id"`
	EndpointID string `json:"endpointId"`
	Kind       string `json:"kind"`
	// Fingerprint identifies the change itself (EventFingerprint): the
	// same change appended again is the same event.
	Fingerprint string `json:"fingerprint"`
	// ObservedAt is the slot of the probe that first reported the change.
	ObservedAt time.Time `json:"observedAt"`
	RecordedAt time.Time `json:"recordedAt,omitzero"`
	ProbeRunID string    `json:"probeRunId,omitempty"`
	Region     string    `json:"region,omitempty"`
	// Source is the kind the prober gave the result event
	// (catalog_changed, protocol_version_changed, …).
	Source   string `json:"source,omitempty"`
	Severity string `json:"severity,omitempty"`
	Message  string `json:"message"`
	// Before and After are the catalog fingerprints (catalog kinds but
	// catalog_divergent, whose Details name each region's), the old and
	// new protocol or server version (version), or empty.
	Before string `json:"before,omitempty"`
	After  string `json:"after,omitempty"`
	// Diff is the catalog diff as the prober computed it (catalog kinds):
	// tools added, removed and changed, each change's reasons.
	Diff json.RawMessage `json:"diff,omitempty"`
	// Details is what else the prober attached (version changes, expiry).
	Details json.RawMessage `json:"details,omitempty"`
}

// EventFilter selects one endpoint's events: of Kind when set, older than
// the event Before names (an ID; empty: from the newest), at most Limit
// (<= 0 or above MaxEventList: MaxEventList), newest first.
type EventFilter struct {
	Kind   string
	Before string
	Limit  int
}

// EventLimit returns how many events a filter may return.
func EventLimit(f EventFilter) int {
	if f.Limit <= 0 || f.Limit > MaxEventList {
		return MaxEventList
	}
	return f.Limit
}

// Match reports whether f's kind selects e.
func (f EventFilter) Match(e ChangeEvent) bool { return f.Kind == "" || e.Kind == f.Kind }

// EventRef names one event: what the pending-notification index holds.
type EventRef struct {
	EndpointID string `json:"endpointId"`
	ID         string `json:"id"`
}

// Events is the change-event history. Events are kept for the backend's
// verdict history (DefaultVerdictHistory), measured on its clock, and are
// never changed once appended.
type Events interface {
	// AppendEvents stores each event, under a fresh ID, unless its
	// endpoint already has one with the same Fingerprint within the
	// retention; it returns those it stored. In the same transaction
	// each stored event is listed in the pending-notification index and
	// the endpoint's events past the retention are removed. An event
	// fails ValidEvent: nothing is stored.
	AppendEvents(ctx context.Context, evs ...ChangeEvent) (added []ChangeEvent, err error)
	// ListEvents returns the endpoint's events selected by f, newest
	// first (empty, not nil, if none).
	ListEvents(ctx context.Context, endpointID string, f EventFilter) ([]ChangeEvent, error)
	// PendingEvents returns up to limit events listed as pending, oldest
	// first (empty, not nil, if none). An entry whose event aged out is
	// unlisted, not returned.
	PendingEvents(ctx context.Context, limit int) ([]ChangeEvent, error)
	// SettleEvent unlists an event from the pending index: every sink
	// has it. Settling an event not listed is a no-op.
	SettleEvent(ctx context.Context, ref EventRef) error
}

// ValidEvent checks what AppendEvents requires.
func ValidEvent(e ChangeEvent) error {
	switch {
	case e.EndpointID == "":
		return errors.New("append event: endpoint ID is required")
	case !IsEventKind(e.Kind):
		return fmt.Errorf("append event: kind %q: want one of %s", e.Kind, strings.Join(EventKinds(), ", "))
	case e.Fingerprint == "" || strings.ContainsAny(e.Fingerprint, "|:\x00 "):
		return errors.New("append event: fingerprint is required and must not contain '|', ':', spaces or NUL")
	case e.ObservedAt.IsZero():
		return errors.New("append event: observedAt is required")
	}
	return nil
}

// EventFingerprint is the digest of a change: the first 16 bytes of
// SHA-256 over the endpoint, the kind and each part (before,
// after, a certificate's expiry…), NUL-separated, in hex. It leaves out
// the time and the probe that saw it, so every sighting of one change has
// one fingerprint.
func EventFingerprint(endpointID, kind string, parts ...string) string {
	h := sha256.New()
	h.Write([]byte(endpointID))
	h.Write([]byte{0})
	h.Write([]byte(kind))
	for _, p := range parts {
		h.Write([]byte{0})
		h.Write([]byte(p))
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// EventID forms an event's ID from its observation time and a
// per-endpoint sequence number: 32 hex digits whose order is (time,
// sequence) order, so IDs sort like the history.
func EventID(t time.Time, seq uint64) string { return AuditID(t, seq) }

// EventCutoff is the oldest ObservedAt kept at now.
func EventCutoff(now time.Time, history time.Duration) time.Time { return now.Add(-history) }

// SortEventsOldestFirst orders events by ID (observation time, then append
// order), then endpoint: the order PendingEvents returns.
func SortEventsOldestFirst(es []ChangeEvent) {
	slices.SortFunc(es, func(a, b ChangeEvent) int {
		return cmp.Or(strings.Compare(a.ID, b.ID), strings.Compare(a.EndpointID, b.EndpointID))
	})
}
