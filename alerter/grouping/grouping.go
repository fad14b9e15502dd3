// Package grouping decides which incidents a grouping sink gets as one
// grouped notification (Alertmanager's group_by and group_wait): pure
// functions over a Slot, the stored state of one (tenant, group key, sink),
// with no I/O. alerter/group.go reads and writes slots and does what these
// functions say is owed; docs/design/grouping.md draws the phases.
//
// A group starts when the first incident of its key opens, collects the
// incidents of the same key that open within the sink's wait, and is then
// decided: one member is sent alone as a plain open (with the ledger key it
// would have had without grouping), several as one grouped open. Once every
// member has recovered, one grouped resolve follows.
package grouping

import (
	"crypto/sha256"
	"encoding/hex"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/mcpmon/mcpmon/alerter/notify"
	"github.com/mcpmon/mcpmon/pkg/alert"
)

// Retention is how long a decided group (sent alone, or resolved) stays in
// its slot after its wait: long enough for every member's drain to see
// what was decided. Past it, a member's pending notification is older than
// the wait (so it goes alone) and its ledger keys are done (so nothing is
// sent twice).
const Retention = time.Hour

// Member is one incident of a group, with what a grouped notification
// shows of it.
type Member struct {
	EndpointID   string            `json:"endpointId"`
	IncidentID   string            `json:"incidentId"`
	Name         string            `json:"name,omitempty"`
	URL          string            `json:"url,omitempty"` // already redacted
	Labels       map[string]string `json:"labels,omitempty"`
	Class        string            `json:"class,omitempty"`
	Reason       string            `json:"reason,omitempty"`
	Severity     string            `json:"severity,omitempty"`
	FirstFailure time.Time         `json:"firstFailure,omitzero"`
	OpenedAt     time.Time         `json:"openedAt,omitzero"`
	// Recovered: the member's resolve reached the sink's drain (and is
	// held there for the group's).
	Recovered bool `json:"recovered,omitempty"`
}

// Key returns the values m has for each dimension of by and a digest of
// them (the slot's name); ok is false when m lacks one (no class, no host,
// or no such label), and then m is not grouped at all.
func Key(by []string, m Member) (values map[string]string, hash string, ok bool) {
	values = make(map[string]string, len(by))
	h := sha256.New()
	for _, dim := range by {
		v := value(dim, m)
		if v == "" {
			return nil, "", false
		}
		values[dim] = v
		h.Write([]byte(dim))
		h.Write([]byte{0})
		h.Write([]byte(v))
		h.Write([]byte{0})
	}
	return values, hex.EncodeToString(h.Sum(nil)[:12]), true
}

func value(dim string, m Member) string {
	switch {
	case dim == alert.GroupByClass:
		return m.Class
	case dim == alert.GroupByHost:
		return host(m.URL)
	case dim == alert.GroupByDomain:
		labels := strings.Split(host(m.URL), ".")
		if len(labels) < 2 {
			return strings.Join(labels, ".")
		}
		return strings.Join(labels[len(labels)-2:], ".")
	case strings.HasPrefix(dim, alert.GroupByLabel):
		return m.Labels[strings.TrimPrefix(dim, alert.GroupByLabel)]
	}
	return ""
}

func host(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return strings.ToLower(strings.TrimSuffix(u.Hostname(), "."))
}

// Phase is where a group stands.
type Phase string

const (
	// Collecting: incidents of the key that open join it until its wait
	// is over.
	Collecting Phase = "collecting"
	// Lone: it had one member when its wait ended; that member's open goes
	// alone, as it would without grouping.
	Lone Phase = "lone"
	// Opening: its members are fixed and the grouped open is owed.
	Opening Phase = "opening"
	// Open: the grouped open is delivered (or given up); the members'
	// own opens are settled as grouped.
	Open Phase = "open"
	// Resolving: every member has recovered; the grouped resolve is owed.
	Resolving Phase = "resolving"
	// Resolved: the grouped resolve is delivered (or given up).
	Resolved Phase = "resolved"
)

// Group is one group of incidents in a slot.
type Group struct {
	Start   time.Time `json:"start"`
	Phase   Phase     `json:"phase"`
	Members []Member  `json:"members"`
	// ResolvedAt is when the group was found recovered.
	ResolvedAt time.Time `json:"resolvedAt,omitzero"`
	// Retry is the sink's redelivery state for the owed notification.
	Retry notify.RetryState `json:"retry,omitzero"`
}

func (g Group) has(incidentID string) bool {
	return slices.ContainsFunc(g.Members, func(m Member) bool { return m.IncidentID == incidentID })
}

// Slot is the stored state of one (tenant, group key, sink): its groups,
// oldest first.
type Slot struct {
	Tenant string            `json:"tenant,omitempty"`
	Sink   string            `json:"sink"`
	Hash   string            `json:"hash"`
	By     map[string]string `json:"by"`
	Groups []Group           `json:"groups,omitempty"`
}

// Want is what a pending notification does at a grouping sink.
type Want int

const (
	// Alone: the sink gets it on its own, as without grouping.
	Alone Want = iota
	// Join: its incident is in no group yet; it joins (or starts) one and
	// then waits.
	Join
	// Hold: its group is not decided or not yet delivered; the sink takes
	// neither it nor, to keep the endpoint's order, anything after it.
	Hold
	// Grouped: the group's notification carried it; it is settled for the
	// sink without a send.
	Grouped
)

// ForPending decides what the pending notification of kind (open,
// resolve, reminder-N) for incidentID, created at createdAt, does at the
// slot's sink at now. An open joins a group only while it is younger than
// the wait: one the drain reaches later (a long store outage, a group's
// record already pruned) goes alone.
func (s Slot) ForPending(incidentID, kind string, createdAt, now time.Time, wait time.Duration) Want {
	i := slices.IndexFunc(s.Groups, func(g Group) bool { return g.has(incidentID) })
	if i < 0 {
		if kind == string(alert.KindOpen) && now.Sub(createdAt) < wait {
			return Join
		}
		return Alone
	}
	switch ph := s.Groups[i].Phase; {
	case ph == Lone:
		return Alone
	case ph == Collecting || ph == Opening:
		return Hold
	case kind == string(alert.KindResolve):
		if ph == Resolved {
			return Grouped
		}
		return Hold
	default:
		// The open, or a reminder of a grouped incident: the group's open
		// carried it, and a reminder per member would be the storm again.
		return Grouped
	}
}

// Join adds m to the slot's collecting group whose wait has not ended at
// now, or starts a new group with m at now.
func (s Slot) Join(m Member, now time.Time, wait time.Duration) Slot {
	s.Groups = slices.Clone(s.Groups)
	if n := len(s.Groups); n > 0 {
		last := &s.Groups[n-1]
		if last.Phase == Collecting && now.Before(last.Start.Add(wait)) {
			if !last.has(m.IncidentID) {
				last.Members = append(slices.Clone(last.Members), m)
			}
			return s
		}
	}
	s.Groups = append(s.Groups, Group{Start: now, Phase: Collecting, Members: []Member{m}})
	return s
}

// Recover marks incidentID recovered in its Open group. changed is false
// when there is nothing to mark (not in an Open group, or marked already);
// complete is true when every member of that group has now recovered, so
// the group owes its resolve at once.
func (s Slot) Recover(incidentID string) (next Slot, changed, complete bool) {
	i := slices.IndexFunc(s.Groups, func(g Group) bool { return g.Phase == Open && g.has(incidentID) })
	if i < 0 {
		return s, false, false
	}
	g := s.Groups[i]
	j := slices.IndexFunc(g.Members, func(m Member) bool { return m.IncidentID == incidentID })
	if g.Members[j].Recovered {
		return s, false, false
	}
	s.Groups = slices.Clone(s.Groups)
	g.Members = slices.Clone(g.Members)
	g.Members[j].Recovered = true
	s.Groups[i] = g
	return s, true, !slices.ContainsFunc(g.Members, func(m Member) bool { return !m.Recovered })
}

// Owed is a grouped notification the slot owes: the group that started
// at Start, of Kind open or resolve.
type Owed struct {
	Start time.Time
	Kind  alert.Kind
}

// Group returns the group that started at start; ok is false once it is
// gone (pruned).
func (s Slot) Group(start time.Time) (g Group, ok bool) {
	i := slices.IndexFunc(s.Groups, func(g Group) bool { return g.Start.Equal(start) })
	if i < 0 {
		return Group{}, false
	}
	return s.Groups[i], true
}

// Due advances the slot at now and returns the notifications it owes:
// a collecting group whose wait has ended becomes Lone (one member) or
// Opening (owes the grouped open); an Open group whose members have all
// recovered (marked by Recover, or reported by recovered: the store's
// word for a member whose resolve never reaches a drain, e.g. its endpoint
// was deleted) becomes Resolving (owes the grouped resolve); Opening and Resolving groups owe theirs until Sent
// is applied. Decided groups past Retention are dropped. The caller writes
// the returned slot before sending what is owed, so the members a group
// was sent with are the members it keeps.
func (s Slot) Due(now time.Time, wait time.Duration, recovered func(incidentID string) bool) (Slot, []Owed) {
	var groups []Group
	var owed []Owed
	for _, g := range s.Groups {
		switch g.Phase {
		case Collecting:
			if now.Before(g.Start.Add(wait)) {
				break
			}
			if len(g.Members) == 1 {
				g.Phase = Lone
			} else {
				g.Phase = Opening
			}
		case Open:
			if !slices.ContainsFunc(g.Members, func(m Member) bool { return !m.Recovered && !recovered(m.IncidentID) }) {
				g.Phase, g.ResolvedAt, g.Retry = Resolving, now, notify.RetryState{}
			}
		case Lone, Resolved:
			if now.After(g.Start.Add(wait + Retention)) {
				continue
			}
		}
		switch g.Phase {
		case Opening:
			owed = append(owed, Owed{Start: g.Start, Kind: alert.KindOpen})
		case Resolving:
			owed = append(owed, Owed{Start: g.Start, Kind: alert.KindResolve})
		}
		groups = append(groups, g)
	}
	s.Groups = groups
	return s, owed
}

// Sent applies a delivered (or given-up) owed notification. It is a
// no-op when the group has moved on (another replica applied it first) or
// is gone.
func (s Slot) Sent(o Owed) Slot {
	return s.update(o, func(g *Group) {
		switch {
		case o.Kind == alert.KindOpen && g.Phase == Opening:
			g.Phase, g.Retry = Open, notify.RetryState{}
		case o.Kind == alert.KindResolve && g.Phase == Resolving:
			g.Phase, g.Retry = Resolved, notify.RetryState{}
		}
	})
}

// Failed keeps o owed with the sink's redelivery state after a failure.
func (s Slot) Failed(o Owed, retry notify.RetryState) Slot {
	return s.update(o, func(g *Group) { g.Retry = retry })
}

func (s Slot) update(o Owed, f func(*Group)) Slot {
	i := slices.IndexFunc(s.Groups, func(g Group) bool { return g.Start.Equal(o.Start) })
	if i < 0 {
		return s
	}
	s.Groups = slices.Clone(s.Groups)
	f(&s.Groups[i])
	return s
}

// NextDue is the earliest time Due will change a collecting group, zero
// when none is collecting.
func (s Slot) NextDue(wait time.Duration) time.Time {
	var next time.Time
	for _, g := range s.Groups {
		if g.Phase == Collecting {
			if due := g.Start.Add(wait); next.IsZero() || due.Before(next) {
				next = due
			}
		}
	}
	return next
}

// Busy reports whether Due could have work for the slot at now: a group
// is collecting past its wait, owes a notification, waits for its members
// to recover, or is past retention.
func (s Slot) Busy(now time.Time, wait time.Duration) bool {
	for _, g := range s.Groups {
		switch g.Phase {
		case Collecting:
			if !now.Before(g.Start.Add(wait)) {
				return true
			}
		case Opening, Open, Resolving:
			return true
		default:
			if now.After(g.Start.Add(wait + Retention)) {
				return true
			}
		}
	}
	return false
}
