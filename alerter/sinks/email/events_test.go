package email

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/alert"
)

// TestChangeEventMailCarriesTheDiff: a change event goes through a real
// SMTP server as one mail whose subject names the change and whose body
// holds the message, before → after and the catalog diff.
func TestChangeEventMailCarriesTheDiff(t *testing.T) {
	p := peer(t)
	s, _ := p.sink(t, nil)
	n := alert.EventNotification{
		Key: strings.Replace(uniqueKey(t, "x"), "alert-", "event-", 1), Kind: "catalog_security", EndpointID: "ep1", EndpointName: "billing MCP",
		EndpointURL: "https://mcp.example.com/mcp", Fingerprint: "9c0ffee", ObservedAt: time.Date(2026, 3, 4, 5, 0, 0, 0, time.UTC),
		Severity: "security", Message: "the description of search changed", Before: "sha256:aaa", After: "sha256:bbb",
		Diff: json.RawMessage(`{"changed":[{"name":"search","descriptionChanged":true}]}`),
	}
	if err := s.NotifyEvent(context.Background(), n); err != nil {
		t.Fatal(err)
	}
	got := p.byMessageID(t, MessageID(n.Key, "mcpmon.example"))
	if len(got) != 1 {
		t.Fatalf("mailpit holds %d messages for the event, want 1", len(got))
	}
	if want := "[mcpmon] CHANGE (catalog_security): billing MCP"; got[0].Subject != want {
		t.Errorf("Subject = %q, want %q", got[0].Subject, want)
	}
	var full struct{ Text string }
	p.get(t, "/api/v1/message/"+got[0].ID, &full)
	for _, line := range []string{
		"MCP endpoint billing MCP (https://mcp.example.com/mcp) changed: catalog_security",
		"the description of search changed",
		"Before:        sha256:aaa",
		"After:         sha256:bbb",
		"Fingerprint:   9c0ffee",
		`"descriptionChanged": true`,
	} {
		if !strings.Contains(full.Text, line) {
			t.Errorf("body lacks %q:\n%s", line, full.Text)
		}
	}
}
