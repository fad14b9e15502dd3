package daemon

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/mcpmon/mcpmon/aggregator"
	"github.com/mcpmon/mcpmon/pkg/api"
	"github.com/mcpmon/mcpmon/pkg/clock"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/msg"
	"github.com/mcpmon/mcpmon/pkg/queue"
	"github.com/mcpmon/mcpmon/pkg/schedule"
	"github.com/mcpmon/mcpmon/pkg/scheduler"
	"github.com/mcpmon/mcpmon/pkg/store"
)

// agentLocations holds this API replica's agent locations' commands.
func (d *Daemon) agentLocations() *scheduler.Locations {
	return scheduler.NewLocations(scheduler.LocationOptions{Clock: d.clk})
}

// Agents (`mcpmon agent`, pkg/agent) in a process: the API role's
// scheduler puts agent locations' slots into a scheduler.Locations of its
// own, which the API serves to agents' polls; every API replica schedules
// every endpoint, so an agent may poll any replica. Their results are
// published to the results queue by the API, or handed to the aggregator
// of the API's own process on the embedded queue (agentResults).

// agentResults is where the API publishes agents' results: the results
// queue, when this process opened it (`mcpmon run`), or, with this
// process's aggregator on the embedded queue (fold), that aggregator's
// handler itself, as the probers' results (resultsPublisher); nil
// otherwise, and the API refuses agents' results with 503.
func (d *Daemon) agentResults(qm *queue.Metrics, fold queue.Handler) api.ResultPublisher {
	if d.qs.get(msg.QueueResults) == nil {
		return nil
	}
	return d.resultsPublisher(qm, fold)
}

// agentFleet is the aggregator's view of the agents' liveness.
func (d *Daemon) agentFleet() *agentFleet {
	return &agentFleet{st: d.st, after: d.opts.AgentOfflineAfter, clk: d.clk, log: d.log}
}

// agentFleet is the aggregator's view of the agents (aggregator.AgentLocations):
// the records the API replicas write (model.AgentSeen, store.KindAgentSeen),
// listed at most every agentFleetTTL, so deciding a window costs no store
// read. A store that fails leaves the last list, or none: no location is
// then offline.
type agentFleet struct {
	st interface {
		ListObjects(ctx context.Context, kind string) (map[string][]byte, error)
	}
	after time.Duration
	clk   clock.Clock
	log   *slog.Logger

	mu   sync.Mutex
	at   time.Time
	recs []model.AgentSeen
}

const agentFleetTTL = 5 * time.Second

func (f *agentFleet) records(ctx context.Context) []model.AgentSeen {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := f.clk.Now()
	if !f.at.IsZero() && now.Sub(f.at) < agentFleetTTL {
		return f.recs
	}
	docs, err := f.st.ListObjects(ctx, store.KindAgentSeen)
	if err != nil {
		f.log.Debug("agent records not listed; agent locations stay due", "err", err)
		return f.recs
	}
	recs := make([]model.AgentSeen, 0, len(docs))
	for _, doc := range docs {
		var s model.AgentSeen
		if json.Unmarshal(doc, &s) == nil {
			recs = append(recs, s)
		}
	}
	f.at, f.recs = now, recs
	return recs
}

func (f *agentFleet) Offline(ctx context.Context, tenant, region string, t time.Time) bool {
	loc, ok := strings.CutPrefix(region, schedule.LocationPrefix)
	return ok && model.LocationOffline(f.records(ctx), tenant, loc, t, f.after)
}

var _ aggregator.AgentLocations = (*agentFleet)(nil)
