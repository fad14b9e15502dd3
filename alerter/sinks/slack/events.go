package slack

import (
	"bytes"
	"context"
	"encoding/json"

	"github.com/mcpmon/mcpmon/pkg/alert"
	"github.com/mcpmon/mcpmon/pkg/model"
)

var _ alert.EventNotifier = (*Sink)(nil)

// NotifyEvent posts the blocks of NewEventMessage.
func (s *Sink) NotifyEvent(ctx context.Context, n alert.EventNotification) error {
	resp, err := s.send(ctx, NewEventMessage(n))
	if err != nil {
		return err
	}
	s.logger.DebugContext(ctx, "slack change event delivered", "endpoint", n.EndpointID, "kind", n.Kind, "status", resp.Status)
	return nil
}

// eventHeadlines: emoji and wording per change-event kind.
var eventHeadlines = map[string][2]string{
	model.EventCatalogBreaking:      {"💥", "tool catalog changed (breaking)"},
	model.EventCatalogInfo:          {"🧩", "tool catalog changed"},
	model.EventCatalogSecurity:      {"🛡️", "tool description changed (security)"},
	model.EventVersion:              {"🔀", "version changed"},
	model.EventCertificateExpiry:    {"🔒", "TLS certificate expires soon"},
	model.EventCredentialExpiry:     {"🔑", "probe credential expires soon"},
	model.EventCatalogDivergent:     {"🌐", "regions disagree on the tool catalog"},
	model.EventAuthServerChanged:    {"🚨", "OAuth authorization server changed (not followed)"},
	model.EventConformanceRegressed: {"📏", "spec conformance regressed"},
	model.EventConformanceRestored:  {"📐", "spec conformance restored"},
}

// NewEventMessage renders a change event as Block Kit: a header, the
// message, fields (endpoint, before → after, when), the catalog diff as a
// code block when there is one, and a context line with the fingerprint.
func NewEventMessage(n alert.EventNotification) Message {
	name := n.EndpointName
	if name == "" {
		name = n.EndpointID
	}
	h, ok := eventHeadlines[n.Kind]
	if !ok {
		h = [2]string{"ℹ️", n.Kind}
	}
	headline := h[0] + " " + name + ": " + h[1]
	if n.Suppressed != nil {
		headline += " (flapping)"
	}
	endpoint := escape(name)
	if n.EndpointURL != "" {
		endpoint = "<" + escapeURL(n.EndpointURL) + "|" + escape(name) + ">"
	}
	fields := []Text{
		mrkdwn("*Endpoint*\n" + endpoint),
		mrkdwn("*Kind*\n`" + escape(n.Kind) + "`"),
		mrkdwn("*Observed*\n" + slackDate(n.ObservedAt)),
	}
	if n.Before != "" || n.After != "" {
		fields = append(fields, mrkdwn("*Before → after*\n`"+escape(orDash(n.Before))+"` → `"+escape(orDash(n.After))+"`"))
	}
	for i := range fields {
		fields[i].Text = alert.Truncate(fields[i].Text, MaxFieldText)
	}
	blocks := []Block{
		{Type: "header", Text: &Text{Type: "plain_text", Text: alert.Truncate(headline, MaxHeaderText), Emoji: true}},
		{Type: "section", Text: ptr(mrkdwn(alert.Truncate(escape(n.Message), MaxSectionText))), Fields: fields},
	}
	if len(n.Diff) > 0 {
		var pretty bytes.Buffer
		if json.Indent(&pretty, n.Diff, "", "  ") != nil {
			pretty.Reset()
			pretty.Write(n.Diff)
		}
		// The fences take 8 characters of the section's limit.
		blocks = append(blocks, Block{Type: "section", Text: ptr(mrkdwn("```" + alert.Truncate(escape(pretty.String()), MaxSectionText-8) + "```"))})
	}
	blocks = append(blocks, Block{Type: "context", Elements: []Text{mrkdwn(alert.Truncate(
		"mcpmon · endpoint `"+escape(n.EndpointID)+"` · event `"+escape(n.Fingerprint)+"`", MaxFieldText))}})
	return Message{Text: fallbackText(headline + ": " + n.Message), Blocks: blocks}
}
