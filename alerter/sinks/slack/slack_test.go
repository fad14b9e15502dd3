package slack

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/mcpmon/mcpmon/pkg/alert"
	"github.com/mcpmon/mcpmon/pkg/clock"
	"github.com/mcpmon/mcpmon/pkg/testpeers"
)

const hookToken = "XXXXSECRETXXXXtoken42"

var (
	opened   = time.Date(2026, 3, 4, 5, 0, 0, 0, time.UTC)
	resolved = opened.Add(30 * time.Minute)
)

func notification(kind alert.Kind) alert.Notification {
	n := alert.Notification{
		Key:          "alert-ep1-ep1-20260304T050000Z:" + string(kind) + ":slack-ops",
		Kind:         kind,
		EndpointID:   "ep1",
		EndpointName: "billing <!channel> & co",
		EndpointURL:  "https://mcp.example.com/mcp",
		Labels:       map[string]string{"team": "payments", "env": "prod"},
		IncidentID:   "ep1-20260304T050000Z",
		State:        "open",
		Class:        "http_5xx",
		Reason:       "initialize answered 502 <html>",
		FirstFailure: opened.Add(-time.Minute),
		OpenedAt:     opened,
	}
	switch kind {
	case alert.KindResolve:
		n.State = "resolved"
		r := resolved
		n.ResolvedAt = &r
	case alert.KindReminder:
		n.Sequence = 2
	}
	return n
}

// newReceiver stands in for hooks.slack.com: it refuses what is not a JSON
// POST as Slack does, answers "ok" (or the error code and status the test
// sets) and keeps the raw bodies.
func newReceiver(t *testing.T) *testpeers.Receiver {
	r := testpeers.NewReceiver(t, func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			if req.Method != http.MethodPost || !strings.HasPrefix(req.Header.Get("Content-Type"), "application/json") {
				http.Error(w, "invalid_payload", http.StatusBadRequest)
				return
			}
			next.ServeHTTP(w, req)
		})
	})
	r.Answer(http.StatusOK, nil, "ok")
	return r
}

// hookURL is the receiver's URL in Slack's shape, with the secret token.
func hookURL(r *testpeers.Receiver) string { return r.URL + "/services/T000/B000/" + hookToken }

// validateMessage checks a body against Slack's documented incoming-webhook
// and Block Kit shape: only known keys, known block types, text objects of
// the right type and within their length limits.
func validateMessage(t *testing.T, body []byte) Message {
	t.Helper()
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil {
		t.Fatalf("body is not a JSON object: %v", err)
	}
	for k := range top {
		if k != "text" && k != "blocks" {
			t.Errorf("unexpected top-level field %q", k)
		}
	}
	var m Message
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("body does not match the documented shape: %v", err)
	}
	if strings.TrimSpace(m.Text) == "" {
		t.Error("text fallback is empty: notifications would show nothing")
	}
	if n := len(m.Blocks); n == 0 || n > MaxBlocks {
		t.Errorf("%d blocks, want 1..%d", n, MaxBlocks)
	}
	checkText := func(where string, tx *Text, types string, max int) {
		if tx == nil {
			t.Errorf("%s: text object missing", where)
			return
		}
		if !strings.Contains(types, tx.Type) {
			t.Errorf("%s: text type %q, want %s", where, tx.Type, types)
		}
		if tx.Emoji && tx.Type != "plain_text" {
			t.Errorf("%s: emoji is only valid on plain_text", where)
		}
		if l := utf8.RuneCountInString(tx.Text); l == 0 || l > max {
			t.Errorf("%s: text length %d, want 1..%d", where, l, max)
		}
	}
	for i, b := range m.Blocks {
		switch b.Type {
		case "header":
			checkText("header", b.Text, "plain_text", MaxHeaderText)
			if b.Fields != nil || b.Elements != nil {
				t.Error("header block carries fields/elements")
			}
		case "section":
			checkText("section", b.Text, "mrkdwn plain_text", MaxSectionText)
			if len(b.Fields) > MaxSectionFields {
				t.Errorf("section has %d fields, max %d", len(b.Fields), MaxSectionFields)
			}
			for j := range b.Fields {
				checkText("section field", &b.Fields[j], "mrkdwn plain_text", MaxFieldText)
			}
		case "context":
			if n := len(b.Elements); n == 0 || n > MaxContextElems {
				t.Errorf("context has %d elements, want 1..%d", n, MaxContextElems)
			}
			for j := range b.Elements {
				checkText("context element", &b.Elements[j], "mrkdwn plain_text", MaxFieldText)
			}
		default:
			t.Errorf("block %d: unsupported type %q", i, b.Type)
		}
	}
	return m
}

func allText(m Message) string {
	var sb strings.Builder
	sb.WriteString(m.Text)
	for _, b := range m.Blocks {
		if b.Text != nil {
			sb.WriteString("\n" + b.Text.Text)
		}
		for _, f := range append(b.Fields, b.Elements...) {
			sb.WriteString("\n" + f.Text)
		}
	}
	return sb.String()
}

func TestMessageShape(t *testing.T) {
	rcv := newReceiver(t)
	var logs bytes.Buffer
	s, err := New(Options{Name: "slack-ops", URL: hookURL(rcv), Clock: clock.NewFake(resolved),
		Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	for _, kind := range []alert.Kind{alert.KindOpen, alert.KindReminder, alert.KindResolve} {
		if err := s.Notify(context.Background(), notification(kind)); err != nil {
			t.Fatalf("Notify(%s): %v", kind, err)
		}
	}
	if len(rcv.Bodies()) != 3 {
		t.Fatalf("got %d posts, want 3", len(rcv.Bodies()))
	}
	for i, want := range []struct{ header, fallback, body string }{
		{"🔴 billing &lt;!channel&gt; &amp; co is down", "is down: http_5xx initialize answered 502", "*Reason:* `http_5xx` initialize answered 502 &lt;html&gt;"},
		{"⏰ billing &lt;!channel&gt; &amp; co is still down (reminder 2)", "reminder 2", "`http_5xx`"},
		{"✅ billing &lt;!channel&gt; &amp; co recovered", "recovered (incident ep1-20260304T050000Z)", "Back up after 30m0s"},
	} {
		m := validateMessage(t, rcv.Bodies()[i])
		// plain_text is not parsed for mentions, so the header is not
		// escaped; everything mrkdwn is.
		wantHeader := strings.NewReplacer("&lt;", "<", "&gt;", ">", "&amp;", "&").Replace(want.header)
		if got := m.Blocks[0].Text.Text; got != wantHeader {
			t.Errorf("post %d header = %q, want %q", i, got, wantHeader)
		}
		if !strings.Contains(m.Text, want.fallback) || !strings.Contains(m.Text, "ep1-20260304T050000Z") {
			t.Errorf("post %d fallback text = %q, want it to contain %q and the incident ID", i, m.Text, want.fallback)
		}
		if got := m.Blocks[1].Text.Text; !strings.Contains(got, want.body) {
			t.Errorf("post %d section = %q, want it to contain %q", i, got, want.body)
		}
		mrk := allText(Message{Blocks: m.Blocks[1:]})
		if strings.Contains(mrk, "<!channel>") || strings.Contains(mrk, "<html>") {
			t.Errorf("post %d: user text not escaped in mrkdwn: %s", i, mrk)
		}
		for _, field := range []string{"*Endpoint*\n<https://mcp.example.com/mcp|billing &lt;!channel&gt; &amp; co>", "*Incident*\n`ep1-20260304T050000Z`",
			"*First failure*\n<!date^1772600340^{date_short_pretty} {time_secs}|2026-03-04 04:59:00 UTC>", "*Opened*\n<!date^1772600400^"} {
			if !strings.Contains(mrk, field) {
				t.Errorf("post %d: missing field %q in %s", i, field, mrk)
			}
		}
		if ctx := m.Blocks[2].Elements[0].Text; !strings.Contains(ctx, "env=prod, team=payments") {
			t.Errorf("post %d context = %q, want sorted labels", i, ctx)
		}
	}
	if strings.Contains(logs.String(), hookToken) {
		t.Errorf("logs leak the webhook token: %s", logs.String())
	}
}

func TestLongTextIsTruncatedWithinLimits(t *testing.T) {
	n := notification(alert.KindOpen)
	n.EndpointName = strings.Repeat("n", 500)
	n.Reason = strings.Repeat("r", 5000)
	body, _ := json.Marshal(NewMessage(n))
	validateMessage(t, body)
}

func TestSlackErrors(t *testing.T) {
	for _, tc := range []struct {
		status     int
		answer     string
		retryAfter string
		want       string
		after      time.Duration
	}{
		{400, "invalid_payload", "", "permanent", 0},
		{400, "invalid_blocks", "", "permanent", 0},
		{403, "action_prohibited", "", "permanent", 0},
		{404, "channel_not_found", "", "permanent", 0},
		{410, "channel_is_archived", "", "permanent", 0},
		{429, "rate_limited", "3", "after", 3 * time.Second},
		{500, "rollup_error", "", "retry", 0},
	} {
		t.Run(tc.answer, func(t *testing.T) {
			rcv := newReceiver(t)
			var header http.Header
			if tc.retryAfter != "" {
				header = http.Header{"Retry-After": {tc.retryAfter}}
			}
			rcv.Answer(tc.status, header, tc.answer)
			s, err := New(Options{Name: "slack-ops", URL: hookURL(rcv)})
			if err != nil {
				t.Fatal(err)
			}
			err = s.Notify(context.Background(), notification(alert.KindOpen))
			var ra *alert.RetryAfterError
			switch tc.want {
			case "permanent":
				if !errors.Is(err, alert.ErrPermanent) {
					t.Fatalf("%d %s: %v, want ErrPermanent", tc.status, tc.answer, err)
				}
			case "after":
				if !errors.As(err, &ra) || ra.After != tc.after {
					t.Fatalf("%d: %v, want RetryAfterError(%s)", tc.status, err, tc.after)
				}
			case "retry":
				if err == nil || errors.Is(err, alert.ErrPermanent) {
					t.Fatalf("%d: %v, want retryable", tc.status, err)
				}
			}
			if !strings.Contains(err.Error(), tc.answer) {
				t.Errorf("error should carry Slack's error code %q: %v", tc.answer, err)
			}
			if strings.Contains(err.Error(), hookToken) || strings.Contains(err.Error(), "/services/") {
				t.Errorf("error leaks the webhook URL: %v", err)
			}
		})
	}
}

func TestNewValidates(t *testing.T) {
	if _, err := New(Options{Name: "s"}); !errors.Is(err, ErrConfig) {
		t.Errorf("missing URL: %v", err)
	}
}
