package slack

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/alert"
)

// TestUpdateAndDigestMessages: an update's message shows its status and
// text; a digest lists its events within Slack's block limit and says
// how many it left out.
func TestUpdateAndDigestMessages(t *testing.T) {
	m := NewMessage(alert.Notification{Kind: alert.KindUpdate, EndpointName: "docs", IncidentID: "i1",
		Update: &alert.Update{Seq: 1, Status: "identified", Message: "A bad deploy <v2>.", At: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}})
	b, _ := json.Marshal(m)
	if !strings.Contains(m.Blocks[0].Text.Text, "update (identified)") || !strings.Contains(string(b), "A bad deploy \\u0026lt;v2\\u0026gt;.") {
		t.Fatalf("update message %s", b)
	}
	start := time.Date(2026, 6, 10, 7, 0, 0, 0, time.UTC)
	n := alert.DigestNotification{Every: alert.DigestDaily, Scope: "acme", PeriodStart: start, PeriodEnd: start.Add(24 * time.Hour), Total: 250}
	for i := range alert.MaxDigestEvents {
		n.Events = append(n.Events, alert.DigestEvent{EndpointID: "ep", Kind: "catalog_info", Message: fmt.Sprint("change ", i), ObservedAt: start})
	}
	d := NewDigestMessage(n)
	if len(d.Blocks) > MaxBlocks || !strings.Contains(d.Blocks[0].Text.Text, "250 changes") {
		t.Fatalf("digest: %d blocks, header %q", len(d.Blocks), d.Blocks[0].Text.Text)
	}
	last := d.Blocks[len(d.Blocks)-1]
	if last.Type != "context" || !strings.Contains(last.Elements[0].Text, "and 150 more") {
		t.Fatalf("digest's last block %+v, want the count left out", last)
	}
	for _, bl := range d.Blocks {
		if bl.Text != nil && len([]rune(bl.Text.Text)) > MaxSectionText {
			t.Fatalf("a block of %d characters", len([]rune(bl.Text.Text)))
		}
	}
}
