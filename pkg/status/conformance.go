package status

// conformance.go is the public side of spec conformance: the line an
// endpoint's page and JSON show and its conformance badge, for endpoints
// whose owner opted in (model.Endpoint.PublicConformance). It shows what
// pkg/conformance's catalog names (rule IDs, the era, pass or fail) and
// never a rule's detail: a detail quotes what the server answered, which
// may name hosts of the owner's network.

import (
	"fmt"
	"slices"

	"github.com/mcpmon/mcpmon/pkg/conformance"
	"github.com/mcpmon/mcpmon/pkg/msg"
)

// ConformanceRulesURL is the rules' documentation, linked from the line.
const ConformanceRulesURL = "https://github.com/mcpmon/mcpmon/blob/main/docs/reference/conformance.md"

// ConformanceBadgeLabel is the left half of the conformance badge.
const ConformanceBadgeLabel = "mcp spec"

// ConformanceLine is an endpoint's conformance as its public page shows it.
type ConformanceLine struct {
	// Known: a probe judged at least one rule of Era; otherwise the line
	// reads "not checked yet" and the rest is empty.
	Known bool
	Era   string
	// Passed of Checked rules pass; Checked counts the rules of the era
	// judged pass or fail (n/a ones are left out). Failing are the IDs of
	// the others, in catalog order.
	Passed, Checked int
	Failing         []string
}

// Text is the line in words.
func (l ConformanceLine) Text() string {
	if !l.Known {
		return "MCP spec: not checked yet"
	}
	return fmt.Sprintf("MCP spec: %d of %d checks pass (era %s)", l.Passed, l.Checked, l.Era)
}

// RulesURL is ConformanceRulesURL, for the templates.
func (ConformanceLine) RulesURL() string { return ConformanceRulesURL }

// conformanceLine is c as a public line. Only what the catalog names
// reaches it: an era no rule applies to and rule IDs the catalog lacks (a
// corrupt or newer record) count as not judged, so no stored string is
// shown unless mcpmon itself defines it.
func conformanceLine(c *msg.Conformance) ConformanceLine {
	var l ConformanceLine
	if c == nil {
		return l
	}
	for _, rule := range conformance.Rules() {
		if !rule.Applies(c.Era) {
			continue
		}
		res, ok := c.Rule(rule.ID)
		if !ok {
			continue
		}
		switch res.Outcome {
		case msg.ConformancePass:
			l.Passed++
		case msg.ConformanceFail:
			l.Failing = append(l.Failing, rule.ID)
		default:
			continue
		}
		l.Checked++
	}
	if l.Checked > 0 {
		l.Known, l.Era = true, c.Era
	}
	return l
}

// conformanceBadgeColours: green when every judged rule passes, red when
// one fails, grey while nothing is known.
const (
	conformancePassColour    = "#4c1"
	conformanceFailColour    = "#e05d44"
	conformanceUnknownColour = "#9f9f9f"
)

// ConformanceBadge renders the conformance badge of l: "mcp spec" and
// "13/13 pass", "12/13 pass" or "unknown".
func ConformanceBadge(l ConformanceLine) []byte {
	message, colour := "unknown", conformanceUnknownColour
	if l.Known {
		message = fmt.Sprintf("%d/%d pass", l.Passed, l.Checked)
		colour = conformancePassColour
		if len(l.Failing) > 0 {
			colour = conformanceFailColour
		}
	}
	return renderBadge(ConformanceBadgeLabel, message, colour)
}

// ConformanceJSON is the conformance member of the public JSON.
type ConformanceJSON struct {
	// Era is null until a probe judged a rule.
	Era     *string `json:"era"`
	Passed  int     `json:"passed"`
	Checked int     `json:"checked"`
	// Failing are the failing rules' IDs (docs/reference/conformance.md).
	Failing  []string `json:"failing"`
	Text     string   `json:"text"`
	RulesURL string   `json:"rulesUrl"`
}

// conformanceJSON is l's JSON, or nil without a line (not opted in).
func conformanceJSON(l *ConformanceLine) *ConformanceJSON {
	if l == nil {
		return nil
	}
	j := &ConformanceJSON{Passed: l.Passed, Checked: l.Checked, Failing: slices.Clone(l.Failing), Text: l.Text(), RulesURL: ConformanceRulesURL}
	if j.Failing == nil {
		j.Failing = []string{}
	}
	if l.Known {
		era := l.Era
		j.Era = &era
	}
	return j
}
