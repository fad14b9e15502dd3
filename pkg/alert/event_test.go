package alert_test

import (
	"slices"
	"testing"

	"github.com/mcpmon/mcpmon/pkg/alert"
	"github.com/mcpmon/mcpmon/pkg/store"
)

// TestEventKindsMatchTheStore: the kinds a sink may opt into are the kinds
// the store records (this leaf keeps its own copy).
func TestEventKindsMatchTheStore(t *testing.T) {
	if !slices.Equal(alert.EventKinds(), store.EventKinds()) {
		t.Fatalf("alert.EventKinds %v != store.EventKinds %v", alert.EventKinds(), store.EventKinds())
	}
}
