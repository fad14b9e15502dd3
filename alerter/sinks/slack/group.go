package slack

import (
	"context"
	"fmt"
	"strings"

	"github.com/mcpmon/mcpmon/pkg/alert"
)

var _ alert.GroupNotifier = (*Sink)(nil)

// NotifyGroup posts the blocks of NewGroupMessage.
func (s *Sink) NotifyGroup(ctx context.Context, n alert.GroupNotification) error {
	resp, err := s.send(ctx, NewGroupMessage(n))
	if err != nil {
		return err
	}
	s.logger.DebugContext(ctx, "slack grouped notification delivered", "group", n.GroupID, "kind", n.Kind, "members", len(n.Members), "status", resp.Status)
	return nil
}

// NewGroupMessage renders a group as Block Kit: a header with the
// headline, one line per member (at most alert.MaxListedMembers, the rest
// counted), and a context line with the group ID.
func NewGroupMessage(n alert.GroupNotification) Message {
	emoji := "🔴"
	if n.Kind == alert.KindResolve {
		emoji = "✅"
	}
	headline := emoji + " " + n.Headline()
	var lines []string
	for i, m := range n.Members {
		if i == alert.MaxListedMembers {
			lines = append(lines, fmt.Sprintf("…and %d more", len(n.Members)-i))
			break
		}
		name := m.EndpointName
		if name == "" {
			name = m.EndpointID
		}
		line := "• " + escape(name)
		if m.EndpointURL != "" {
			line = "• <" + escapeURL(m.EndpointURL) + "|" + escape(name) + ">"
		}
		if n.Kind == alert.KindOpen && (m.Class != "" || m.Reason != "") {
			line += " — `" + escape(m.Class) + "` " + escape(m.Reason)
		}
		lines = append(lines, line)
	}
	return Message{
		Text: fallbackText(headline),
		Blocks: []Block{
			{Type: "header", Text: &Text{Type: "plain_text", Text: alert.Truncate(headline, MaxHeaderText), Emoji: true}},
			{Type: "section", Text: ptr(mrkdwn(alert.Truncate(strings.Join(lines, "\n"), MaxSectionText)))},
			{Type: "context", Elements: []Text{mrkdwn(alert.Truncate("mcpmon · group `"+escape(n.GroupID)+"` · since "+slackDate(n.StartedAt), MaxFieldText))}},
		},
	}
}
