package alerter

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/mcpmon/mcpmon/pkg/alert"
	"github.com/mcpmon/mcpmon/pkg/msg"
	"github.com/mcpmon/mcpmon/pkg/store"
)

// Default rules: open after 2 of the last 3 windows are down, so a steady
// outage opens on its second down verdict (the "2 consecutive" of the
// foundation issue) and a flapping endpoint (down, up, down) opens once;
// resolve after 2 consecutive up windows.
const (
	DefaultOpenAfter    = 2
	DefaultOpenWindow   = 3
	DefaultResolveAfter = 2
)

// rules are the effective, defaulted store.Rules for one endpoint.
type rules struct {
	openAfter, openWindow, resolveAfter int
	repeat                              time.Duration
}

func effectiveRules(global store.Rules, ep *store.Rules) rules {
	r := rules{openAfter: DefaultOpenAfter, openWindow: DefaultOpenWindow, resolveAfter: DefaultResolveAfter}
	for _, src := range []*store.Rules{&global, ep} {
		if src == nil {
			continue
		}
		if src.OpenAfter > 0 {
			r.openAfter = src.OpenAfter
		}
		if src.OpenWindow > 0 {
			r.openWindow = src.OpenWindow
		}
		if src.ResolveAfter > 0 {
			r.resolveAfter = src.ResolveAfter
		}
		if src.RepeatInterval > 0 {
			r.repeat = src.RepeatInterval
		}
	}
	r.openWindow = max(r.openWindow, r.openAfter)
	return r
}

// pending is one notification in a tracker's outbox: written in the same
// SaveTracker transaction as the state change that caused it, removed in a
// later one after every sink has it (or it is dropped). Because it is
// durable before any send, a crash anywhere between the state change and
// the sink's answer leaves work that the redelivered verdict or the sweep
// finishes; the ledger makes finishing it twice harmless.
type pending struct {
	IncidentID string `json:"incidentId"`
	// Kind is open, resolve or reminder-N (the ledger kind).
	Kind      string    `json:"kind"`
	Seq       int       `json:"seq,omitempty"` // reminder number
	CreatedAt time.Time `json:"createdAt"`
	// VerdictEmittedAt feeds pipeline_delay_seconds{stage="verdict_to_alert"}.
	VerdictEmittedAt time.Time `json:"verdictEmittedAt,omitzero"`
	// DeferredUntil is set while a maintenance window holds the
	// notification back; Deferred stays true once it has been.
	Deferred      bool      `json:"deferred,omitempty"`
	DeferredUntil time.Time `json:"deferredUntil,omitzero"`
	Attempts      int       `json:"attempts,omitempty"`
	LastError     string    `json:"lastError,omitempty"`
}

func (p pending) same(o pending) bool { return p.IncidentID == o.IncidentID && p.Kind == o.Kind }

func (p pending) alertKind() alert.Kind {
	switch p.Kind {
	case string(alert.KindOpen):
		return alert.KindOpen
	case string(alert.KindResolve):
		return alert.KindResolve
	}
	return alert.KindReminder
}

func reminderKind(n int) string { return fmt.Sprintf("%s-%d", alert.KindReminder, n) }

// trackerData is the alerter-private part of store.Tracker.
type trackerData struct {
	// Windows parallels Tracker.Recent: the window of each folded verdict,
	// so an incident knows its first failure.
	Windows []time.Time `json:"windows,omitempty"`
	Outbox  []pending   `json:"outbox,omitempty"`
}

// incidentData is the alerter-private part of store.Incident.
type incidentData struct {
	// OpenNotified: the open notification reached every sink; only then is a
	// resolve sent (an incident nobody heard of is not resolved to anyone).
	OpenNotified bool `json:"openNotified,omitempty"`
	// OpenSuppressed: opened and resolved inside a maintenance window.
	OpenSuppressed bool `json:"openSuppressed,omitempty"`
	// NotifiedAt is when the open or the last reminder was settled; the next
	// reminder is due RepeatInterval after it.
	NotifiedAt time.Time `json:"notifiedAt,omitzero"`
	Reminders  int       `json:"reminders,omitempty"`
	// AckCounted: incidents_total{event="acknowledged"} counted this ack.
	AckCounted bool `json:"ackCounted,omitempty"`
}

func decodeData[T any](raw json.RawMessage, what string) (T, error) {
	var v T
	if len(raw) == 0 {
		return v, nil
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return v, fmt.Errorf("decode %s data: %w", what, err)
	}
	return v, nil
}

func encodeData(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("alerter: encode %T: %v", v, err)) // plain structs: unreachable
	}
	return b
}

// fold applies verdict v to tracker t (and its data d) under rules r. It
// returns the incident opened, or whether the open one resolves. It does
// not check staleness; the caller rejects v.Window <= t.LastWindow first.
//
// Verdict states count as follows: down counts toward opening; up counts
// toward resolving; degraded and regional count as neither (they keep an
// incident open and break a run of ups, but never open one); no_data is not
// folded at all, so a sparse schedule cannot dilute N of M.
func fold(t *store.Tracker, d *trackerData, v msg.Verdict, r rules) (open bool, resolve bool) {
	t.LastWindow = v.Window.UTC()
	if v.State == msg.StateNoData {
		return false, false
	}
	t.Recent = append(t.Recent, v.State)
	d.Windows = append(d.Windows, v.Window.UTC())
	if n := len(t.Recent) - r.openWindow; n > 0 {
		t.Recent = slices.Clone(t.Recent[n:])
		if len(d.Windows) >= n {
			d.Windows = slices.Clone(d.Windows[n:])
		}
	}
	if v.State == msg.StateUp {
		t.ConsecutiveUp++
	} else {
		t.ConsecutiveUp = 0
	}
	if t.OpenIncidentID == "" {
		downs := 0
		for _, s := range t.Recent {
			if s == msg.StateDown {
				downs++
			}
		}
		return v.State == msg.StateDown && downs >= r.openAfter, false
	}
	return false, t.ConsecutiveUp >= r.resolveAfter
}

// firstFailure is the window of the earliest down verdict still folded.
func firstFailure(t store.Tracker, d trackerData, fallback time.Time) time.Time {
	for i, s := range t.Recent {
		if s == msg.StateDown && i < len(d.Windows) {
			return d.Windows[i]
		}
	}
	return fallback
}
