package deploy_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/mcpmon/mcpmon/pkg/daemon"
	"github.com/mcpmon/mcpmon/pkg/queue"
	"github.com/mcpmon/mcpmon/pkg/queue/sqs"
)

// TestRegionStackMatchesQueuesEnsure: the per-region stack
// (cloudformation/region.yaml, one per region of --regions) creates exactly
// the region's commands queue and DLQ that `queues ensure --regions` does,
// and its policies grant the API and the region's probers exactly what
// daemon.QueuesIn says they use.
func TestRegionStackMatchesQueuesEnsure(t *testing.T) {
	tpl := loadCFN(t, "cloudformation/region.yaml")
	for _, tc := range []struct {
		prefix, region string
		ht             bool
	}{{"mcpmon-", "eu", false}, {"team-a-", "us-east", true}} {
		t.Run(fmt.Sprintf("prefix=%s,region=%s,ht=%v", tc.prefix, tc.region, tc.ht), func(t *testing.T) {
			e := newCFNEval(t, tpl, map[string]string{"QueueNamePrefix": tc.prefix, "ProbeRegion": tc.region, "HighThroughput": fmt.Sprint(tc.ht)})
			got := templateAttributes(t, e)
			want := map[string]queueAttrs{}
			for _, spec := range sqs.Desired(tc.prefix, queue.StageConfigs(tc.region), tc.ht) {
				if !strings.HasPrefix(spec.Name, tc.prefix+"commands-"+tc.region) {
					continue
				}
				a := queueAttrs(maps.Clone(spec.Attributes))
				if spec.DLQ != "" {
					a[sqs.AttrRedrivePolicy] = sqs.RedrivePolicy(e.queueARN(spec.DLQ), spec.MaxReceiveCount)
				}
				want[spec.Name] = a
			}
			if g, w := slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want)); !slices.Equal(g, w) || len(w) != 2 {
				t.Fatalf("queues: template has %v, queues ensure creates %v", g, w)
			}
			for qn, w := range want {
				for k := range union(got[qn], w) {
					gv, wv := got[qn][k], w[k]
					if k == "RedrivePolicy" {
						gv, wv = normJSON(t, gv), normJSON(t, wv)
					}
					if gv != wv {
						t.Errorf("%s %s: template %q, queues ensure %q", qn, k, gv, wv)
					}
				}
			}

			for name, r := range e.resources {
				res := r.(map[string]any)
				if res["Type"] != "AWS::IAM::ManagedPolicy" {
					continue
				}
				role := daemon.Role(strings.ToLower(strings.TrimSuffix(name, "Policy")))
				props := e.eval(res["Properties"]).(map[string]any)
				b, _ := json.Marshal(props["PolicyDocument"])
				var p policyDoc
				if err := json.Unmarshal(b, &p); err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				got := grants(t, name, p, func(r string) (string, bool) {
					rest, ok := strings.CutPrefix(r, e.queueARN(tc.prefix))
					return strings.TrimSuffix(rest, ".fifo"), ok
				})
				if w := regionGrants(daemon.QueuesIn(role, []string{tc.region}, tc.region), tc.region); !equalGrants(got, w) {
					t.Errorf("%s grants %v\nwant (from daemon.QueuesIn) %v", name, got, w)
				}
			}
		})
	}
}

// regionGrants are the grants of a role using use in a deployment whose
// region set holds region, by the rules of wantGrants.
func regionGrants(use daemon.RoleQueues, region string) map[string][]string {
	out := map[string][]string{}
	add := func(q string, acts ...[]string) {
		for _, a := range acts {
			out[q] = sortedSet(append(out[q], a...))
		}
	}
	for _, c := range queue.StageConfigs(region) {
		if use.Sends[c.Name] {
			add(c.Name, openActions, produceActions)
		}
		if use.Consumes[c.Name] {
			add(c.Name, openActions, consumeActions, depthActions)
			if c.MaxReceiveCount > 0 {
				add(queue.DLQName(c.Name), openActions, depthActions)
			}
		}
	}
	return out
}
