package email

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/alert"
)

// TestGroupMailListsTheMembers: a grouped open goes through a real SMTP
// server as one mail whose subject counts the members, whose body lists
// them, and whose resolve replies in the open's thread.
func TestGroupMailListsTheMembers(t *testing.T) {
	p := peer(t)
	s, _ := p.sink(t, nil)
	gid := fmt.Sprintf("group-default-%s-%d", strings.ReplaceAll(t.Name(), "/", "_"), time.Now().UnixNano())
	n := alert.GroupNotification{Key: gid + ":open:mail", Kind: alert.KindOpen, GroupID: gid,
		By: map[string]string{"class": "refused", "host": "gw.example.com"}, StartedAt: time.Date(2026, 3, 4, 5, 0, 0, 0, time.UTC),
		Members: []alert.GroupMember{
			{EndpointID: "ep1", EndpointName: "docs", EndpointURL: "https://gw.example.com/docs", Class: "refused", Reason: "connection refused"},
			{EndpointID: "ep2", EndpointName: "search", EndpointURL: "https://gw.example.com/search", Class: "refused", Reason: "connection refused"},
		}}
	if err := s.NotifyGroup(context.Background(), n); err != nil {
		t.Fatal(err)
	}
	got := p.byMessageID(t, MessageID(n.Key, "mcpmon.example"))
	if len(got) != 1 {
		t.Fatalf("mailpit holds %d messages for the group, want 1", len(got))
	}
	if want := "[mcpmon] DOWN: 2 endpoints down: class=refused, host=gw.example.com"; got[0].Subject != want {
		t.Errorf("Subject = %q, want %q", got[0].Subject, want)
	}
	var full struct{ Text string }
	p.get(t, "/api/v1/message/"+got[0].ID, &full)
	for _, line := range []string{
		"- docs (https://gw.example.com/docs): refused: connection refused",
		"- search (https://gw.example.com/search): refused: connection refused",
		"group " + gid,
	} {
		if !strings.Contains(full.Text, line) {
			t.Errorf("body lacks %q:\n%s", line, full.Text)
		}
	}
	n.Kind, n.Key = alert.KindResolve, gid+":resolve:mail"
	msg := string(s.GroupMessage(n))
	if !strings.Contains(msg, "In-Reply-To: <"+IncidentThreadID(gid, "mcpmon.example")+">") || !strings.Contains(msg, "X-Mcpmon-Event: group-resolve") {
		t.Fatalf("the resolve is not in the open's thread:\n%s", msg)
	}
}
