package scheduler

import (
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/store"
)

func TestShortestInterval(t *testing.T) {
	from := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		schedule string
		want     time.Duration
	}{
		{"@every 2s", 2 * time.Second},
		{"@every 5m", 5 * time.Minute},
		{"* * * * *", time.Minute},
		{"*/15 * * * *", 15 * time.Minute},
		{"0,1 9 * * *", time.Minute},
		{"0 9 * * 1", 7 * 24 * time.Hour},
	} {
		sl, err := NewSlots(store.Endpoint{ID: "ep", Schedule: tc.schedule})
		if err != nil {
			t.Fatalf("%s: %v", tc.schedule, err)
		}
		if got := sl.ShortestInterval(from); got != tc.want {
			t.Errorf("%s: shortest interval %s, want %s", tc.schedule, got, tc.want)
		}
	}
	if got := (Slots{}).ShortestInterval(from); got != 0 {
		t.Errorf("zero Slots: %s, want 0", got)
	}
}
