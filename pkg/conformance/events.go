package conformance

import (
	"fmt"
	"strings"

	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/msg"
)

// EventSeverity is the severity of conformance events: advice, not an
// outage.
const EventSeverity = "info"

// Events returns the result events of going from prev to cur: one
// conformance_regressed naming every rule that passed in prev and fails in
// cur, and one conformance_restored naming every rule that failed in prev
// and passes in cur. A rule that was n/a on either side (not of the era,
// not checked yet) changes nothing. The fingerprint names the rules and
// the probe run that first saw the change, so a redelivered result is the
// same event and the next regression of the same rule a new one.
func Events(probeRunID string, prev, cur *msg.Conformance) []msg.Event {
	if prev == nil || cur == nil {
		return nil
	}
	var regressed, restored []msg.RuleResult
	for _, r := range cur.Rules {
		p, ok := prev.Rule(r.ID)
		if !ok {
			continue
		}
		switch {
		case p.Outcome == msg.ConformancePass && r.Outcome == msg.ConformanceFail:
			regressed = append(regressed, r)
		case p.Outcome == msg.ConformanceFail && r.Outcome == msg.ConformancePass:
			restored = append(restored, r)
		}
	}
	var out []msg.Event
	if len(regressed) > 0 {
		out = append(out, event(model.EventConformanceRegressed, "conformance regressed", probeRunID, cur.Era, regressed))
	}
	if len(restored) > 0 {
		out = append(out, event(model.EventConformanceRestored, "conformance restored", probeRunID, cur.Era, restored))
	}
	return out
}

func event(kind, headline, probeRunID, era string, rs []msg.RuleResult) msg.Event {
	ids := make([]string, len(rs))
	for i, r := range rs {
		ids[i] = r.ID
	}
	m := fmt.Sprintf("%s (%s): %s", headline, era, strings.Join(ids, ", "))
	if kind == model.EventConformanceRegressed && rs[0].Detail != "" {
		m += ": " + rs[0].Detail
	}
	return msg.Event{
		Kind: kind, Severity: EventSeverity, Message: m,
		Details:     map[string]any{"era": era, "rules": rs},
		Fingerprint: strings.Join(ids, ",") + "@" + probeRunID,
	}
}
