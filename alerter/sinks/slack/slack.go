// Package slack is the Slack incoming-webhook alert sink. The alerter hands
// it an alert.Notification; it POSTs one Block Kit message (a header, a
// section with the reason and fields, a context line) with a plain `text`
// fallback for notifications and clients without blocks. A 429 from Slack
// becomes an *alert.RetryAfterError carrying Slack's Retry-After.
//
// Slack webhooks have no idempotency key: a crash between the POST and the
// ledger mark can post a message twice (see the alerter README for the
// window). The webhook URL is the credential and never appears in errors
// or logs.
package slack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/mcpmon/mcpmon/alerter/sinks/post"
	"github.com/mcpmon/mcpmon/pkg/alert"
	"github.com/mcpmon/mcpmon/pkg/clock"
)

// Block Kit limits (Slack reference: blocks, composition objects).
const (
	MaxBlocks        = 50
	MaxHeaderText    = 150
	MaxSectionText   = 3000
	MaxSectionFields = 10
	MaxFieldText     = 2000
	MaxContextElems  = 10
	MaxFallbackText  = 4000 // Slack truncates long messages; keep the fallback short
)

// DefaultTimeout bounds one delivery attempt.
const DefaultTimeout = 10 * time.Second

// Message is the incoming-webhook JSON body.
type Message struct {
	Text   string  `json:"text"`
	Blocks []Block `json:"blocks"`
}

// Block is one Block Kit layout block (header, section or context).
type Block struct {
	Type     string `json:"type"`
	Text     *Text  `json:"text,omitempty"`
	Fields   []Text `json:"fields,omitempty"`
	Elements []Text `json:"elements,omitempty"`
}

// Text is a Block Kit text composition object.
type Text struct {
	Type  string `json:"type"` // plain_text | mrkdwn
	Text  string `json:"text"`
	Emoji bool   `json:"emoji,omitempty"` // plain_text only
}

// Options configure a Sink.
type Options struct {
	Name    string
	URL     string // the incoming-webhook URL: a secret
	Client  *http.Client
	Timeout time.Duration // default DefaultTimeout
	Clock   clock.Clock
	Logger  *slog.Logger
}

// ErrConfig reports an unusable sink configuration.
var ErrConfig = errors.New("invalid slack sink configuration")

// Sink posts notifications to a Slack incoming webhook.
type Sink struct {
	name   string
	url    string
	client *http.Client
	clock  clock.Clock
	logger *slog.Logger
}

var _ alert.Sink = (*Sink)(nil)

// New returns a Slack sink.
func New(o Options) (*Sink, error) {
	if o.Name == "" {
		return nil, fmt.Errorf("%w: name is required", ErrConfig)
	}
	if o.URL == "" {
		return nil, fmt.Errorf("%w: sink %q: url (the incoming-webhook URL) is required", ErrConfig, o.Name)
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Sink{
		name:   o.Name,
		url:    o.URL,
		client: post.Client(o.Client, o.Timeout),
		clock:  o.Clock,
		logger: o.Logger.With("sink", o.Name, "sink_type", "slack"),
	}, nil
}

// Name returns the sink name.
func (s *Sink) Name() string { return s.name }

// Notify posts the Block Kit message for n.
func (s *Sink) Notify(ctx context.Context, n alert.Notification) error {
	resp, err := s.send(ctx, NewMessage(n))
	if err != nil {
		return err
	}
	s.logger.DebugContext(ctx, "slack alert delivered", "incident", n.IncidentID, "kind", n.Kind, "status", resp.Status)
	return nil
}

// send posts msg to the incoming webhook: the one delivery path of
// incidents and change events.
func (s *Sink) send(ctx context.Context, msg Message) (*post.Response, error) {
	body, err := json.Marshal(msg)
	if err != nil {
		return nil, fmt.Errorf("sink %q: %w: encode message: %w", s.name, alert.ErrPermanent, err)
	}
	return post.Do(ctx, s.client, post.Request{
		Sink: s.name, URL: s.url, Body: body, Now: s.clock.Now,
		Header: http.Header{"Content-Type": {"application/json; charset=utf-8"}},
	})
}

// NewMessage renders n as a Block Kit message within Slack's limits.
func NewMessage(n alert.Notification) Message {
	name := n.EndpointName
	if name == "" {
		name = n.EndpointID
	}
	var emoji, headline string
	switch n.Kind {
	case alert.KindResolve:
		emoji, headline = "✅", name+" recovered"
	case alert.KindReminder:
		emoji, headline = "⏰", fmt.Sprintf("%s is still down (reminder %d)", name, n.Sequence)
	case alert.KindUpdate:
		emoji, headline = "📝", name+": update"
		if n.Update != nil {
			headline += " (" + n.Update.Status + ")"
		}
	default:
		emoji, headline = "🔴", name+" is down"
	}
	if n.State == "acknowledged" && n.Kind != alert.KindResolve {
		headline += " (acknowledged)"
	}

	why := "*Reason:* " + escape(orDash(n.Reason))
	if n.Class != "" {
		why = "*Reason:* `" + escape(n.Class) + "` " + escape(n.Reason)
	}
	if n.Kind == alert.KindResolve && n.ResolvedAt != nil {
		why = fmt.Sprintf("Back up after %s. Last failure: %s", n.ResolvedAt.Sub(n.OpenedAt).Round(time.Second), why[len("*Reason:* "):])
	}
	if n.Kind == alert.KindUpdate && n.Update != nil {
		why = "*" + escape(n.Update.Status) + "* · " + slackDate(n.Update.At) + "\n" + escape(n.Update.Message)
	}

	endpoint := escape(name)
	if n.EndpointURL != "" {
		endpoint = "<" + escapeURL(n.EndpointURL) + "|" + escape(name) + ">"
	}
	fields := []Text{
		mrkdwn("*Endpoint*\n" + endpoint),
		mrkdwn("*Incident*\n`" + escape(n.IncidentID) + "`"),
		mrkdwn("*First failure*\n" + slackDate(n.FirstFailure)),
		mrkdwn("*Opened*\n" + slackDate(n.OpenedAt)),
	}
	if n.ResolvedAt != nil {
		fields = append(fields, mrkdwn("*Resolved*\n"+slackDate(*n.ResolvedAt)))
	}
	if n.State != "" {
		fields = append(fields, mrkdwn("*State*\n"+escape(n.State)))
	}
	for i := range fields {
		fields[i].Text = alert.Truncate(fields[i].Text, MaxFieldText)
	}

	ctxLine := "mcpmon · endpoint `" + escape(n.EndpointID) + "`"
	if len(n.Labels) > 0 {
		ctxLine += " · " + escape(labels(n.Labels))
	}

	fallback := fmt.Sprintf("%s %s", emoji, headline)
	switch {
	case n.Kind == alert.KindUpdate && n.Update != nil:
		fallback += ": " + n.Update.Message
	case n.Kind != alert.KindResolve && (n.Class != "" || n.Reason != ""):
		fallback += ": " + strings.TrimSpace(n.Class+" "+n.Reason)
	}
	fallback += " (incident " + n.IncidentID + ")"

	return Message{
		Text: fallbackText(fallback),
		Blocks: []Block{
			{Type: "header", Text: &Text{Type: "plain_text", Text: alert.Truncate(emoji+" "+headline, MaxHeaderText), Emoji: true}},
			{Type: "section", Text: ptr(mrkdwn(alert.Truncate(why, MaxSectionText))), Fields: fields},
			{Type: "context", Elements: []Text{mrkdwn(alert.Truncate(ctxLine, MaxFieldText))}},
		},
	}
}

func mrkdwn(s string) Text { return Text{Type: "mrkdwn", Text: s} }
func ptr[T any](v T) *T    { return &v }

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

// escape applies Slack's three mrkdwn control-character escapes so user
// text (endpoint names, reasons) cannot forge links or mentions.
func escape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

// fallbackText is the message's `text`: Slack parses it as mrkdwn and puts
// it in the channel notification, so the name and the target's error in it
// are escaped like the blocks' (escaped before the cut: a cut entity is
// harmless, a cut escape is not).
func fallbackText(s string) string { return alert.Truncate(escape(s), MaxFallbackText) }

// escapeURL keeps a URL usable inside <url|text>: '|' and '>' would end it.
func escapeURL(s string) string {
	return strings.NewReplacer("|", "%7C", ">", "%3E", "<", "%3C").Replace(s)
}

// slackDate renders t in each reader's own time zone, with a UTC fallback
// for clients that cannot.
func slackDate(t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	return fmt.Sprintf("<!date^%d^{date_short_pretty} {time_secs}|%s>", t.Unix(), t.UTC().Format("2006-01-02 15:04:05 UTC"))
}

func labels(m map[string]string) string {
	keys := slices.Sorted(maps.Keys(m)) // deterministic message
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + m[k]
	}
	return strings.Join(parts, ", ")
}

// truncate cuts s to at most n characters (runes), marking the cut.
