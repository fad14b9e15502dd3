package registry

import (
	"context"
	"errors"
	"time"
)

// DefaultFullEvery is how often Run does a full import between syncs.
const DefaultFullEvery = 24 * time.Hour

// RunOptions configure Run: the Options of every import plus the cadence.
type RunOptions struct {
	Options
	// Interval between imports (required).
	Interval time.Duration
	// FullEvery forces a full import at least this often (default
	// DefaultFullEvery). A sync only looks at servers the registry
	// changed, so an imported endpoint someone deleted by hand, or one
	// whose create failed for a reason the registry will not change, is
	// only restored by a full import.
	FullEvery time.Duration
	// OnReport receives every import's report (and error); nil ignores.
	OnReport func(Report, error)
}

// Run imports now and then every Interval until ctx ends: a full import
// first (unless Options.Since is set), syncs from the last high-water mark
// after that, and a full import again every FullEvery. A failed import is
// reported and retried at the next tick. It returns ctx's error.
func (im *Importer) Run(ctx context.Context, ro RunOptions) error {
	if ro.Interval <= 0 {
		return errors.New("registry: Run needs a positive Interval")
	}
	if ro.FullEvery <= 0 {
		ro.FullEvery = DefaultFullEvery
	}
	since := ro.Since
	var lastFull time.Time
	if !since.IsZero() {
		lastFull = time.Now() // the caller's mark stands for a recent full import
	}
	tick := time.NewTicker(ro.Interval)
	defer tick.Stop()
	for {
		opts := ro.Options
		opts.Since = since
		if since.IsZero() || time.Since(lastFull) >= ro.FullEvery {
			opts.Since = time.Time{}
		}
		started := time.Now()
		rep, err := im.Import(ctx, opts)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err == nil {
			if opts.Since.IsZero() && rep.retryable() == 0 {
				lastFull = started
			}
			since = rep.HighWater
		}
		if ro.OnReport != nil {
			ro.OnReport(rep, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}
