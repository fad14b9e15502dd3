package bolt_test

import (
	"path/filepath"
	"testing"

	"github.com/mcpmon/mcpmon/pkg/clock"
	"github.com/mcpmon/mcpmon/pkg/store"
	"github.com/mcpmon/mcpmon/pkg/store/storetest"
)

// TestDeleteEndpoint runs the conformance suite's delete cases on their own.
func TestDeleteEndpoint(t *testing.T) {
	storetest.DeleteEndpoint(t, func(t *testing.T, clk *clock.Fake) store.Store {
		return open(t, filepath.Join(t.TempDir(), "store.db"), clk)
	})
}
