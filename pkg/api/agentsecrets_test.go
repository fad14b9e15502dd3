package api_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	apiv1 "github.com/mcpmon/mcpmon/pkg/api/v1"
	"github.com/mcpmon/mcpmon/pkg/msg"
)

// An endpoint may refer to agent-side secrets only if agents alone probe
// it; a malformed reference is refused at its field; neither changes
// anything.
func TestAgentSecretRefsAreValidated(t *testing.T) {
	ag := newAgentHarness(t, false)
	key := ag.keys["a/write"]
	for _, tc := range []struct {
		name, body, pointer string
	}{
		{"central probers", `{"name":"x","url":"https://mcp.example.com/x","headers":{"Authorization":"Bearer ${agent:billing-token}"}}`, "#/regions"},
		{"no regions for the oauth secret", `{"name":"x","url":"https://mcp.example.com/x","oauth":{"tokenUrl":"https://auth.example.com/token","clientId":"c","clientSecret":"${agent:cs}"}}`, "#/regions"},
		{"malformed header ref", `{"name":"x","url":"https://mcp.example.com/x","regions":["loc-office"],"headers":{"Authorization":"Bearer ${agent:billing-token"}}`, "#/headers/Authorization"},
		{"nested ref", `{"name":"x","url":"https://mcp.example.com/x","regions":["loc-office"],"headers":{"X-Key":"${agent:${agent:x}}"}}`, "#/headers/X-Key"},
		{"malformed argument ref", `{"name":"x","url":"https://mcp.example.com/x","regions":["loc-office"],"toolCheck":{"name":"t","arguments":{"a":"${agent:}"}}}`, "#/toolCheck/arguments"},
	} {
		resp, b := ag.call(http.MethodPost, "/v1/endpoints", key, tc.body)
		var p apiv1.Problem
		_ = json.Unmarshal(b, &p)
		found := false
		for _, fe := range p.Errors {
			found = found || fe.Pointer == tc.pointer
		}
		if resp.StatusCode != http.StatusBadRequest || !found || !strings.Contains(resp.Header.Get("Content-Type"), "problem+json") {
			t.Errorf("%s: %d %s, want 400 problem+json naming %s", tc.name, resp.StatusCode, b, tc.pointer)
		}
	}
	resp, b := ag.call(http.MethodGet, "/v1/endpoints", key, "")
	if resp.StatusCode != http.StatusOK || strings.Contains(string(b), `"name":"x"`) {
		t.Fatalf("a refused endpoint was stored: %s", b)
	}
}

// A reference is a name, not a secret: GET shows an agent-only value as
// written and still hides any value with text of its own; a command of an
// endpoint whose only secrets are agent-side goes over plain HTTP, with
// the references as written.
func TestAgentSecretRefsAreShownAndSentAsWritten(t *testing.T) {
	ag := newAgentHarness(t, false)
	key := ag.keys["a/write"]
	body := `{"name":"billing","url":"https://mcp.example.com/billing","regions":["loc-office"],
		"headers":{"Authorization":"Bearer ${agent:billing-token}","X-Mixed":"hunter2${agent:b}"},
		"toolCheck":{"name":"balance","arguments":{"account":"${agent:acct}","n":7}}}`
	resp, b := ag.call(http.MethodPost, "/v1/endpoints", key, body)
	var v apiv1.EndpointView
	if resp.StatusCode != http.StatusCreated || json.Unmarshal(b, &v) != nil {
		t.Fatalf("create: %d %s", resp.StatusCode, b)
	}
	if v.Headers["Authorization"] != "Bearer ${agent:billing-token}" || v.Headers["X-Mixed"] != apiv1.Redacted {
		t.Errorf("headers shown as %v", v.Headers)
	}
	var args map[string]string
	if strings.Contains(string(b), "hunter2") || json.Unmarshal(v.ToolCheck.Arguments, &args) != nil ||
		args["account"] != "${agent:acct}" || args["n"] != apiv1.Redacted {
		t.Errorf("view %s: want agent-only values as written, the rest redacted", b)
	}
	agentKey := ag.agent(key, "office-1", "office")
	poll := func() apiv1.AgentCommands {
		t.Helper()
		resp, b := ag.call(http.MethodGet, "/v1/agent/commands?wait=0s", agentKey, "")
		var cmds apiv1.AgentCommands
		if resp.StatusCode != http.StatusOK || json.Unmarshal(b, &cmds) != nil {
			t.Fatalf("poll: %d %s", resp.StatusCode, b)
		}
		return cmds
	}
	ag.locs.Put("a", "loc-office", msg.NewProbeCommand(v.ID, t0))
	if cmds := poll(); cmds.Withheld != 1 {
		t.Fatalf("with central secrets beside the references, over plain HTTP: %+v, want withheld", cmds)
	}

	// Only agent-side secrets left: sent over plain HTTP.
	patch := `{"headers":{"X-Mixed":null},"toolCheck":{"arguments":{"n":null}}}`
	if resp, b := ag.call(http.MethodPatch, "/v1/endpoints/"+v.ID, key, patch); resp.StatusCode != http.StatusOK {
		t.Fatalf("patch: %d %s", resp.StatusCode, b)
	}
	ag.locs.Put("a", "loc-office", msg.NewProbeCommand(v.ID, t0.Add(1e9)))
	cmds := poll()
	if len(cmds.Commands) != 1 || cmds.Withheld != 0 || cmds.Agent != "office-1" {
		t.Fatalf("agent-only secrets over plain HTTP: %+v, want the command, for agent office-1", cmds)
	}
	ep := cmds.Commands[0].Endpoint
	if ep.Headers["Authorization"] != "Bearer ${agent:billing-token}" || string(ep.ToolCheck.Arguments) != `{"account":"${agent:acct}"}` {
		t.Errorf("the command carries %v %s, want the references as written", ep.Headers, ep.ToolCheck.Arguments)
	}

	// Handing it to the central probers is refused, and changes nothing.
	if resp, b := ag.call(http.MethodPatch, "/v1/endpoints/"+v.ID, key, `{"regions":null}`); resp.StatusCode != http.StatusBadRequest ||
		!strings.Contains(string(b), "#/regions") {
		t.Fatalf("patch regions away: %d %s, want 400 at #/regions", resp.StatusCode, b)
	}
	resp, b = ag.call(http.MethodGet, "/v1/endpoints/"+v.ID, key, "")
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), `"regions":["loc-office"]`) {
		t.Fatalf("after the refused patch: %d %s", resp.StatusCode, b)
	}
}
