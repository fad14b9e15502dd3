package alert

import (
	"testing"
	"time"
)

// TestHeadlineNamesCountAndSharedValues: the one summary every grouped
// rendering starts with.
func TestHeadlineNamesCountAndSharedValues(t *testing.T) {
	n := GroupNotification{Kind: KindOpen, By: map[string]string{"host": "gw.example.com", "class": "refused", "label:team": "pay"},
		Members: make([]GroupMember, 3), StartedAt: time.Unix(0, 0)}
	if got, want := n.Headline(), "3 endpoints down: class=refused, host=gw.example.com, team=pay"; got != want {
		t.Fatalf("Headline = %q, want %q", got, want)
	}
	n.Kind = KindResolve
	if got, want := n.Headline(), "3 endpoints recovered: class=refused, host=gw.example.com, team=pay"; got != want {
		t.Fatalf("Headline = %q, want %q", got, want)
	}
	for dim, ok := range map[string]bool{"class": true, "host": true, "domain": true, "label:team": true, "label:": false, "region": false} {
		if ValidGroupBy(dim) != ok {
			t.Errorf("ValidGroupBy(%q) = %v", dim, !ok)
		}
	}
}
