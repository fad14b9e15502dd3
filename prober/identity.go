package prober

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"time"

	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/msg"
	"github.com/mcpmon/mcpmon/pkg/store"
)

// IdentityKind is the store.Objects kind (in Options.Catalogs) under which
// the prober keeps, per endpoint and region, the identity of the last successful
// probe: what a change is measured against, however many failed probes lie
// between.
const IdentityKind = store.KindServerIdentity

// Identity is what a successful probe learnt about the server.
type Identity struct {
	Transport       string `json:"transport,omitempty"`
	ProtocolVersion string `json:"protocolVersion"`
	ServerName      string `json:"serverName,omitempty"`
	ServerVersion   string `json:"serverVersion,omitempty"`
}

// identityDoc is the stored identity. Previous and Slot make the change
// events idempotent: a command redelivered for the slot that recorded the
// change compares with Previous again and raises the same events, where a
// comparison with Current would find nothing.
type identityDoc struct {
	Slot     time.Time `json:"slot"`
	Current  Identity  `json:"current"`
	Previous *Identity `json:"previous,omitempty"`
}

// identityOf returns the identity of a successful result: one that is not
// down and negotiated a protocol version. A failed probe has none, so it
// neither raises nor hides a change.
func identityOf(res *msg.ProbeResult) (Identity, bool) {
	if res == nil || res.Status == msg.StatusDown || res.ProtocolVersion == "" {
		return Identity{}, false
	}
	return Identity{Transport: res.Transport, ProtocolVersion: res.ProtocolVersion, ServerName: res.ServerName, ServerVersion: res.ServerVersion}, true
}

// decideIdentity is the pure half of change detection: given the stored
// document (nil if none), the previous result handed to ProbeAfter, this
// probe's slot and identity, it returns the identity to compare with (nil:
// nothing to compare, no event) and the document to store (nil: no write).
// Without a stored document the previous result stands in, if it was
// successful: that is the only history a prober without a store has, and
// the first probe after an upgrade finds no document yet.
func decideIdentity(doc *identityDoc, prev *msg.ProbeResult, slot time.Time, cur Identity) (base *Identity, write *identityDoc) {
	switch {
	case doc == nil:
		if id, ok := identityOf(prev); ok {
			base = &id
		}
		return base, &identityDoc{Slot: slot, Current: cur, Previous: base}
	case doc.Slot.Equal(slot): // a redelivery of the probe that wrote doc
		if doc.Current == cur {
			return doc.Previous, nil
		}
		return doc.Previous, &identityDoc{Slot: slot, Current: cur, Previous: doc.Previous}
	case doc.Slot.After(slot): // a straggler: newer history already stored
		return nil, nil
	case doc.Current == cur:
		return &doc.Current, nil
	default:
		old := doc.Current
		return &old, &identityDoc{Slot: slot, Current: cur, Previous: &old}
	}
}

// identityEvents compares cur with base: a protocol change and a server
// name or version change are separate events, since they mean different
// things to the reader (the wire changed, or the software did).
func identityEvents(base *Identity, cur Identity) []msg.Event {
	if base == nil {
		return nil
	}
	var evs []msg.Event
	if base.ProtocolVersion != cur.ProtocolVersion {
		evs = append(evs, msg.Event{
			Kind:     EventVersionChanged,
			Severity: "info",
			Message:  fmt.Sprintf("negotiated protocol version changed from %s to %s", base.ProtocolVersion, cur.ProtocolVersion),
			Details:  map[string]string{"from": base.ProtocolVersion, "to": cur.ProtocolVersion, "fromTransport": base.Transport, "toTransport": cur.Transport},
		})
	}
	// A base without serverInfo is an unknown, not a change: results kept
	// from before the prober recorded it, or a server that never said.
	known := base.ServerName != "" || base.ServerVersion != ""
	if known && (base.ServerName != cur.ServerName || base.ServerVersion != cur.ServerVersion) {
		evs = append(evs, msg.Event{
			Kind:     EventServerChanged,
			Severity: "info",
			Message:  fmt.Sprintf("server changed from %s to %s", serverLabel(*base), serverLabel(cur)),
			Details: map[string]string{"fromName": base.ServerName, "fromVersion": base.ServerVersion,
				"toName": cur.ServerName, "toVersion": cur.ServerVersion},
		})
	}
	return evs
}

func serverLabel(id Identity) string {
	name, version := id.ServerName, id.ServerVersion
	if name == "" {
		name = "(unnamed)"
	}
	if version == "" {
		version = "(no version)"
	}
	return fmt.Sprintf("%q %s", name, version)
}

// identityChanges reads the stored identity and decides. It returns the
// change events and the document to remember (nil: unchanged), which the
// caller stores only after the result is published (see Memory).
func (p *Prober) identityChanges(ctx context.Context, endpointID string, slot time.Time, prev, res *msg.ProbeResult) ([]msg.Event, []byte) {
	cur, ok := identityOf(res)
	if !ok {
		return nil, nil
	}
	doc, inherited := p.loadIdentity(ctx, endpointID)
	base, write := decideIdentity(doc, prev, slot, cur)
	if write == nil && inherited {
		write = doc // the region's own from now on (see loadObject)
	}
	var b []byte
	if write != nil && p.opts.Catalogs != nil {
		b, _ = json.Marshal(write)
	}
	return identityEvents(base, cur), b
}

// loadIdentity returns the stored identity document (this prober's
// region's, see loadObject), or nil when there is none, no store, or it
// cannot be read (then the previous result stands in); inherited as for
// loadObject.
func (p *Prober) loadIdentity(ctx context.Context, endpointID string) (doc *identityDoc, inherited bool) {
	if p.opts.Catalogs == nil {
		return nil, false
	}
	b, inherited, err := p.loadObject(ctx, IdentityKind, endpointID)
	if err != nil {
		if !errors.Is(err, model.ErrNotFound) {
			p.log.Warn("read server identity failed; comparing with the previous result", "endpoint", endpointID, "err", err)
		}
		return nil, false
	}
	var d identityDoc
	if err := json.Unmarshal(b, &d); err != nil {
		p.log.Warn("stored server identity unreadable; replacing it", "endpoint", endpointID, "err", err)
		return nil, false
	}
	return &d, inherited
}

// RenegotiateEvery bounds how long an endpoint in transport auto keeps the
// era it was last seen speaking: a probe whose slot is in a later period
// than the previous probe's starts from the newest era again (one extra
// round trip per period), so a server that moved to a newer era is noticed
// within the period. Periods are offset per endpoint so that endpoints do
// not all renegotiate in the same minute.
const RenegotiateEvery = time.Hour

// renegotiate reports whether the probe of slot must ignore the era the
// previous probe (of prevSlot) found. Stateless: it needs only the two slots.
func renegotiate(endpointID string, prevSlot, slot time.Time) bool {
	if prevSlot.IsZero() {
		return false // no slot, no age: trust the hint
	}
	h := fnv.New64a()
	h.Write([]byte(endpointID))
	offset := int64(h.Sum64() % uint64(RenegotiateEvery))
	period := func(t time.Time) int64 { return (t.UnixNano() + offset) / int64(RenegotiateEvery) }
	return period(prevSlot) != period(slot)
}
