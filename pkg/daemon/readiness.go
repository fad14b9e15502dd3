package daemon

import (
	"context"
	"time"
)

// readinessEvery is how often the process checks its own readiness.
const readinessEvery = 30 * time.Second

// watchReadiness checks the process's readiness (what /readyz answers)
// every readinessEvery and logs each change: a process nobody probes (a
// systemd unit, `make run`) still says when its store stops being
// usable, and the checks that only run in a readiness check (the Redis
// store's deployment marker) run.
func (d *Daemon) watchReadiness(ctx context.Context) error {
	t := time.NewTicker(readinessEvery)
	defer t.Stop()
	var notReady string
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := d.ready(cctx)
		cancel()
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil && notReady == "":
			notReady = err.Error()
			d.log.Warn("not ready: /readyz answers 503 until this clears", "reason", notReady)
		case err == nil && notReady != "":
			d.log.Info("ready again", "was", notReady)
			notReady = ""
		}
	}
}
