package notify

import (
	"context"
	"sync"
)

// Fanout runs next for every delivery at once, so a slow or failing sink
// neither delays nor blocks the others (each has its own ledger key), and
// sets each delivery's Err. It returns when all have finished.
func Fanout(ctx context.Context, next Stage, ds []*Delivery) {
	var wg sync.WaitGroup
	for _, d := range ds {
		wg.Go(func() { d.Err = next.Exec(ctx, d) })
	}
	wg.Wait()
}
