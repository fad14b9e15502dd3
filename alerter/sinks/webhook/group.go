package webhook

import (
	"context"
	"time"

	"github.com/mcpmon/mcpmon/pkg/alert"
)

// GroupPayloadVersion is bumped on any incompatible change of GroupPayload.
const GroupPayloadVersion = 1

// GroupPayload is the JSON body of a grouped delivery (a sink with a
// group setting), told apart from an incident's Payload by "type":
// "group". X-Mcpmon-Event is "group-open" or "group-resolve". Like Payload
// it is a pure function of the notification, so a redelivery carries the
// same body and Idempotency-Key.
//
//	{"version":1,"type":"group","key":"group-default-3f…-1772366400:open:hook","kind":"open",
//	 "groupId":"group-default-3f…-1772366400","by":{"class":"refused","host":"gw.example.com"},
//	 "startedAt":"2026-03-01T12:00:00Z","count":2,
//	 "members":[{"incidentId":"ep1-20260301T115900Z","endpoint":{"id":"ep1","name":"docs","url":"https://gw.example.com/docs"},
//	   "class":"refused","reason":"connection refused","firstFailure":"…","openedAt":"…"}, …]}
type GroupPayload struct {
	Version    int               `json:"version"`
	Type       string            `json:"type"` // always "group"
	Key        string            `json:"key"`
	Kind       alert.Kind        `json:"kind"` // open | resolve
	Tenant     string            `json:"tenant,omitempty"`
	GroupID    string            `json:"groupId"`
	By         map[string]string `json:"by"`
	StartedAt  time.Time         `json:"startedAt"`
	ResolvedAt *time.Time        `json:"resolvedAt,omitempty"`
	Count      int               `json:"count"`
	Members    []GroupMember     `json:"members"`
}

// GroupMember is one incident of a GroupPayload.
type GroupMember struct {
	IncidentID   string    `json:"incidentId"`
	Endpoint     Endpoint  `json:"endpoint"`
	Class        string    `json:"class,omitempty"`
	Reason       string    `json:"reason,omitempty"`
	Severity     string    `json:"severity,omitempty"`
	FirstFailure time.Time `json:"firstFailure"`
	OpenedAt     time.Time `json:"openedAt"`
}

// NewGroupPayload builds the webhook body for n: every member, since a
// receiver acts on each.
func NewGroupPayload(n alert.GroupNotification) GroupPayload {
	p := GroupPayload{
		Version: GroupPayloadVersion, Type: "group", Key: n.Key, Kind: n.Kind, Tenant: n.Tenant, GroupID: n.GroupID,
		By: n.By, StartedAt: n.StartedAt.UTC(), ResolvedAt: utcPtr(n.ResolvedAt), Count: len(n.Members),
		Members: make([]GroupMember, len(n.Members)),
	}
	for i, m := range n.Members {
		p.Members[i] = GroupMember{
			IncidentID: m.IncidentID, Endpoint: Endpoint{ID: m.EndpointID, Name: m.EndpointName, URL: m.EndpointURL, Labels: m.Labels},
			Class: m.Class, Reason: m.Reason, Severity: m.Severity, FirstFailure: m.FirstFailure.UTC(), OpenedAt: m.OpenedAt.UTC(),
		}
	}
	return p
}

var _ alert.GroupNotifier = (*Sink)(nil)

// NotifyGroup POSTs the GroupPayload of n, signed like an incident's.
func (s *Sink) NotifyGroup(ctx context.Context, n alert.GroupNotification) error {
	resp, err := s.send(ctx, NewGroupPayload(n), n.Key, "group-"+string(n.Kind))
	if err != nil {
		return err
	}
	s.logger.DebugContext(ctx, "webhook grouped notification delivered", "group", n.GroupID, "kind", n.Kind, "members", len(n.Members), "status", resp.Status)
	return nil
}
