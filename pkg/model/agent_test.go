package model

import (
	"strings"
	"testing"
	"time"
)

func TestAgentSkew(t *testing.T) {
	recv := time.Date(2026, 12, 2, 5, 0, 0, 0, time.UTC)
	tests := []struct {
		raw  string
		want time.Duration
		ok   bool
	}{
		{"2026-12-02T05:00:01.5Z", 1500 * time.Millisecond, true},
		{"2026-12-02T06:59:59.25+02:00", -750 * time.Millisecond, true},
		{" 2026-12-02T05:00:00Z ", 0, true},
		{"2026-12-02T04:59:59.9994Z", -time.Millisecond, true}, // rounded to the millisecond
		{"", 0, false},
		{"yesterday", 0, false},
		{"Wed, 02 Dec 2026 05:00:00 GMT", 0, false}, // not RFC 3339
		{"2026-12-04T05:00:00Z", 0, false},          // a day off is no skew
		{"2026-12-02T05:00:00." + strings.Repeat("0", 40) + "Z", 0, false},
	}
	for _, tt := range tests {
		got, ok := AgentSkew(tt.raw, recv)
		if ok != tt.ok || got != tt.want {
			t.Errorf("AgentSkew(%q) = %s, %v; want %s, %v", tt.raw, got, ok, tt.want, tt.ok)
		}
	}
}

// FuzzAgentSkew: whatever an agent sends, the skew taken is bounded and
// the parse never panics.
func FuzzAgentSkew(f *testing.F) {
	for _, s := range []string{"2026-12-02T05:00:01.5Z", "9999-12-31T23:59:59.999999999-23:59", "0000-01-01T00:00:00Z", "\x00", strings.Repeat("9", 41)} {
		f.Add(s)
	}
	recv := time.Date(2026, 12, 2, 5, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, raw string) {
		d, ok := AgentSkew(raw, recv)
		if !ok && d != 0 || d > MaxAgentSkew || d < -MaxAgentSkew {
			t.Fatalf("AgentSkew(%q) = %s, %v", raw, d, ok)
		}
	})
}

func TestLocationOffline(t *testing.T) {
	const after = 90 * time.Second
	at := time.Date(2026, 12, 2, 5, 0, 0, 0, time.UTC)
	seen := func(tenant, loc string, ago time.Duration) AgentSeen {
		return AgentSeen{Tenant: tenant, Location: loc, LastSeen: at.Add(-ago)}
	}
	tests := []struct {
		name   string
		agents []AgentSeen
		want   bool
	}{
		{"no agent record", nil, false},
		{"the only agent silent for the timeout", []AgentSeen{seen("acme", "office", after)}, true},
		{"the only agent polled just inside it", []AgentSeen{seen("acme", "office", after-time.Second)}, false},
		{"one of two online", []AgentSeen{seen("acme", "office", time.Hour), seen("acme", "office", time.Second)}, false},
		{"polled after t", []AgentSeen{seen("acme", "office", -time.Minute)}, false},
		{"another location's or tenant's agents do not count", []AgentSeen{seen("acme", "dc-2", time.Hour), seen("globex", "office", time.Second)}, false},
		{"the default tenant is the empty one", []AgentSeen{seen("", "office", time.Hour)}, false},
		{"never polled", []AgentSeen{{Tenant: "acme", Location: "office"}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := LocationOffline(tt.agents, "acme", "office", at, after); got != tt.want {
				t.Errorf("LocationOffline = %v, want %v", got, tt.want)
			}
		})
	}
	if !LocationOffline([]AgentSeen{seen("", "office", time.Hour)}, DefaultTenant, "office", at, after) {
		t.Error("a record of the empty tenant is the default tenant's")
	}
}
