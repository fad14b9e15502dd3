package slack

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/alert"
)

// TestGroupMessageListsMembersWithinLimits: a grouped open is one Block
// Kit message whose header counts the members and names what they share,
// listing members up to alert.MaxListedMembers and counting the rest; a
// hostile endpoint name cannot forge a mention.
func TestGroupMessageListsMembersWithinLimits(t *testing.T) {
	n := alert.GroupNotification{Key: "group-default-3f-1:open:slack", Kind: alert.KindOpen, GroupID: "group-default-3f-1",
		By: map[string]string{"host": "gw.example.com"}, StartedAt: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	for i := range 40 {
		n.Members = append(n.Members, alert.GroupMember{EndpointID: fmt.Sprint("ep", i), EndpointName: fmt.Sprintf("srv%d <!channel>", i),
			EndpointURL: fmt.Sprintf("https://gw.example.com/%d", i), Class: "refused", Reason: "connection refused"})
	}
	rcv := newReceiver(t)
	s, err := New(Options{Name: "slack", URL: rcv.URL})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.NotifyGroup(t.Context(), n); err != nil {
		t.Fatal(err)
	}
	got := rcv.Bodies()
	if len(got) != 1 {
		t.Fatalf("%d messages, want 1", len(got))
	}
	var m Message
	if err := json.Unmarshal(got[0], &m); err != nil {
		t.Fatal(err)
	}
	if m.Blocks[0].Text.Text != "🔴 40 endpoints down: host=gw.example.com" {
		t.Fatalf("header %q", m.Blocks[0].Text.Text)
	}
	list := m.Blocks[1].Text.Text
	if strings.Count(list, "• ") != alert.MaxListedMembers || !strings.Contains(list, "…and 15 more") || len([]rune(list)) > MaxSectionText {
		t.Fatalf("member list (%d characters):\n%s", len([]rune(list)), list)
	}
	if strings.Contains(string(got[0]), "<!channel>") {
		t.Fatalf("an endpoint name forged a mention: %s", got[0])
	}
	n.Kind = alert.KindResolve
	if h := NewGroupMessage(n).Blocks[0].Text.Text; !strings.HasPrefix(h, "✅ 40 endpoints recovered") {
		t.Fatalf("resolve header %q", h)
	}
}
