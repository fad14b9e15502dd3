package slack

import (
	"context"
	"fmt"
	"strings"

	"github.com/mcpmon/mcpmon/pkg/alert"
)

var _ alert.DigestNotifier = (*Sink)(nil)

// NotifyDigest posts the blocks of NewDigestMessage.
func (s *Sink) NotifyDigest(ctx context.Context, n alert.DigestNotification) error {
	resp, err := s.send(ctx, NewDigestMessage(n))
	if err != nil {
		return err
	}
	s.logger.DebugContext(ctx, "slack digest delivered", "scope", n.Scope, "period_start", n.PeriodStart, "events", n.Total, "status", resp.Status)
	return nil
}

// digestLinesPerBlock keeps each section of a digest under Slack's
// section text limit with room to spare.
const digestLinesPerBlock = 10

// NewDigestMessage renders a digest as Block Kit: a header with the
// period and the count, one line per event in sections of a few lines
// (within MaxBlocks), and a context line saying how many were left out.
func NewDigestMessage(n alert.DigestNotification) Message {
	headline := fmt.Sprintf("🗞️ mcpmon %s digest: %d change", n.Every, n.Total)
	if n.Total != 1 {
		headline += "s"
	}
	blocks := []Block{{Type: "header", Text: &Text{Type: "plain_text", Text: alert.Truncate(headline, MaxHeaderText), Emoji: true}},
		{Type: "context", Elements: []Text{mrkdwn(alert.Truncate(slackDate(n.PeriodStart)+" → "+slackDate(n.PeriodEnd)+" · "+escape(n.Scope), MaxFieldText))}}}
	var lines []string
	shown := 0
	flush := func() {
		if len(lines) > 0 {
			blocks = append(blocks, Block{Type: "section", Text: ptr(mrkdwn(alert.Truncate(strings.Join(lines, "\n"), MaxSectionText)))})
			lines = nil
		}
	}
	for _, e := range n.Events {
		if len(blocks) >= MaxBlocks-2 {
			break
		}
		name := e.EndpointName
		if name == "" {
			name = e.EndpointID
		}
		lines = append(lines, alert.Truncate(fmt.Sprintf("• %s *%s* `%s` %s", slackDate(e.ObservedAt), escape(name), escape(e.Kind), escape(e.Message)), 280))
		shown++
		if len(lines) == digestLinesPerBlock {
			flush()
		}
	}
	flush()
	if left := n.Total - shown; left > 0 {
		blocks = append(blocks, Block{Type: "context", Elements: []Text{mrkdwn(fmt.Sprintf("and %d more not listed", left))}})
	}
	return Message{Text: fallbackText(headline), Blocks: blocks}
}
