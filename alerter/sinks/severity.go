package sinks

import (
	"context"
	"slices"
	"strings"

	"github.com/mcpmon/mcpmon/pkg/alert"
	"github.com/mcpmon/mcpmon/pkg/model"
)

// Severities a sink can route on (Config.Severities).
var Severities = []string{model.SeverityCritical, model.SeverityWarning}

func (p *problems) severities() {
	for _, s := range p.c.Severities {
		if !slices.Contains(Severities, s) {
			p.bad("severities", "%q: want some of %s", s, strings.Join(Severities, ", "))
		}
	}
}

// routed returns s taking only the given severities (all when empty).
func routed(s alert.Sink, severities []string) alert.Sink {
	if len(severities) == 0 {
		return s
	}
	return severitySink{Sink: s, severities: slices.Clone(severities)}
}

// severitySink is a sink that takes only some severities, e.g. regional
// (warning) incidents to a chat channel and global (critical) ones to the
// pager.
type severitySink struct {
	alert.Sink
	severities []string
}

func (s severitySink) TakesSeverity(sev string) bool { return slices.Contains(s.severities, sev) }

func (s severitySink) MetricLabel() string { return alert.MetricLabel(s.Sink) }

// Subscribes, NotifyEvent and NotifyGroup reach the sink underneath, which embedding an
// interface hides.
func (s severitySink) Subscribes(kind string) bool { return alert.Subscribes(s.Sink, kind) }
func (s severitySink) NotifyEvent(ctx context.Context, n alert.EventNotification) error {
	return alert.ForwardEvent(ctx, s.Sink, n)
}
func (s severitySink) NotifyGroup(ctx context.Context, n alert.GroupNotification) error {
	return alert.ForwardGroup(ctx, s.Sink, n)
}
