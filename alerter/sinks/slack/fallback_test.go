package slack

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/alert"
)

// TestFallbackTextCannotMentionOrLink: the `text` Slack shows in the channel
// notification carries the endpoint's name and the target's error; a
// mention or a link in either arrives escaped, for every incident kind and
// for change events, through a real HTTP exchange.
func TestFallbackTextCannotMentionOrLink(t *testing.T) {
	const hostile = "<!channel> <https://evil.example|click> & <@U123>"
	incident := func(k alert.Kind) func(*Sink) error {
		return func(s *Sink) error {
			n := notification(k)
			n.EndpointName, n.Reason = "db "+hostile, "502 "+hostile
			return s.Notify(t.Context(), n)
		}
	}
	cases := []struct {
		name string
		send func(*Sink) error
	}{
		{"open", incident(alert.KindOpen)},
		{"reminder", incident(alert.KindReminder)},
		{"resolve", incident(alert.KindResolve)},
		{"event", func(s *Sink) error {
			return s.NotifyEvent(t.Context(), alert.EventNotification{
				Key: "event-ep1-version-1:slack", Kind: "version", EndpointID: "ep1", EndpointName: "db " + hostile,
				Message: "version changed " + hostile, ObservedAt: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC),
			})
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := newReceiver(t)
			s, err := New(Options{Name: "slack", URL: hookURL(r)})
			if err != nil {
				t.Fatal(err)
			}
			if err := c.send(s); err != nil {
				t.Fatal(err)
			}
			body := r.Bodies()[0]
			var m Message
			if err := json.Unmarshal(body, &m); err != nil {
				t.Fatal(err)
			}
			if strings.ContainsAny(m.Text, "<>") {
				t.Errorf("fallback text %q carries a raw < or >: Slack would render a mention or a link", m.Text)
			}
			if !strings.Contains(m.Text, "&lt;!channel&gt;") || !strings.Contains(m.Text, "&amp;") {
				t.Errorf("fallback text %q: want the name escaped (&lt;!channel&gt;, &amp;)", m.Text)
			}
		})
	}
}

// TestFallbackText: Slack's three escapes, then the length cut.
func TestFallbackText(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"plain", "plain"},
		{"a & b", "a &amp; b"},
		{"<!here>", "&lt;!here&gt;"},
		{"<https://x|y>", "&lt;https://x|y&gt;"},
		{"&lt;", "&amp;lt;"},
	} {
		if got := fallbackText(c.in); got != c.want {
			t.Errorf("fallbackText(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	if got := fallbackText(strings.Repeat("<", 5000)); len([]rune(got)) > MaxFallbackText || strings.Contains(got, "<") {
		t.Errorf("long hostile text: %d runes, raw < kept: %v", len([]rune(got)), strings.Contains(got, "<"))
	}
}
