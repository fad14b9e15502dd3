package daemon

import (
	"github.com/mcpmon/mcpmon/pkg/api"
	"github.com/mcpmon/mcpmon/pkg/msg"
	"github.com/mcpmon/mcpmon/pkg/queue"
	"github.com/mcpmon/mcpmon/pkg/scheduler"
)

// agentLocations holds this API replica's agent locations' commands.
func (d *Daemon) agentLocations() *scheduler.Locations {
	return scheduler.NewLocations(scheduler.LocationOptions{Clock: d.clk})
}

// Agents (`mcpmon agent`, pkg/agent) in a process: the API role's
// scheduler puts agent locations' slots into a scheduler.Locations of its
// own, which the API serves to agents' polls; every API replica schedules
// every endpoint, so an agent may poll any replica. Their results are
// published to the results queue by the API.

// agentResults is where the API publishes agents' results: the results
// queue, when this process opened it (`mcpmon run`); nil otherwise, and
// the API refuses agents' results with 503.
func (d *Daemon) agentResults(qm *queue.Metrics) api.ResultPublisher {
	if d.qs.get(msg.QueueResults) == nil {
		return nil
	}
	return d.publisher(msg.QueueResults, qm)
}
