package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os/exec"
	"slices"
	"strings"
)

// Agent mode (--mode agent): the fleet roles on fauxqs + redis-server with
// two API replicas, no central prober, and every endpoint probed from the
// location loc-chaos by two `mcpmon agent` processes, each given both API
// replicas (in opposite orders) so it moves to the other when the one it
// talks to dies. The kills fall on the agents and the API replicas half
// the time and on any process the other half; redis-server is killed once,
// as in fleet mode. API keys are on, since agents need them: the harness
// makes an admin key with `mcpmon keys create --local` before any replica
// starts, and an agent key per agent through the API.

// ModeAgent is agents probing through a location, talking to two API
// replicas of the fleet roles.
const ModeAgent = "agent"

// ModeEmbeddedAgent (--mode embedded-agent) is the same two agents
// talking to one `mcpmon run` with API keys on: the kills fall on the
// agents and the run, whose API hands each posted result to the
// aggregator of its own process and answers the post once it is folded.
const ModeEmbeddedAgent = "embedded-agent"

// agents reports whether the mode probes through agents.
func (o options) agents() bool { return o.Mode == ModeAgent || o.Mode == ModeEmbeddedAgent }

// embedded reports whether the mode runs one `mcpmon run`.
func (o options) embedded() bool { return o.Mode == ModeEmbedded || o.Mode == ModeEmbeddedAgent }

// chaosLocation is the agents' location; its endpoints name the region
// "loc-" + chaosLocation.
const chaosLocation = "chaos"

const agentModeWhat = "api, aggregator, alerter × 2 processes on fauxqs + redis-server; 2 `mcpmon agent` probing every endpoint from loc-" +
	chaosLocation + ", each given both API replicas"

const embeddedAgentModeWhat = "one `mcpmon run` on a data dir (embedded queue and store, API keys on); 2 `mcpmon agent` probing every endpoint from loc-" +
	chaosLocation

// fleetRoles are the roles run twice each as processes.
func fleetRoles(mode string) []string {
	if mode == ModeAgent {
		return []string{"api", "aggregator", "alerter"} // the agents probe
	}
	return []string{"api", "prober", "aggregator", "alerter"}
}

// prepareAgentMode turns API keys on in env and makes the harness's admin
// key, before any replica starts (so none bootstraps one).
func (h *harness) prepareAgentMode(ctx context.Context, env *[]string) error {
	if !h.o.agents() {
		return nil
	}
	*env = append(*env, "MCPMON_AUTH=keys", "MCPMON_BOOTSTRAP_KEY=false")
	create := exec.CommandContext(ctx, h.bin, "keys", "create", "--local", "--init", "--name", "chaos", "--scope", "admin")
	create.Env = *env
	var stderr strings.Builder
	create.Stderr = &stderr
	out, err := create.Output()
	if err != nil {
		return fmt.Errorf("mcpmon keys create: %w\n%s", err, stderr.String())
	}
	if h.token = strings.TrimSpace(string(out)); !strings.HasPrefix(h.token, "mcpmon_") {
		return fmt.Errorf("mcpmon keys create printed no key: %q", out)
	}
	return nil
}

// startAgents creates an agent key per agent and starts the agents, once
// the API replicas are ready.
func (h *harness) startAgents(ctx context.Context, env []string) error {
	if !h.o.agents() {
		return nil
	}
	for i := 1; i <= 2; i++ {
		name := fmt.Sprintf("agent-%d", i)
		var created struct {
			Key string `json:"key"`
		}
		if err := h.api(ctx, http.MethodPost, "/v1/agents", map[string]any{"name": name, "location": chaosLocation}, &created); err != nil {
			return fmt.Errorf("create agent %s: %w", name, err)
		}
		first := i - 1 // agent-1 prefers api-1, agent-2 api-2
		p, err := newProc(name, h.bin, append(slices.Clone(env), "MCPMON_AGENT_TOKEN="+created.Key), h.dir, false, func(string) []string {
			// Read at every start: an API replica that exited on its own
			// comes back on a new address.
			args := []string{"agent", "--allow-private-targets", "--concurrency", "64"}
			for j := range h.apis {
				args = append(args, "--server", "http://"+h.apis[(first+j)%len(h.apis)].Addr())
			}
			return args
		})
		if err != nil {
			return err
		}
		h.procs = append(h.procs, p)
		h.agents = append(h.agents, p)
		if err := p.start(); err != nil {
			return err
		}
	}
	return nil
}

// victim is the process the next kill falls on: in agent mode an agent or
// an API replica every other kill on average, else any process.
func (h *harness) victim(rng *rand.Rand) *proc {
	if h.o.agents() && rng.IntN(2) == 0 {
		near := slices.Concat(h.agents, h.apis)
		return near[rng.IntN(len(near))]
	}
	return h.procs[rng.IntN(len(h.procs))]
}

// endpointRegions are the regions an endpoint is registered with: the
// agents' location in agent mode, the default otherwise.
func (h *harness) endpointRegions(body map[string]any) {
	if h.o.agents() {
		body["regions"] = []string{"loc-" + chaosLocation}
	}
}
