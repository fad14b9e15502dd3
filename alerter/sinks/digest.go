package sinks

import (
	"slices"
	"strings"

	"github.com/mcpmon/mcpmon/pkg/alert"
)

// digestTypes are the sink types that carry digests: the ones a person
// reads. PagerDuty's change events and Opsgenie's alerts are one per
// change by design; a day's list is not one.
var digestTypes = []string{TypeWebhook, TypeSlack, TypeEmail}

// digest checks the digest setting: a type that carries digests, a
// notify list with a change-event kind to digest, and a rule whose
// schedule parses.
func (p *problems) digest() {
	d := p.c.Digest
	if d == nil {
		return
	}
	if !slices.Contains(digestTypes, p.c.Type) {
		p.bad("digest", "type %s does not carry digests (%s do)", p.c.Type, strings.Join(digestTypes, ", "))
		return
	}
	if !slices.ContainsFunc(p.c.Notify, func(k string) bool { return k != alert.NotifyIncidents }) {
		p.bad("digest", "the notify list names no change-event kind to digest")
	}
	if _, err := d.Schedule(); err != nil {
		for _, e := range unjoin(err) {
			p.bad("digest", "%s", strings.TrimPrefix(e.Error(), alert.ErrDigestRule.Error()+": "))
		}
	}
}

// unjoin splits an errors.Join result into its errors.
func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}
