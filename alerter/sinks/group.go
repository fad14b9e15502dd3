package sinks

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mcpmon/mcpmon/pkg/alert"
)

// Bounds of a sink's group setting.
const (
	DefaultGroupWait = 30 * time.Second
	MinGroupWait     = time.Second
	MaxGroupWait     = time.Hour
	MaxGroupBy       = 5
)

// groupTypes are the sink types that render grouped notifications.
// PagerDuty and Opsgenie do not: each incident is its own alert there,
// deduplicated by the service (dedup_key, alias), which also does its own
// grouping (PagerDuty's Event Orchestration, Opsgenie's alert policies).
var groupTypes = []string{TypeWebhook, TypeSlack, TypeEmail}

// Group is a sink's group setting (Config.Group; alert.Grouping):
//
//	"group": {"by": ["class", "host"], "wait": "30s"}
//
// By lists what the incidents of a group share: "class", "host",
// "domain" or "label:<name>". Wait is how long a group collects after its
// first incident (default 30s).
type Group struct {
	By   []string      `json:"by"`
	Wait time.Duration `json:"-"`
}

type groupJSON struct {
	By   []string `json:"by"`
	Wait string   `json:"wait,omitempty"`
}

// MarshalJSON writes Wait as a duration string.
func (g Group) MarshalJSON() ([]byte, error) {
	j := groupJSON{By: g.By}
	if g.Wait != 0 {
		j.Wait = g.Wait.String()
	}
	return json.Marshal(j)
}

// UnmarshalJSON reads a Group strictly (unknown fields are errors).
func (g *Group) UnmarshalJSON(b []byte) error {
	var j groupJSON
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&j); err != nil {
		return fmt.Errorf("%w: group: %v", ErrInvalid, scrubJSONError(err))
	}
	*g = Group{By: j.By}
	if j.Wait != "" {
		d, err := time.ParseDuration(j.Wait)
		if err != nil {
			return fmt.Errorf("%w: group: wait %q: want a duration such as 30s", ErrInvalid, j.Wait)
		}
		g.Wait = d
	}
	return nil
}

// Grouping is g as the alerter reads it, Wait defaulted.
func (g Group) Grouping() alert.Grouping {
	w := g.Wait
	if w == 0 {
		w = DefaultGroupWait
	}
	return alert.Grouping{By: slices.Clone(g.By), Wait: w}
}

func (p *problems) group() {
	g := p.c.Group
	if g == nil {
		return
	}
	if !slices.Contains(groupTypes, p.c.Type) {
		p.bad("group", "type %s does not take grouped notifications (%s do): it dedups and groups incidents itself", p.c.Type, strings.Join(groupTypes, ", "))
		return
	}
	if len(g.By) == 0 || len(g.By) > MaxGroupBy {
		p.bad("group.by", "want 1 to %d of class, host, domain, label:<name>", MaxGroupBy)
	}
	seen := map[string]bool{}
	for _, d := range g.By {
		switch {
		case !alert.ValidGroupBy(d):
			p.bad("group.by", "%q: want class, host, domain or label:<name>", d)
		case seen[d]:
			p.bad("group.by", "%q listed twice", d)
		}
		seen[d] = true
	}
	if g.Wait != 0 && (g.Wait < MinGroupWait || g.Wait > MaxGroupWait) {
		p.bad("group.wait", "%s: want between %s and %s", g.Wait, MinGroupWait, MaxGroupWait)
	}
}

// grouped gives s the group setting g (none when g is nil).
func grouped(s alert.Sink, g *Group) alert.Sink {
	if g == nil {
		return s
	}
	return alert.Grouped(s, g.Grouping())
}
