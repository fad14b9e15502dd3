package email

import (
	"context"
	"fmt"
	"strings"

	"github.com/mcpmon/mcpmon/pkg/alert"
)

var _ alert.GroupNotifier = (*Sink)(nil)

// NotifyGroup sends the mail for grouped notification n in one SMTP
// session.
func (s *Sink) NotifyGroup(ctx context.Context, n alert.GroupNotification) error {
	if err := s.deliver(ctx, s.GroupMessage(n)); err != nil {
		return err
	}
	s.logger.DebugContext(ctx, "email grouped notification sent", "group", n.GroupID, "kind", n.Kind, "members", len(n.Members), "recipients", len(s.to))
	return nil
}

// GroupSubject is the one-line subject of the mail for n.
func GroupSubject(n alert.GroupNotification) string {
	tag := "[mcpmon] DOWN: "
	if n.Kind == alert.KindResolve {
		tag = "[mcpmon] RESOLVED: "
	}
	return alert.Truncate(oneLine(tag+n.Headline()), 200)
}

// GroupBody is the plain-text body: the headline, then one line per
// member (at most alert.MaxListedMembers, the rest counted).
func GroupBody(n alert.GroupNotification) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s.\n\nSince %s.\n\n", n.Headline(), ts(n.StartedAt))
	for i, m := range n.Members {
		if i == alert.MaxListedMembers {
			fmt.Fprintf(&b, "...and %d more\n", len(n.Members)-i)
			break
		}
		name := m.EndpointName
		if name == "" {
			name = m.EndpointID
		}
		line := "- " + name
		if m.EndpointURL != "" {
			line += " (" + m.EndpointURL + ")"
		}
		if n.Kind == alert.KindOpen {
			if reason := strings.Trim(strings.TrimSpace(m.Class+": "+m.Reason), ": "); reason != "" {
				line += ": " + reason
			}
		}
		fmt.Fprintf(&b, "%s\n", line)
	}
	fmt.Fprintf(&b, "\n-- \nmcpmon · group %s · notification %s\n", n.GroupID, n.Key)
	return b.String()
}

// GroupMessage renders the complete RFC 5322 message for n; the resolve
// replies to the open's thread.
func (s *Sink) GroupMessage(n alert.GroupNotification) []byte {
	h, domain := s.headers(GroupSubject(n), n.Key, "")
	delete(h, "X-Mcpmon-Endpoint")
	h["X-Mcpmon-Event"] = "group-" + string(n.Kind)
	h["X-Mcpmon-Group"] = oneLine(n.GroupID)
	thread := "<" + IncidentThreadID(n.GroupID, domain) + ">"
	h["References"] = thread
	if n.Kind != alert.KindOpen {
		h["In-Reply-To"] = thread
	}
	return render(h, GroupBody(n))
}
