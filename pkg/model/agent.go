package model

import (
	"strings"
	"time"
)

// AgentSeen is what an agent's polls told the API, as the store keeps it
// (store.KindAgentSeen, one per agent key ID): the API writes it, shows it
// in GET /v1/agents, and the alerter's agent watcher and the aggregator
// read it to tell whether a location still has a live agent.
type AgentSeen struct {
	// Tenant, Location and Name are the key's, so a reader needs no
	// keyring to tell whose agent it is.
	Tenant   string `json:"tenant,omitempty"`
	Location string `json:"location,omitempty"`
	Name     string `json:"name,omitempty"`
	// LastSeen is the agent's last poll, by the server's clock.
	LastSeen time.Time `json:"lastSeen"`
	Version  string    `json:"version,omitempty"`
	// ClockSkew is the agent's clock minus the server's at its last poll
	// that sent a valid time (AgentSkew); nil when none did.
	ClockSkew *time.Duration `json:"clockSkew,omitempty"`
	// Minute and Count count the results of the minute starting at
	// Minute; Previous those of the minute before it.
	Minute   time.Time `json:"minute,omitzero"`
	Count    int       `json:"count,omitempty"`
	Previous int       `json:"previous,omitempty"`
}

// DefaultAgentOfflineAfter is how long an agent may go without a poll
// before it counts as offline (--agent-offline-after): three of its
// longest polls (apiv1.MaxAgentWait, 30 s), so one slow answer, a server
// restart or a rolling upgrade (the agent backs off up to 30 s) does not
// make it offline, and a dead agent is reported within two minutes (its
// last poll reaches the store within 15 s of it, the agent watcher looks
// every 15 s).
const DefaultAgentOfflineAfter = 90 * time.Second

// Bounds of --agent-offline-after: above the longest poll plus the
// interval at which its record is written, below what still tells an
// owner anything.
const (
	MinAgentOfflineAfter = time.Minute
	MaxAgentOfflineAfter = time.Hour
)

// Online reports whether the agent polled within after of now.
func (s AgentSeen) Online(now time.Time, after time.Duration) bool {
	return !s.LastSeen.IsZero() && now.Sub(s.LastSeen) < after
}

// Offline reports whether the agent polled once and not within after of
// now. An agent that never polled is neither online nor offline.
func (s AgentSeen) Offline(now time.Time, after time.Duration) bool {
	return !s.LastSeen.IsZero() && !s.Online(now, after)
}

// PerMinute is the results it posted over the last whole minute it was
// seen in (or this minute's, when more).
func (s AgentSeen) PerMinute(now time.Time) int {
	switch m := now.UTC().Truncate(time.Minute); {
	case m.Equal(s.Minute):
		return max(s.Previous, s.Count)
	case m.Equal(s.Minute.Add(time.Minute)):
		return s.Count
	}
	return 0
}

// CountResults adds n results posted at now.
func (s *AgentSeen) CountResults(n int, now time.Time) {
	m := now.UTC().Truncate(time.Minute)
	switch {
	case m.Equal(s.Minute):
	case m.Equal(s.Minute.Add(time.Minute)):
		s.Minute, s.Previous, s.Count = m, s.Count, 0
	default:
		s.Minute, s.Previous, s.Count = m, 0, 0
	}
	s.Count += n
}

// MaxAgentSkew bounds a clock skew the server takes from an agent: a
// clock a day off is not skewed, it is wrong, and is not shown as a
// number that looks like one.
const MaxAgentSkew = 24 * time.Hour

// maxAgentTimeLen bounds the agent's time header before it is parsed:
// RFC 3339 with nanoseconds and a numeric zone is 35 bytes.
const maxAgentTimeLen = 40

// AgentSkew is the skew of an agent that sent raw (its clock, RFC 3339
// with optional fraction) in a request the server received at recv: the
// agent's time minus the server's. ok is false for a missing, oversized,
// malformed or implausible value, which is ignored rather than trusted.
// The request's one-way latency makes the skew read slightly negative.
func AgentSkew(raw string, recv time.Time) (skew time.Duration, ok bool) {
	raw = strings.TrimSpace(raw)
	if raw == "" || len(raw) > maxAgentTimeLen {
		return 0, false
	}
	t, err := time.Parse(time.RFC3339Nano, raw)
	if err != nil {
		return 0, false
	}
	skew = t.Sub(recv)
	if skew > MaxAgentSkew || skew < -MaxAgentSkew {
		return 0, false
	}
	return skew.Round(time.Millisecond), true
}

// LocationOffline is the rule the aggregator leaves an agent location out
// of the due regions by: tenant's location has agents that polled, and
// every one of them had gone without a poll for after by t. A location
// without any agent record is not offline: nothing says it ever had one.
func LocationOffline(agents []AgentSeen, tenant, location string, t time.Time, after time.Duration) bool {
	found := false
	for _, s := range agents {
		if s.Location != location || !SameTenant(s.Tenant, tenant) || s.LastSeen.IsZero() {
			continue
		}
		if s.Online(t, after) || s.LastSeen.After(t) {
			return false
		}
		found = true
	}
	return found
}
