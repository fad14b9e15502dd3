// Change events: what a probe saw change on an endpoint (its tool catalog,
// protocol or server version, a certificate or credential nearing expiry),
// the one list of their kinds, and how an event is checked, fingerprinted
// and ordered.
//
// An event is identified by its fingerprint, a digest of *what* changed
// (kind, before and after), never of when or by whom it was seen: a result
// redelivered, two replicas or regions seeing the same change, or a prober
// that crashed before remembering a catalog and reports the same drift again
// all append one event.

package model

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mcpmon/mcpmon/pkg/msg"
)

// Change-event kinds, the one list of them: a sink opts into them by name
// (NotifyKinds), and the store records exactly these (Events in pkg/store).
const (
	// EventCatalogBreaking: a tool removed, a required input added, an
	// input removed or its type changed.
	EventCatalogBreaking = "catalog_breaking"
	// EventCatalogInfo: a compatible catalog change (a tool added, an
	// optional input added, a schema reworded).
	EventCatalogInfo = "catalog_info"
	// EventCatalogSecurity: a tool's description changed. Descriptions are
	// instructions to the model; a silent change is how tool poisoning
	// looks.
	EventCatalogSecurity = "catalog_security"
	// EventVersion: the negotiated protocol version, or the server's name
	// or version, changed.
	EventVersion = "version"
	// EventCertificateExpiry: the TLS certificate expires within the
	// warning period (once per certificate).
	EventCertificateExpiry = "certificate_expiry"
	// EventCredentialExpiry: a probe credential expires soon (raised by
	// the prober as a result event of this kind).
	EventCredentialExpiry = "credential_expiry"
	// EventCatalogDivergent: the regions that listed an endpoint's tools
	// successfully in one window saw different catalogs (a stale edge
	// cache, a partial rollout). Raised by the aggregator, which sees
	// every region's result of a window; once per set of catalogs.
	EventCatalogDivergent = "catalog_divergent"
	// EventAuthServerChanged: an endpoint whose OAuth token URL is
	// discovered named another authorization server or token endpoint than
	// the one pinned for it (raised by the prober, which did not follow it:
	// the client secret goes to the pinned token endpoint only). Once per
	// pinned and named pair.
	EventAuthServerChanged = "auth_server_changed"
	// EventConformanceRegressed: a spec-conformance rule that passed at
	// the previous probe fails (pkg/conformance; raised by the prober, one
	// event naming every rule that regressed in one probe). Advice: the
	// endpoint's state is not changed.
	EventConformanceRegressed = "conformance_regressed"
	// EventConformanceRestored: a conformance rule that failed passes again.
	EventConformanceRestored = "conformance_restored"
)

// EventKinds are the change-event kinds, in the order docs and metrics list
// them.
func EventKinds() []string {
	return []string{EventCatalogBreaking, EventCatalogInfo, EventCatalogSecurity, EventVersion, EventCertificateExpiry, EventCredentialExpiry, EventCatalogDivergent, EventAuthServerChanged, EventConformanceRegressed, EventConformanceRestored}
}

// IsEventKind reports whether k is one of EventKinds.
func IsEventKind(k string) bool { return slices.Contains(EventKinds(), k) }

// ResultEventKinds are the kinds a probe result's event may have: the
// probe's own (msg.ProbeEventKinds), which the aggregator turns into
// EventKinds, and EventKinds as they are.
func ResultEventKinds() []string { return append(msg.ProbeEventKinds(), EventKinds()...) }

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
	// Suppressed is set on a flapping marker (Source EventSourceFlapping):
	// the event that stands for the changes of its kind the endpoint made
	// past its event budget, which were counted here instead of stored
	// (store.DecideEventAppend). It is the one event that changes after
	// it is appended: each folded change counts on it.
	Suppressed *EventSuppression `json:"suppressed,omitempty"`
}

// EventSourceFlapping is the Source of a flapping marker.
const EventSourceFlapping = "flapping"

// EventSuppression is what a flapping marker counts.
type EventSuppression struct {
	// Count is how many changes of the marker's kind were folded into it,
	// the first included. A result redelivered after its change was
	// folded counts again, so it is an upper bound.
	Count int `json:"count"`
	// Since and Last are the observation times of the first and the
	// latest change folded.
	Since time.Time `json:"since"`
	Last  time.Time `json:"last"`
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

// SortEventsOldestFirst orders events by ID (observation time, then append
// order), then endpoint: the order PendingEvents returns.
func SortEventsOldestFirst(es []ChangeEvent) {
	slices.SortFunc(es, func(a, b ChangeEvent) int {
		return cmp.Or(strings.Compare(a.ID, b.ID), strings.Compare(a.EndpointID, b.EndpointID))
	})
}
