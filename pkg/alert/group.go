// Grouped notifications: what the alerter hands a sink configured with a
// group setting when several incidents of one tenant open for one cause
// (alerter/group.go decides which), the optional interface a sink
// implements to carry them, and the wrapper that gives a sink its setting.

package alert

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Group dimensions a sink's Grouping.By may hold, besides GroupByLabel
// followed by a label name.
const (
	// GroupByClass: the same failure class (refused, timeout, tls, ...).
	GroupByClass = "class"
	// GroupByHost: the same host name in the endpoint's URL (one gateway
	// fronting many servers under different paths or ports).
	GroupByHost = "host"
	// GroupByDomain: the same host suffix, the URL host's last two labels
	// (many servers of one hosting provider).
	GroupByDomain = "domain"
	// GroupByLabel prefixes a label name: "label:team" groups the
	// endpoints that share the team label's value.
	GroupByLabel = "label:"
)

// ValidGroupBy reports whether dim may appear in a sink's group by.
func ValidGroupBy(dim string) bool {
	switch dim {
	case GroupByClass, GroupByHost, GroupByDomain:
		return true
	}
	name, ok := strings.CutPrefix(dim, GroupByLabel)
	return ok && name != ""
}

// Grouping is a sink's group setting (Alertmanager's group_by and
// group_wait): the incidents of one tenant whose By values are all equal
// and that open within Wait of the group's first are sent as one
// GroupNotification.
type Grouping struct {
	By   []string
	Wait time.Duration
}

// Grouper is implemented by sinks with a group setting.
type Grouper interface {
	Grouping() Grouping
}

// GroupingOf returns s's group setting; ok is false for a sink that takes
// every incident one at a time (the default).
func GroupingOf(s Sink) (g Grouping, ok bool) {
	gr, ok := s.(Grouper)
	if !ok {
		return Grouping{}, false
	}
	g = gr.Grouping()
	return g, len(g.By) > 0 && g.Wait > 0
}

// GroupNotification is one group of incidents for one sink: opened
// together (Kind open) or all recovered (Kind resolve).
type GroupNotification struct {
	// Key is the once-only ledger key (msg.GroupLedgerKey): tenant, group,
	// the group's start, kind and sink.
	Key    string `json:"key"`
	Kind   Kind   `json:"kind"` // open | resolve
	Tenant string `json:"tenant,omitempty"`
	// GroupID names the group across its open and resolve (a digest of the
	// tenant, the group key and the start).
	GroupID string `json:"groupId"`
	// By holds the values the members share, by dimension ("class",
	// "host", "label:team", ...).
	By        map[string]string `json:"by"`
	StartedAt time.Time         `json:"startedAt"`
	// ResolvedAt is when the last member recovered (resolve only).
	ResolvedAt *time.Time    `json:"resolvedAt,omitempty"`
	Members    []GroupMember `json:"members"`
}

// MaxListedMembers bounds how many members a chat or mail rendering of a
// group lists one by one; the rest are counted.
const MaxListedMembers = 25

// Headline is the one-line summary every rendering of n starts with:
// "12 endpoints down: class=refused, host=gw.example.com" (or "... recovered").
func (n GroupNotification) Headline() string {
	what := "down"
	if n.Kind == KindResolve {
		what = "recovered"
	}
	keys := make([]string, 0, len(n.By))
	for k := range n.By {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = strings.TrimPrefix(k, GroupByLabel) + "=" + n.By[k]
	}
	return fmt.Sprintf("%d endpoints %s: %s", len(n.Members), what, strings.Join(parts, ", "))
}

// GroupMember is one incident of a group.
type GroupMember struct {
	EndpointID   string            `json:"endpointId"`
	EndpointName string            `json:"endpointName"`
	EndpointURL  string            `json:"endpointUrl"` // without userinfo or query secrets
	Labels       map[string]string `json:"labels,omitempty"`
	IncidentID   string            `json:"incidentId"`
	Class        string            `json:"class,omitempty"`
	Reason       string            `json:"reason,omitempty"`
	Severity     string            `json:"severity,omitempty"`
	FirstFailure time.Time         `json:"firstFailure"`
	OpenedAt     time.Time         `json:"openedAt"`
}

// GroupNotifier is implemented by sinks that can carry grouped
// notifications.
type GroupNotifier interface {
	// NotifyGroup delivers n; errors as for Sink.Notify.
	NotifyGroup(ctx context.Context, n GroupNotification) error
}

// ForwardGroup delivers n through s when it carries groups, for wrappers
// that embed a Sink (whose other methods embedding hides).
func ForwardGroup(ctx context.Context, s Sink, n GroupNotification) error {
	if gn, ok := s.(GroupNotifier); ok {
		return gn.NotifyGroup(ctx, n)
	}
	return noGroupsError(s.Name())
}

type noGroupsError string

func (e noGroupsError) Error() string {
	return "sink " + string(e) + " does not carry grouped notifications: " + ErrPermanent.Error()
}
func (e noGroupsError) Unwrap() error { return ErrPermanent }

// Grouped wraps s with group setting g (none when g.By is empty). The
// wrapper keeps every opt-in of s: its notify list, severity routing,
// metric label, change events and grouped notifications.
func Grouped(s Sink, g Grouping) Sink {
	if len(g.By) == 0 {
		return s
	}
	g.By = append([]string(nil), g.By...)
	return grouped{Sink: s, g: g}
}

type grouped struct {
	Sink
	g Grouping
}

func (s grouped) Grouping() Grouping {
	g := s.g
	g.By = append([]string(nil), g.By...)
	return g
}
func (s grouped) Subscribes(kind string) bool   { return Subscribes(s.Sink, kind) }
func (s grouped) TakesSeverity(sev string) bool { return Takes(s.Sink, sev) }
func (s grouped) MetricLabel() string           { return MetricLabel(s.Sink) }
func (s grouped) NotifyEvent(ctx context.Context, n EventNotification) error {
	return ForwardEvent(ctx, s.Sink, n)
}
func (s grouped) NotifyGroup(ctx context.Context, n GroupNotification) error {
	return ForwardGroup(ctx, s.Sink, n)
}
