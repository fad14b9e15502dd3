package daemon

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// readinessEvery is how often the process checks its own readiness.
const readinessEvery = 30 * time.Second

// watchReadiness checks the process's readiness (what /readyz answers) at
// start and every readinessEvery, exports it (mcpmon_ready) and logs each
// change: a process nobody probes (a systemd unit, `make run`) still says
// when its store stops being usable, rule MCPMonNotReady can page on it,
// and the checks that only run in a readiness check (the Redis store's
// deployment marker) run.
func watchReadiness(ctx context.Context, check func(context.Context) error, ready prometheus.Gauge, log *slog.Logger) error {
	t := time.NewTicker(readinessEvery)
	defer t.Stop()
	var notReady string
	for {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := check(cctx)
		cancel()
		if ctx.Err() != nil {
			return nil
		}
		switch {
		case err != nil:
			ready.Set(0)
			if notReady == "" {
				notReady = err.Error()
				log.Warn("not ready: /readyz answers 503 until this clears", "reason", notReady)
			}
		default:
			ready.Set(1)
			if notReady != "" {
				log.Info("ready again", "was", notReady)
				notReady = ""
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// newReadyGauge registers mcpmon_ready on reg.
func newReadyGauge(reg prometheus.Registerer) prometheus.Gauge {
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "mcpmon_ready",
		Help: "1 when the process's last readiness check (what /readyz answers, every 30 s) passed, 0 when not: its store unreachable, a write refused by a full disk or Redis MISCONF in the last 30 s, Redis no longer holding its data, or the embedded store's file deleted under it."})
	reg.MustRegister(g)
	return g
}
