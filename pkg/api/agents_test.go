package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/api"
	apiv1 "github.com/mcpmon/mcpmon/pkg/api/v1"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/msg"
	"github.com/mcpmon/mcpmon/pkg/queue"
	"github.com/mcpmon/mcpmon/pkg/scheduler"
)

// What the process wires into Options.
var (
	_ api.AgentCommandSource = (*scheduler.Locations)(nil)
	_ api.ResultPublisher    = (*queue.Publisher)(nil)
)

// published records what the API publishes to the results queue.
type published struct {
	mu   sync.Mutex
	sent []queue.SendInput
}

func (p *published) Publish(_ context.Context, in queue.SendInput) (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.sent = append(p.sent, in)
	return "m", nil
}

func (p *published) all() []queue.SendInput {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]queue.SendInput(nil), p.sent...)
}

type agentHarness struct {
	*authHarness
	locs *scheduler.Locations
	pub  *published
}

func newAgentHarness(t *testing.T, plainSecrets bool, tweak ...func(*api.Options)) *agentHarness {
	ag := &agentHarness{locs: scheduler.NewLocations(scheduler.LocationOptions{}), pub: &published{}}
	ag.authHarness = newAuthHarness(t, append([]func(*api.Options){func(o *api.Options) {
		o.AgentCommands, o.AgentResults, o.AgentSecretsOverHTTP = ag.locs, ag.pub, plainSecrets
	}}, tweak...)...)
	return ag
}

// endpoint registers an endpoint of the key's tenant probed from regions.
func (ag *agentHarness) endpoint(key, name string, regions ...string) string {
	ag.t.Helper()
	body, _ := json.Marshal(map[string]any{"name": name, "url": "https://mcp.example.com/" + name, "regions": regions,
		"headers": map[string]string{"Authorization": "Bearer central-secret"}})
	resp, b := ag.call(http.MethodPost, "/v1/endpoints", key, string(body))
	var v apiv1.EndpointView
	if resp.StatusCode != http.StatusCreated || json.Unmarshal(b, &v) != nil {
		ag.t.Fatalf("register %s: %d %s", name, resp.StatusCode, b)
	}
	return v.ID
}

func (ag *agentHarness) agent(key, name, location string) string {
	ag.t.Helper()
	resp, b := ag.call(http.MethodPost, "/v1/agents", key, fmt.Sprintf(`{"name":%q,"location":%q}`, name, location))
	var v apiv1.AgentView
	if resp.StatusCode != http.StatusCreated || json.Unmarshal(b, &v) != nil || v.Key == "" {
		ag.t.Fatalf("create agent: %d %s", resp.StatusCode, b)
	}
	return v.Key
}

func result(endpointID string, slot time.Time, region string) msg.ProbeResult {
	return msg.ProbeResult{Schema: msg.SchemaVersion, EndpointID: endpointID, ProbeRunID: msg.ProbeRunID(endpointID, slot), Slot: slot,
		Region: region, StartedAt: slot, FinishedAt: slot.Add(time.Second), Status: msg.StatusUp, Class: "ok"}
}

func resultsBody(rs ...msg.ProbeResult) string {
	b, _ := json.Marshal(apiv1.AgentResults{Results: rs})
	return string(b)
}

// An agent key gets its own tenant's and location's commands, and its
// results are published under the location, for those endpoints only;
// a refused post publishes nothing.
func TestAgentExchangeStaysInItsTenantAndLocation(t *testing.T) {
	ag := newAgentHarness(t, true)
	office := ag.endpoint(ag.keys["a/write"], "office", "loc-office")
	lab := ag.endpoint(ag.keys["a/write"], "lab", "loc-lab")
	theirs := ag.endpoint(ag.keys["b/admin"], "theirs", "loc-office")
	key := ag.agent(ag.keys["a/write"], "office-1", "office")
	slot := t0.Add(-10 * time.Second)
	ag.locs.Put("a", "loc-office", msg.NewProbeCommand(office, slot))
	ag.locs.Put("a", "loc-lab", msg.NewProbeCommand(lab, slot))
	ag.locs.Put("b", "loc-office", msg.NewProbeCommand(theirs, slot))

	resp, b := ag.call(http.MethodGet, "/v1/agent/commands?wait=0s", key, "")
	var cmds apiv1.AgentCommands
	if resp.StatusCode != http.StatusOK || json.Unmarshal(b, &cmds) != nil {
		t.Fatalf("poll: %d %s", resp.StatusCode, b)
	}
	if len(cmds.Commands) != 1 || cmds.Commands[0].EndpointID != office || !cmds.Commands[0].Slot.Equal(slot) {
		t.Fatalf("commands = %+v, want only %s at %v", cmds.Commands, office, slot)
	}
	if got := cmds.Commands[0].Endpoint.Headers["Authorization"]; got != "Bearer central-secret" {
		t.Fatalf("the command's endpoint has Authorization %q, want the central secret (plain HTTP allowed here)", got)
	}

	for _, tc := range []struct {
		name   string
		body   string
		status int
	}{
		{"another location's endpoint", resultsBody(result(lab, slot, "")), http.StatusForbidden},
		{"every result refused", resultsBody(result(lab, slot, ""), result("nosuch", slot, "")), http.StatusForbidden},
		{"another tenant's endpoint", resultsBody(result(theirs, slot, "")), http.StatusNotFound},
		{"no such endpoint", resultsBody(result("nosuch", slot, "")), http.StatusNotFound},
		{"a run ID not of the slot", strings.Replace(resultsBody(result(office, slot, "")), msg.ProbeRunID(office, slot), "0123", 1), http.StatusBadRequest},
		{"a slot from long ago", resultsBody(result(office, t0.Add(-time.Hour), "")), http.StatusBadRequest},
		{"no results", `{"results":[]}`, http.StatusBadRequest},
	} {
		if resp, b := ag.call(http.MethodPost, "/v1/agent/results", key, tc.body); resp.StatusCode != tc.status {
			t.Errorf("%s: %d %s, want %d", tc.name, resp.StatusCode, b, tc.status)
		}
	}
	if got := ag.pub.all(); len(got) != 0 {
		t.Fatalf("refused posts published %d results", len(got))
	}

	// The agent's own region claim is replaced by its key's location.
	if resp, b := ag.call(http.MethodPost, "/v1/agent/results", key, resultsBody(result(office, slot, "eu"))); resp.StatusCode != http.StatusOK {
		t.Fatalf("post: %d %s", resp.StatusCode, b)
	}
	sent := ag.pub.all()
	if want := office + "-" + msg.ProbeRunID(office, slot) + "-loc-office"; len(sent) != 1 || sent[0].DedupID != want || sent[0].GroupID != office {
		t.Fatalf("published %+v, want one result with dedup ID %s", sent, want)
	}
	var res msg.ProbeResult
	if err := msg.Decode(sent[0].Body, &res); err != nil || res.Region != "loc-office" {
		t.Fatalf("published result region %q (%v), want loc-office", res.Region, err)
	}
	if n := ag.locs.Len("a", "loc-office"); n != 0 {
		t.Errorf("the answered command is still held (%d)", n)
	}
	if n := ag.locs.Len("b", "loc-office"); n != 1 {
		t.Errorf("another tenant's command was taken (%d left, want 1)", n)
	}
}

func TestAgentCommandsWithSecretsNeedTLS(t *testing.T) {
	ag := newAgentHarness(t, false)
	id := ag.endpoint(ag.keys["a/write"], "office", "loc-office")
	key := ag.agent(ag.keys["a/write"], "office-1", "office")
	ag.locs.Put("a", "loc-office", msg.NewProbeCommand(id, t0))
	resp, b := ag.call(http.MethodGet, "/v1/agent/commands?wait=0s", key, "")
	var cmds apiv1.AgentCommands
	if resp.StatusCode != http.StatusOK || json.Unmarshal(b, &cmds) != nil {
		t.Fatalf("poll: %d %s", resp.StatusCode, b)
	}
	if len(cmds.Commands) != 0 || cmds.Withheld != 1 || strings.Contains(string(b), "central-secret") {
		t.Fatalf("over plain HTTP: %s, want the command withheld", b)
	}
}

func TestAgentPollParametersAreBounded(t *testing.T) {
	ag := newAgentHarness(t, true)
	key := ag.agent(ag.keys["a/write"], "office-1", "office")
	for _, q := range []string{"wait=31s", "wait=-1s", "wait=soon", "limit=0", "limit=501"} {
		resp, b := ag.call(http.MethodGet, "/v1/agent/commands?"+q, key, "")
		name, _, _ := strings.Cut(q, "=")
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), `"?`+name+`"`) {
			t.Errorf("?%s: %d %s, want 400 naming ?%s", q, resp.StatusCode, b, name)
		}
	}
}

func TestRevokedAgentIsRefused(t *testing.T) {
	ag := newAgentHarness(t, true)
	key := ag.agent(ag.keys["a/write"], "office-1", "office")
	if resp, b := ag.call(http.MethodGet, "/v1/agent/commands?wait=0s", key, ""); resp.StatusCode != http.StatusOK {
		t.Fatalf("poll: %d %s", resp.StatusCode, b)
	}
	resp, b := ag.call(http.MethodGet, "/v1/agents", ag.keys["a/write"], "")
	var list apiv1.AgentList
	if resp.StatusCode != http.StatusOK || json.Unmarshal(b, &list) != nil {
		t.Fatalf("list: %d %s", resp.StatusCode, b)
	}
	seen := false
	for _, a := range list.Agents {
		seen = seen || (a.Name == "office-1" && a.LastSeen != nil && a.LastSeen.Equal(t0))
	}
	if !seen {
		t.Fatalf("list: %s, want office-1 seen at its poll", b)
	}
	if resp, b := ag.call(http.MethodDelete, "/v1/agents/office-1", ag.keys["a/write"], ""); resp.StatusCode != http.StatusOK {
		t.Fatalf("revoke: %d %s", resp.StatusCode, b)
	}
	if resp, _ := ag.call(http.MethodGet, "/v1/agent/commands?wait=0s", key, ""); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a revoked agent's poll: %d, want 401", resp.StatusCode)
	}
}

// What an agent posts as a token (class, phase names) is one of the known
// ones or the result is refused naming the field; what it posts as free
// text is stored and published cleaned as the prober cleans a target's: no
// control character or bidirectional control reaches incidents, answers or
// an operator's terminal.
func TestAgentResultTextIsCleanedAndTokensKnown(t *testing.T) {
	ag := newAgentHarness(t, true)
	office := ag.endpoint(ag.keys["a/write"], "office", "loc-office")
	key := ag.agent(ag.keys["a/write"], "office-1", "office")
	slot := t0.Add(-10 * time.Second)
	for _, tc := range []struct {
		name    string
		edit    func(*msg.ProbeResult)
		pointer string
	}{
		{"unknown class", func(r *msg.ProbeResult) { r.Class = "ok\x1b[2J" }, "#/results/0/class"},
		{"a class's wrong status", func(r *msg.ProbeResult) { r.Class, r.Status = "timeout", msg.StatusUp }, "#/results/0/status"},
		{"unknown phase", func(r *msg.ProbeResult) { r.Phases = map[string]float64{"connect\u202e": 0.1} }, "#/results/0/phases"},
		{"negative phase", func(r *msg.ProbeResult) { r.Phases = map[string]float64{msg.PhaseConnect: -1} }, "#/results/0/phases/connect"},
		{"unknown event severity", func(r *msg.ProbeResult) {
			r.Events = []msg.Event{{Kind: "credential_expiry", Severity: "info\x1b", Message: "m"}}
		}, "#/results/0/events/0/severity"},
	} {
		r := result(office, slot, "")
		tc.edit(&r)
		resp, b := ag.call(http.MethodPost, "/v1/agent/results", key, resultsBody(r))
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), `"`+tc.pointer+`"`) {
			t.Errorf("%s: %d %s, want 400 naming %s", tc.name, resp.StatusCode, b, tc.pointer)
		}
	}
	if n := len(ag.pub.all()); n != 0 {
		t.Fatalf("refused results published %d", n)
	}

	hostile := "\x1b]8;;https://evil.example\x07click\x1b]8;;\x07\x00\r\u202egpj.exe\u2066\u200f\u061c"
	r := result(office, slot, "")
	r.Class, r.Status = "timeout", msg.StatusDown
	r.Error, r.ServerName, r.ServerVersion, r.ProtocolVersion, r.Transport = hostile, hostile, hostile, hostile, hostile
	r.Phases = map[string]float64{msg.PhaseConnect: 0.1, msg.PhaseToolCall: 0.2}
	r.Events = []msg.Event{{Kind: "credential_expiry", Severity: "info", Message: hostile, Fingerprint: hostile}}
	r.Conformance = &msg.Conformance{Era: "2025-11-25", CheckedAt: slot, Rules: []msg.RuleResult{{ID: "ping-answered", Outcome: msg.ConformanceFail, Detail: hostile}}}
	if resp, b := ag.call(http.MethodPost, "/v1/agent/results", key, resultsBody(r)); resp.StatusCode != http.StatusOK {
		t.Fatalf("post: %d %s", resp.StatusCode, b)
	}
	clean := func(where, s string) {
		t.Helper()
		for _, c := range s {
			if c < 0x20 || c == 0x7f || (c >= 0x80 && c < 0xa0) || model.IsBidiControl(c) {
				t.Errorf("%s holds %U: %q", where, c, s)
				return
			}
		}
	}
	latest, err := ag.store.LatestResult(t.Context(), office)
	if err != nil {
		t.Fatal(err)
	}
	var pubd msg.ProbeResult
	if sent := ag.pub.all(); len(sent) != 1 || msg.Decode(sent[0].Body, &pubd) != nil {
		t.Fatalf("published %+v, want the result", sent)
	}
	for name, res := range map[string]msg.ProbeResult{"stored": latest, "published": pubd} {
		for field, v := range map[string]string{"error": res.Error, "serverName": res.ServerName, "serverVersion": res.ServerVersion,
			"protocolVersion": res.ProtocolVersion, "transport": res.Transport} {
			clean(name+" "+field, v)
		}
		for _, e := range res.Events {
			clean(name+" event", e.Kind+e.Severity+e.Message+e.Fingerprint)
		}
	}
	if latest.Conformance == nil || len(latest.Conformance.Rules) != 1 {
		t.Fatalf("stored conformance %+v", latest.Conformance)
	}
	clean("stored conformance detail", latest.Conformance.Rules[0].Detail)
	if want := model.DisplayLine(hostile, 2048); latest.Error != want {
		t.Errorf("stored error %q, want %q (the prober's cleaning)", latest.Error, want)
	}
}

// A result's numbers, times and conformance are bounded before they are
// stored: each refused naming the field, nothing of it published.
func TestAgentResultFieldsAreBounded(t *testing.T) {
	ag := newAgentHarness(t, true)
	office := ag.endpoint(ag.keys["a/write"], "office", "loc-office")
	key := ag.agent(ag.keys["a/write"], "office-1", "office")
	slot := t0.Add(-10 * time.Second)
	conf := func(edit func(*msg.Conformance)) func(*msg.ProbeResult) {
		return func(r *msg.ProbeResult) {
			c := msg.Conformance{Era: "2025-11-25", CheckedAt: slot, ToolOrder: "0123456789abcdef", ToolSet: "fedcba9876543210",
				Results: "0123456789abcdef01234567", Rules: []msg.RuleResult{{ID: "ping-answered", Outcome: msg.ConformancePass}}}
			edit(&c)
			r.Conformance = &c
		}
	}
	for _, tc := range []struct {
		name    string
		edit    func(*msg.ProbeResult)
		pointer string
	}{
		{"a phase past any probe", func(r *msg.ProbeResult) { r.Phases = map[string]float64{msg.PhaseConnect: 1e308} }, "phases/connect"},
		{"a negative HTTP status", func(r *msg.ProbeResult) { r.HTTPStatus = -5 }, "httpStatus"},
		{"an HTTP status past 599", func(r *msg.ProbeResult) { r.HTTPStatus = 600 }, "httpStatus"},
		{"a negative tool count", func(r *msg.ProbeResult) { r.ToolCount = -1000 }, "toolCount"},
		{"finished before it started", func(r *msg.ProbeResult) { r.FinishedAt = r.StartedAt.Add(-time.Second) }, "finishedAt"},
		{"started long before the slot", func(r *msg.ProbeResult) { r.StartedAt = slot.Add(-time.Hour) }, "startedAt"},
		{"finished in the future", func(r *msg.ProbeResult) { r.FinishedAt = t0.Add(time.Hour) }, "finishedAt"},
		{"an era of a megabyte's kind", conf(func(c *msg.Conformance) { c.Era = strings.Repeat("2025-11-25", 30) }), "conformance/era"},
		{"an era not a date", conf(func(c *msg.Conformance) { c.Era = "latest" }), "conformance/era"},
		{"a tool order not a digest", conf(func(c *msg.Conformance) { c.ToolOrder = strings.Repeat("a", 65) }), "conformance/toolOrder"},
		{"a tool set not hex", conf(func(c *msg.Conformance) { c.ToolSet = "\x1b[2J" }), "conformance/toolSet"},
		{"a results digest too long", conf(func(c *msg.Conformance) { c.Results = strings.Repeat("0", 1000) }), "conformance/results"},
		{"a rule ID not an ID", conf(func(c *msg.Conformance) { c.Rules[0].ID = "Ping Answered" }), "conformance/rules/0/id"},
		{"an unknown outcome", conf(func(c *msg.Conformance) { c.Rules[0].Outcome = "maybe" }), "conformance/rules/0/outcome"},
		{"a slot never issued, 30 s ahead", func(r *msg.ProbeResult) { *r = result(office, t0.Add(30*time.Second), "") }, "slot"},
		{"an event of no kind a probe reports", func(r *msg.ProbeResult) { r.Events = []msg.Event{{Kind: "pwned", Severity: "info", Message: "m"}} }, "events/0/kind"},
	} {
		r := result(office, slot, "")
		tc.edit(&r)
		resp, b := ag.call(http.MethodPost, "/v1/agent/results", key, resultsBody(r))
		if want := "#/results/0/" + tc.pointer; resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), `"`+want+`"`) {
			t.Errorf("%s: %d %s, want 400 naming %s", tc.name, resp.StatusCode, b, want)
		}
	}
	if n := len(ag.pub.all()); n != 0 {
		t.Fatalf("refused results published %d", n)
	}

	// A well-formed era this server has no rules for (an agent of a newer
	// release) is kept, and named once in the conformance view, not once
	// per rule.
	r := result(office, slot, "")
	r.HTTPStatus, r.ToolCount, r.Phases = 200, 3, map[string]float64{msg.PhaseTotal: 0.25}
	conf(func(c *msg.Conformance) { c.Era = "2099-01-01" })(&r)
	if resp, b := ag.call(http.MethodPost, "/v1/agent/results", key, resultsBody(r)); resp.StatusCode != http.StatusOK {
		t.Fatalf("post: %d %s", resp.StatusCode, b)
	}
	resp, b := ag.call(http.MethodGet, "/v1/endpoints/"+office+"/conformance", ag.keys["a/read"], "")
	if resp.StatusCode != http.StatusOK || strings.Count(string(b), "2099-01-01") != 1 {
		t.Fatalf("conformance: %d %s, want the unknown era named once", resp.StatusCode, b)
	}
}

// takeSignal is the location buffer, telling on taking when a poll has
// been authenticated and begun to wait for commands.
type takeSignal struct {
	api.AgentCommandSource
	taking chan struct{}
}

func (s takeSignal) Take(ctx context.Context, tenant, location string, limit int, wait time.Duration) []msg.ProbeCommand {
	select {
	case s.taking <- struct{}{}:
	default:
	}
	return s.AgentCommandSource.Take(ctx, tenant, location, limit, wait)
}

// A poll held open while its key is revoked or expires answers 401, as a
// fresh request with the key would, and not with the command that arrives
// meanwhile (nor its endpoint's central secrets): the command goes at once
// to the location's other agents instead of waiting out its lease.
func TestHeldPollOfAnInvalidatedKeyGetsNoCommands(t *testing.T) {
	for _, tc := range []struct {
		name       string
		expiresIn  string
		invalidate func(ag *agentHarness)
	}{
		{"revoked", "", func(ag *agentHarness) {
			if resp, b := ag.call(http.MethodDelete, "/v1/agents/office-1", ag.keys["a/write"], ""); resp.StatusCode != http.StatusOK {
				ag.t.Fatalf("revoke: %d %s", resp.StatusCode, b)
			}
		}},
		{"expired", "1h", func(ag *agentHarness) { ag.clock.Advance(2 * time.Hour) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			taking := make(chan struct{}, 8)
			ag := newAgentHarness(t, true, func(o *api.Options) { o.AgentCommands = takeSignal{o.AgentCommands, taking} })
			office := ag.endpoint(ag.keys["a/write"], "office", "loc-office")
			resp, b := ag.call(http.MethodPost, "/v1/agents", ag.keys["a/write"], fmt.Sprintf(`{"name":"office-1","location":"office","expiresIn":%q}`, tc.expiresIn))
			var held apiv1.AgentView
			if resp.StatusCode != http.StatusCreated || json.Unmarshal(b, &held) != nil {
				t.Fatalf("create agent: %d %s", resp.StatusCode, b)
			}
			other := ag.agent(ag.keys["a/write"], "office-2", "office")

			type answer struct {
				status int
				body   string
			}
			done := make(chan answer, 1)
			go func() {
				req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, ag.srv.URL+"/v1/agent/commands?wait=25s", nil)
				req.Header.Set("Authorization", "Bearer "+held.Key)
				resp, err := ag.srv.Client().Do(req)
				if err != nil {
					done <- answer{body: err.Error()}
					return
				}
				defer resp.Body.Close()
				b, _ := io.ReadAll(resp.Body)
				done <- answer{resp.StatusCode, string(b)}
			}()
			<-taking
			tc.invalidate(ag)
			ag.locs.Put("a", "loc-office", msg.NewProbeCommand(office, ag.clock.Now().Add(-10*time.Second)))

			got := <-done
			if got.status != http.StatusUnauthorized || strings.Contains(got.body, office) || strings.Contains(got.body, "central-secret") {
				t.Fatalf("the held poll: %d %s, want 401 without the command", got.status, got.body)
			}
			resp, b = ag.call(http.MethodGet, "/v1/agent/commands?wait=0s", other, "")
			var cmds apiv1.AgentCommands
			if resp.StatusCode != http.StatusOK || json.Unmarshal(b, &cmds) != nil {
				t.Fatalf("the other agent's poll: %d %s", resp.StatusCode, b)
			}
			if len(cmds.Commands) != 1 || cmds.Commands[0].EndpointID != office {
				t.Fatalf("the other agent got %+v, want the command the refused poll took", cmds.Commands)
			}
		})
	}
}

func TestAgentQuota(t *testing.T) {
	// The harness's own agent key of tenant a counts: one more fits.
	h := newAuthHarness(t, func(o *api.Options) { o.Quotas.MaxAgents = 2 })
	if resp, b := h.call(http.MethodPost, "/v1/agents", h.keys["a/write"], `{"name":"one","location":"office"}`); resp.StatusCode != http.StatusCreated {
		t.Fatalf("first agent: %d %s", resp.StatusCode, b)
	}
	resp, b := h.call(http.MethodPost, "/v1/agents", h.keys["a/write"], `{"name":"two","location":"office"}`)
	if resp.StatusCode != http.StatusConflict || !strings.Contains(string(b), "--max-agents-per-tenant") {
		t.Fatalf("second agent: %d %s, want 409 naming the quota", resp.StatusCode, b)
	}
	if resp, b := h.call(http.MethodPost, "/v1/agents", h.keys["a/write"], `{"name":"bad","location":"Bad:Loc"}`); resp.StatusCode != http.StatusBadRequest ||
		!strings.Contains(string(b), "#/location") {
		t.Fatalf("bad location: %d %s, want 400 naming #/location", resp.StatusCode, b)
	}
}

// A batch post decides each result alone: the good ones are published,
// each under its own deduplication ID, and their commands done; a bad one
// is refused with its index, status and reason, and nothing of it is
// published. Posted again, the batch republishes the same IDs.
func TestBatchPostRefusesABadResultAlone(t *testing.T) {
	ag := newAgentHarness(t, true)
	office := ag.endpoint(ag.keys["a/write"], "office", "loc-office")
	other := ag.endpoint(ag.keys["a/write"], "other", "loc-office")
	lab := ag.endpoint(ag.keys["a/write"], "lab", "loc-lab")
	key := ag.agent(ag.keys["a/write"], "office-1", "office")
	slot, slot2 := t0.Add(-20*time.Second), t0.Add(-10*time.Second)
	for _, c := range []msg.ProbeCommand{msg.NewProbeCommand(office, slot), msg.NewProbeCommand(office, slot2), msg.NewProbeCommand(other, slot)} {
		ag.locs.Put("a", "loc-office", c)
	}
	badRun := result(other, slot, "")
	badRun.ProbeRunID = "0123"
	body := resultsBody(result(office, slot, ""), result(lab, slot, ""), result("nosuch", slot, ""), badRun, result(office, slot2, ""))

	for attempt := range 2 {
		resp, b := ag.call(http.MethodPost, "/v1/agent/results", key, body)
		var got apiv1.AgentResultsAccepted
		if resp.StatusCode != http.StatusOK || json.Unmarshal(b, &got) != nil {
			t.Fatalf("post %d: %d %s, want 200", attempt+1, resp.StatusCode, b)
		}
		want := []apiv1.AgentResultRefused{
			{Index: 1, Status: http.StatusForbidden},
			{Index: 2, Status: http.StatusNotFound},
			{Index: 3, Status: http.StatusBadRequest, Pointer: "#/results/3/probeRunId"},
		}
		if got.Accepted != 2 || len(got.Refused) != len(want) {
			t.Fatalf("post %d: %s, want 2 accepted and 3 refused", attempt+1, b)
		}
		for i, w := range want {
			if r := got.Refused[i]; r.Index != w.Index || r.Status != w.Status || r.Pointer != w.Pointer || r.Detail == "" {
				t.Errorf("refused[%d] = %+v, want %+v with a reason", i, r, w)
			}
		}
	}
	var ids []string
	for _, in := range ag.pub.all() {
		ids = append(ids, in.DedupID)
	}
	one, two := office+"-"+msg.ProbeRunID(office, slot)+"-loc-office", office+"-"+msg.ProbeRunID(office, slot2)+"-loc-office"
	if len(ids) != 4 || ids[0] != one || ids[1] != two || ids[2] != one || ids[3] != two {
		t.Fatalf("published %v, want %s then %s, twice (the queue keeps each once)", ids, one, two)
	}
	if n := ag.locs.Len("a", "loc-office"); n != 1 {
		t.Errorf("%d commands held, want 1: the refused result's", n)
	}
}

// Agent keys are costed on a bucket of their own, per key: a tenant past
// its --rate-limit does not hold its agents back, and an agent past its
// own rate gets 429 with Retry-After while the tenant's people do not.
func TestAgentKeysHaveARateOfTheirOwn(t *testing.T) {
	ag := newAgentHarness(t, true, withQuotas(api.Quotas{RatePerSecond: 0.5, Burst: 3}))
	key := ag.agent(ag.keys["a/write"], "office-1", "office")
	for range 3 {
		ag.call(http.MethodGet, "/v1/endpoints", ag.keys["a/read"], "")
	}
	if resp, _ := ag.call(http.MethodGet, "/v1/endpoints", ag.keys["a/read"], ""); resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("the tenant past its burst: %d, want 429", resp.StatusCode)
	}
	for i := range apiv1.AgentRateBurst {
		if resp, b := ag.call(http.MethodGet, "/v1/agent/commands?wait=0s", key, ""); resp.StatusCode != http.StatusOK {
			t.Fatalf("agent poll %d within its own burst: %d %s", i+1, resp.StatusCode, b)
		}
	}
	resp, b := ag.call(http.MethodGet, "/v1/agent/commands?wait=0s", key, "")
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "1" || !strings.Contains(string(b), "agent key") {
		t.Fatalf("agent past its burst: %d Retry-After %q %s, want 429 naming the agent key's rate", resp.StatusCode, resp.Header.Get("Retry-After"), b)
	}
	ag.clock.Advance(time.Second)
	if resp, b := ag.call(http.MethodGet, "/v1/agent/commands?wait=0s", key, ""); resp.StatusCode != http.StatusOK {
		t.Fatalf("a second later: %d %s", resp.StatusCode, b)
	}
}

// FuzzAgentResults holds POST /v1/agent/results to its contract on any
// body: never a 5xx; a 200 publishes exactly the results it counts as
// accepted and accounts for every posted result as accepted or refused;
// any other answer publishes nothing.
func FuzzAgentResults(f *testing.F) {
	slot := t0.Add(-10 * time.Second)
	good := result("ENDPOINT", slot, "")
	late := result("ENDPOINT", t0.Add(-time.Hour), "")
	f.Add(resultsBody(good))
	f.Add(resultsBody(good, late, result("nosuch", slot, "")))
	f.Add(`{"results":[]}`)
	f.Add(`{"results":[{"schema":1,"endpointId":"ENDPOINT","slot":"2026-03-01T11:59:50Z","status":"up","phases":{"x":-1}}]}`)
	f.Add(`{"results":[null,{},[]]}`)
	// Attacks seen: terminal and bidi controls as tokens and text, numbers
	// that overflow a duration, times out of order, unbounded conformance.
	f.Add(`{"results":[{"schema":1,"endpointId":"ENDPOINT","probeRunId":"` + msg.ProbeRunID("ENDPOINT", slot) + `","slot":"2026-03-01T11:59:50Z","startedAt":"2026-03-01T11:59:50Z","finishedAt":"2026-03-01T11:59:51Z","status":"down","class":"timeout\u001b[2J","error":"\u001b]8;;x\u0007\u0000\r\u202e"}]}`)
	f.Add(`{"results":[{"schema":1,"endpointId":"ENDPOINT","probeRunId":"` + msg.ProbeRunID("ENDPOINT", slot) + `","slot":"2026-03-01T11:59:50Z","startedAt":"2026-03-01T11:59:50Z","finishedAt":"2026-03-01T11:59:51Z","status":"up","class":"ok","serverName":"\u2066x\u2069","phases":{"connect":1e308},"httpStatus":-5,"toolCount":-1000}]}`)
	f.Add(`{"results":[{"schema":1,"endpointId":"ENDPOINT","probeRunId":"` + msg.ProbeRunID("ENDPOINT", slot) + `","slot":"2026-03-01T11:59:50Z","startedAt":"2026-03-01T11:59:51Z","finishedAt":"2026-03-01T11:59:50Z","status":"up","class":"ok","conformance":{"era":"` + strings.Repeat("x", 4096) + `","checkedAt":"2026-03-01T11:59:50Z","rules":[{"id":"ping-answered","outcome":"pass"}]}}]}`)
	f.Add(`{"results":{"a":1}}`)
	// A slot never issued, ahead of the server; an event of no probe kind
	// with details of a megabyte's kind.
	ahead := t0.Add(30 * time.Second)
	f.Add(resultsBody(result("ENDPOINT", ahead, "")))
	f.Add(`{"results":[{"schema":1,"endpointId":"ENDPOINT","probeRunId":"` + msg.ProbeRunID("ENDPOINT", slot) + `","slot":"2026-03-01T11:59:50Z","startedAt":"2026-03-01T11:59:50Z","finishedAt":"2026-03-01T11:59:51Z","status":"up","class":"ok","events":[{"kind":"pwned","message":"m"},{"kind":"server_version_changed","message":"m","details":{"toVersion":"\u001b[2J","pad":"` + strings.Repeat("x", 20000) + `"}}]}]}`)
	f.Fuzz(func(t *testing.T, body string) {
		ag := newAgentHarness(t, true)
		id := ag.endpoint(ag.keys["a/write"], "office", "loc-office")
		key := ag.agent(ag.keys["a/write"], "office-1", "office")
		body = strings.ReplaceAll(body, "ENDPOINT", id)
		body = strings.ReplaceAll(body, msg.ProbeRunID("ENDPOINT", slot), msg.ProbeRunID(id, slot))
		resp, b := ag.call(http.MethodPost, "/v1/agent/results", key, body)
		sent := len(ag.pub.all())
		if resp.StatusCode >= 500 {
			t.Fatalf("%d %s for %q", resp.StatusCode, b, body)
		}
		if resp.StatusCode != http.StatusOK {
			if sent != 0 {
				t.Fatalf("%d published %d results", resp.StatusCode, sent)
			}
			return
		}
		var req apiv1.AgentResults
		var got apiv1.AgentResultsAccepted
		if json.Unmarshal([]byte(body), &req) != nil || json.Unmarshal(b, &got) != nil {
			t.Fatalf("200 %s for a body that does not decode: %q", b, body)
		}
		if got.Accepted < 1 || got.Accepted+len(got.Refused) != len(req.Results) || sent != got.Accepted {
			t.Fatalf("200 %s for %d results published %d", b, len(req.Results), sent)
		}
	})
}

// An agent's result is stored as the endpoint's latest with its
// conformance and published without it: the latest result is the
// conformance's home and no verdict reads it.
func TestAgentResultConformanceStaysWithTheLatest(t *testing.T) {
	ag := newAgentHarness(t, true)
	office := ag.endpoint(ag.keys["a/write"], "office", "loc-office")
	key := ag.agent(ag.keys["a/write"], "office-1", "office")
	slot := t0.Add(-10 * time.Second)
	r := result(office, slot, "")
	r.Conformance = &msg.Conformance{Era: "2025-11-25", CheckedAt: slot, Rules: []msg.RuleResult{{ID: "ping-answered", Outcome: msg.ConformancePass}}}
	if resp, b := ag.call(http.MethodPost, "/v1/agent/results", key, resultsBody(r)); resp.StatusCode != http.StatusOK {
		t.Fatalf("post: %d %s", resp.StatusCode, b)
	}
	sent := ag.pub.all()
	var pubd msg.ProbeResult
	if len(sent) != 1 || msg.Decode(sent[0].Body, &pubd) != nil || pubd.ProbeRunID != r.ProbeRunID {
		t.Fatalf("published %+v, want the result", sent)
	}
	if pubd.Conformance != nil {
		t.Errorf("published with conformance %+v", pubd.Conformance)
	}
	latest, err := ag.store.LatestResult(context.Background(), office)
	if err != nil || latest.Conformance == nil || len(latest.Conformance.Rules) != 1 {
		t.Fatalf("latest %+v %v, want it with its conformance", latest, err)
	}
}
