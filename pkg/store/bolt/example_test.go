package bolt_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/mcpmon/mcpmon/pkg/msg"
	"github.com/mcpmon/mcpmon/pkg/store"
	"github.com/mcpmon/mcpmon/pkg/store/bolt"
)

// Claim before the effect, complete after it, release on failure: the
// pattern that makes "one alert per incident per sink" hold across crashes,
// redeliveries and replicas.
func ExampleStore_Claim() {
	dir, _ := os.MkdirTemp("", "mcpmon-example")
	defer os.RemoveAll(dir)
	s, err := bolt.Open(filepath.Join(dir, "store.db"), bolt.Options{})
	if err != nil {
		panic(err)
	}
	defer s.Close()
	ctx := context.Background()
	key := msg.LedgerKey("ep1", "ep1-20260301T120000Z", "open", "webhook")

	send := func(owner string) {
		st, err := s.Claim(ctx, key, owner, time.Minute)
		if err != nil {
			fmt.Println(owner, "store error, leave the message queued:", err)
			return
		}
		if st != store.ClaimAcquired {
			fmt.Println(owner, "skips:", st) // done: already sent; held: someone is sending
			return
		}
		// ... deliver the notification here; on failure: s.Release(ctx, key, owner)
		if err := s.Complete(ctx, key, owner); err != nil {
			fmt.Println(owner, "lost the claim:", err)
			return
		}
		fmt.Println(owner, "sent")
	}
	send("alerter-a")
	send("alerter-b") // a redelivery, or a second replica
	// Output:
	// alerter-a sent
	// alerter-b skips: done
}
