// Package deploy_test checks the deployment artefacts in deploy/ against the
// code they deploy: the CloudFormation queues against `mcpmon queues
// ensure`'s attributes, the IAM policies against the queues each role opens
// (daemon.QueuesOf), the Kubernetes manifests and compose file against the
// roles and their ops endpoints, and the Prometheus config and rules with
// promtool.
package deploy_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mcpmon/mcpmon/pkg/daemon"
	"github.com/mcpmon/mcpmon/pkg/queue"
	"github.com/mcpmon/mcpmon/pkg/queue/sqs"
)

// queueAttrs are one queue's SQS attributes as GetQueueAttributes reports
// them (all strings; RedrivePolicy as JSON).
type queueAttrs map[string]string

// ensureAttributes is what `mcpmon queues ensure` creates for a prefix and
// mode, keyed by full queue name: pkg/queue/sqs's own definition, with the
// redrive policy it sets once the DLQ's ARN is known.
func ensureAttributes(prefix string, highThroughput bool, arn func(string) string) map[string]queueAttrs {
	out := map[string]queueAttrs{}
	for _, spec := range sqs.Desired(prefix, queue.StageConfigs(), highThroughput) {
		a := queueAttrs(maps.Clone(spec.Attributes))
		if spec.DLQ != "" {
			a[sqs.AttrRedrivePolicy] = sqs.RedrivePolicy(arn(spec.DLQ), spec.MaxReceiveCount)
		}
		out[spec.Name] = a
	}
	return out
}

// templateAttributes evaluates the CloudFormation template's queues.
func templateAttributes(t *testing.T, e *cfnEval) map[string]queueAttrs {
	t.Helper()
	out := map[string]queueAttrs{}
	for name, r := range e.resources {
		res := r.(map[string]any)
		if res["Type"] != "AWS::SQS::Queue" {
			continue
		}
		props := e.eval(res["Properties"]).(map[string]any)
		a := queueAttrs{}
		for k, v := range props {
			switch k {
			case "QueueName", "Tags":
			case "RedrivePolicy":
				b, _ := json.Marshal(v)
				a[k] = string(b)
			default:
				a[k] = fmt.Sprint(v)
			}
		}
		qn := props["QueueName"].(string)
		if _, dup := out[qn]; dup {
			t.Fatalf("queue %s defined twice (second by %s)", qn, name)
		}
		out[qn] = a
	}
	return out
}

func TestCloudFormationMatchesQueuesEnsure(t *testing.T) {
	tpl := loadCFN(t, "cloudformation/queues.yaml")
	if v := tpl["AWSTemplateFormatVersion"]; v != "2010-09-09" {
		t.Fatalf("AWSTemplateFormatVersion %v", v)
	}
	cases := []struct {
		prefix string
		ht     bool
		params map[string]string
	}{
		{"mcpmon-", false, nil}, // the defaults on both sides
		{"mcpmon-", true, map[string]string{"HighThroughput": "true"}},
		{"team-a-", false, map[string]string{"QueueNamePrefix": "team-a-", "HighThroughput": "false"}},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("prefix=%s,highThroughput=%v", tc.prefix, tc.ht), func(t *testing.T) {
			e := newCFNEval(t, tpl, tc.params)
			got := templateAttributes(t, e)
			want := ensureAttributes(tc.prefix, tc.ht, e.queueARN)
			if g, w := slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want)); !slices.Equal(g, w) {
				t.Fatalf("queues: template has %v, queues ensure creates %v", g, w)
			}
			for qn, w := range want {
				g := got[qn]
				for _, k := range slices.Sorted(maps.Keys(union(g, w))) {
					gv, wv := g[k], w[k]
					if k == "RedrivePolicy" {
						gv, wv = normJSON(t, gv), normJSON(t, wv)
					}
					if gv != wv {
						t.Errorf("%s %s: template %q, queues ensure %q", qn, k, gv, wv)
					}
				}
			}
		})
	}
}

func union[V any](a, b map[string]V) map[string]bool {
	out := map[string]bool{}
	for k := range a {
		out[k] = true
	}
	for k := range b {
		out[k] = true
	}
	return out
}

func normJSON(t *testing.T, s string) string {
	if s == "" {
		return ""
	}
	var v map[string]any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("RedrivePolicy %q: %v", s, err)
	}
	// SQS returns maxReceiveCount as a number or a string depending on
	// who set it; compare as text.
	if n, ok := v["maxReceiveCount"]; ok {
		v["maxReceiveCount"] = fmt.Sprint(n)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// --- IAM -------------------------------------------------------------------

// pipelineRoles are the daemon roles that get one policy each. Their grants
// derive from daemon.QueuesOf, the same table the daemon opens its queues
// from, so a role's policy can neither lag behind nor run ahead of what the
// role really does.
var pipelineRoles = []daemon.Role{daemon.RoleAPI, daemon.RoleProber, daemon.RoleAggregator, daemon.RoleAlerter}

var (
	// openActions: opening a queue (sqs.Client.Open, OpenDLQ) resolves its
	// URL by name.
	openActions = []string{"sqs:GetQueueUrl"}
	// produceActions: queue.Publisher sends with SendMessageBatch, which
	// is authorised as sqs:SendMessage.
	produceActions = []string{"sqs:SendMessage"}
	// consumeActions: queue.Consume receives, deletes in batches
	// (DeleteMessageBatch is authorised as sqs:DeleteMessage), and
	// extends or releases visibility (heartbeat, unhandled group tail).
	consumeActions = []string{"sqs:ChangeMessageVisibility", "sqs:DeleteMessage", "sqs:ReceiveMessage"}
	// depthActions: a role polls the depth of the queues it consumes and
	// of their DLQs (queue.Metrics.WatchDepth → sqs.Queue.Stats) for
	// mcpmon_queue_messages.
	depthActions = []string{"sqs:GetQueueAttributes"}
)

// wantGrants derives role → queue name → sorted actions. A pipeline role
// opens each queue daemon.QueuesOf says it sends to or consumes: it sends
// to the first kind; it receives, deletes and extends visibility on the
// second, and it opens the second's DLQ (when the stage has a redrive) and
// reads the depth of both. Nothing else: no role touches a queue it does
// not use.
func wantGrants(t *testing.T) map[string]map[string][]string {
	t.Helper()
	out := map[string]map[string][]string{}
	add := func(role, q string, acts ...[]string) {
		if out[role] == nil {
			out[role] = map[string][]string{}
		}
		for _, a := range acts {
			out[role][q] = sortedSet(append(out[role][q], a...))
		}
	}
	stages := map[string]bool{}
	for _, c := range queue.StageConfigs() {
		stages[c.Name] = true
	}
	for _, r := range pipelineRoles {
		role := string(r)
		use := daemon.QueuesOf(r)
		for _, q := range slices.Sorted(maps.Keys(union(use.Sends, use.Consumes))) {
			if !stages[q] {
				t.Fatalf("daemon.QueuesOf(%s) names %q, which is not a stage queue of queue.StageConfigs", role, q)
			}
		}
		if len(use.Sends)+len(use.Consumes) == 0 {
			t.Fatalf("daemon.QueuesOf(%s) uses no queue: a role without queues needs no policy", role)
		}
		for _, c := range queue.StageConfigs() {
			if use.Sends[c.Name] {
				add(role, c.Name, openActions, produceActions)
			}
			if use.Consumes[c.Name] {
				add(role, c.Name, openActions, consumeActions, depthActions)
				if c.MaxReceiveCount > 0 {
					add(role, queue.DLQName(c.Name), openActions, depthActions)
				}
			}
		}
	}
	for _, c := range queue.StageConfigs() {
		if c.MaxReceiveCount == 0 {
			continue
		}
		// The dead-letter API (/v1/dlq, mcpmon dlq), granted to the API
		// role only where operators want it: on the DLQ it reads depth,
		// peeks (receive, then visibility back to 0), deletes what it
		// resends, purges, and starts and lists move tasks; on the stage
		// queue it resends, and a move task delivers, with SendMessage.
		add("dlqadmin", queue.DLQName(c.Name), openActions, depthActions, []string{
			"sqs:ChangeMessageVisibility", "sqs:DeleteMessage", "sqs:ListMessageMoveTasks", "sqs:PurgeQueue",
			"sqs:ReceiveMessage", "sqs:StartMessageMoveTask"})
		add("dlqadmin", c.Name, openActions, depthActions, produceActions)
	}
	for _, c := range queue.StageConfigs() {
		// KEDA scales each stage's consumers on its depth.
		add("autoscaler", c.Name, []string{"sqs:GetQueueAttributes", "sqs:GetQueueUrl"})
		for _, n := range []string{c.Name, queue.DLQName(c.Name)} {
			// Ensure looks a queue up, creates it with its attributes if
			// missing, and reads them back for the DLQ ARN and drift.
			add("queues-ensure", n, []string{"sqs:CreateQueue", "sqs:GetQueueAttributes", "sqs:GetQueueUrl"})
		}
	}
	return out
}

func sortedSet(s []string) []string {
	slices.Sort(s)
	return slices.Compact(s)
}

type policyDoc struct {
	Version   string
	Statement []struct {
		Sid      string
		Effect   string
		Action   []string
		Resource []string
	}
}

// grants flattens a policy to queue name → sorted actions, using queueOf to
// turn a resource into a queue name.
func grants(t *testing.T, where string, p policyDoc, queueOf func(string) (string, bool)) map[string][]string {
	t.Helper()
	if p.Version != "2012-10-17" {
		t.Errorf("%s: Version %q", where, p.Version)
	}
	out := map[string][]string{}
	for _, s := range p.Statement {
		if s.Effect != "Allow" {
			t.Errorf("%s %s: Effect %q", where, s.Sid, s.Effect)
		}
		for _, a := range s.Action {
			if !strings.HasPrefix(a, "sqs:") || strings.Contains(a, "*") {
				t.Errorf("%s %s: action %q: only named sqs: actions", where, s.Sid, a)
			}
		}
		for _, r := range s.Resource {
			q, ok := queueOf(r)
			if !ok {
				t.Errorf("%s %s: resource %q is not one mcpmon queue", where, s.Sid, r)
				continue
			}
			out[q] = sortedSet(append(out[q], s.Action...))
		}
	}
	return out
}

func TestIAMPoliciesLeastPrivilege(t *testing.T) {
	want := wantGrants(t)
	files, _ := filepath.Glob("iam/*.json")
	var roles []string
	for _, f := range files {
		roles = append(roles, strings.TrimSuffix(filepath.Base(f), ".json"))
	}
	if g, w := roles, slices.Sorted(maps.Keys(want)); !slices.Equal(g, w) {
		t.Fatalf("iam/ has policies %v, want one per role %v", g, w)
	}
	for _, role := range roles {
		t.Run(role, func(t *testing.T) {
			b, err := os.ReadFile("iam/" + role + ".json")
			if err != nil {
				t.Fatal(err)
			}
			var p policyDoc
			dec := json.NewDecoder(strings.NewReader(string(b)))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&p); err != nil {
				t.Fatalf("iam/%s.json: %v", role, err)
			}
			got := grants(t, role, p, func(r string) (string, bool) {
				// arn:aws:sqs:*:*:mcpmon-<queue>.fifo: any region and
				// account, exactly one queue of the default prefix.
				rest, ok := strings.CutPrefix(r, "arn:aws:sqs:*:*:mcpmon-")
				if !ok || !strings.HasSuffix(rest, ".fifo") || strings.ContainsAny(rest, "*?") {
					return "", false
				}
				return strings.TrimSuffix(rest, ".fifo"), true
			})
			if !equalGrants(got, want[role]) {
				t.Fatalf("iam/%s.json grants %v\nwant (from daemon.QueuesOf) %v", role, got, want[role])
			}
		})
	}
}

func TestCloudFormationPoliciesMatchIAMFiles(t *testing.T) {
	tpl := loadCFN(t, "cloudformation/queues.yaml")
	e := newCFNEval(t, tpl, map[string]string{"QueueNamePrefix": "x-"})
	want := wantGrants(t)
	seen := map[string]bool{}
	for name, r := range e.resources {
		res := r.(map[string]any)
		if res["Type"] != "AWS::IAM::ManagedPolicy" {
			continue
		}
		role := strings.ToLower(strings.TrimSuffix(name, "Policy"))
		seen[role] = true
		props := e.eval(res["Properties"]).(map[string]any)
		b, _ := json.Marshal(props["PolicyDocument"])
		var p policyDoc
		if err := json.Unmarshal(b, &p); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got := grants(t, name, p, func(r string) (string, bool) {
			rest, ok := strings.CutPrefix(r, e.queueARN("x-"))
			if !ok {
				return "", false
			}
			return strings.TrimSuffix(rest, ".fifo"), true
		})
		if !equalGrants(got, want[role]) {
			t.Errorf("%s grants %v\nwant %v", name, got, want[role])
		}
	}
	for role := range want {
		if !seen[role] && role != "queues-ensure" { // the stack replaces `queues ensure`
			t.Errorf("no AWS::IAM::ManagedPolicy for role %s", role)
		}
	}
}

func equalGrants(a, b map[string][]string) bool {
	return maps.EqualFunc(a, b, func(x, y []string) bool { return slices.Equal(x, y) })
}
