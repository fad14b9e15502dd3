package bolt_test

import (
	"path/filepath"
	"testing"

	"github.com/mcpmon/mcpmon/pkg/store/bolt"
	"github.com/mcpmon/mcpmon/pkg/store/storetest"
)

// BenchmarkClaimComplete: one notification's ledger round (claim + complete)
// on the embedded store; each is one fsynced bbolt transaction.
func BenchmarkClaimComplete(b *testing.B) {
	s, err := bolt.Open(filepath.Join(b.TempDir(), "store.db"), bolt.Options{SweepInterval: -1})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	storetest.BenchClaimComplete(b, s)
}
