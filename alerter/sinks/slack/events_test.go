package slack

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/alert"
	"github.com/mcpmon/mcpmon/pkg/model"
)

// TestEventMessageShowsTheDiff: a change event is Block Kit with a header
// naming the change, the message, before → after, and the catalog diff in
// a code block; hostile text cannot forge links; every block keeps Slack's
// limits even with a huge diff.
func TestEventMessageShowsTheDiff(t *testing.T) {
	n := alert.EventNotification{
		Key: "event-ep1-catalog_security-9c:slack", Kind: "catalog_security", EndpointID: "ep1", EndpointName: "docs <!channel>",
		EndpointURL: "https://mcp.example.com/mcp", Fingerprint: "9c", ObservedAt: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC),
		Message: "the description of search changed", Before: "sha256:a", After: "sha256:b",
		Diff: json.RawMessage(`{"changed":[{"name":"search","descriptionChanged":true}]}`),
	}
	var got []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got, _ = io.ReadAll(r.Body) }))
	defer srv.Close()
	s, err := New(Options{Name: "slack", URL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.NotifyEvent(t.Context(), n); err != nil {
		t.Fatal(err)
	}
	var m Message
	if err := json.Unmarshal(got, &m); err != nil {
		t.Fatal(err)
	}
	if len(m.Blocks) != 4 || m.Blocks[0].Type != "header" || !strings.Contains(m.Blocks[0].Text.Text, "tool description changed (security)") {
		t.Fatalf("blocks %s", got)
	}
	diff := m.Blocks[2].Text.Text
	if !strings.HasPrefix(diff, "```") || !strings.Contains(diff, `"descriptionChanged": true`) {
		t.Fatalf("diff block %q", diff)
	}
	if strings.Contains(string(got), "<!channel>") {
		t.Fatalf("an endpoint name forged a mention: %s", got)
	}
	n.Diff = json.RawMessage(`{"removed":["` + strings.Repeat("x", 10000) + `"]}`)
	for _, b := range NewEventMessage(n).Blocks {
		if b.Text != nil && len([]rune(b.Text.Text)) > MaxSectionText {
			t.Fatalf("a %s block of %d characters", b.Type, len([]rune(b.Text.Text)))
		}
	}
}

// TestEveryEventKindHasAHeadline: a kind a sink may opt into is never
// shown as its bare name.
func TestEveryEventKindHasAHeadline(t *testing.T) {
	for _, k := range model.EventKinds() {
		if _, ok := eventHeadlines[k]; !ok {
			t.Errorf("no headline for %s", k)
		}
	}
}
