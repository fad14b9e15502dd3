package sinks

import (
	"slices"
	"strings"

	"github.com/mcpmon/mcpmon/pkg/alert"
)

// eventTypes are the sink types that carry change events (each documents
// its payload in its package and in README.md). Opsgenie does not: its
// alerts are problems to act on, and a change is not one.
var eventTypes = []string{TypeWebhook, TypeSlack, TypePagerDuty, TypeEmail}

// notify checks the notify list: known kinds, each once, and event kinds
// only on sink types that carry them.
func (p *problems) notify() {
	seen := map[string]bool{}
	for _, k := range p.c.Notify {
		switch {
		case !slices.Contains(alert.NotifyKinds(), k):
			p.bad("notify", "%q: want any of %s", k, strings.Join(alert.NotifyKinds(), ", "))
		case seen[k]:
			p.bad("notify", "%q listed twice", k)
		case k != alert.NotifyIncidents && !slices.Contains(eventTypes, p.c.Type):
			p.bad("notify", "%q: type %s does not carry change events (%s do)", k, p.c.Type, strings.Join(eventTypes, ", "))
		}
		seen[k] = true
	}
}
