package prober

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/msg"
)

type healthIn struct {
	Account string `json:"account" jsonschema:"account to check"`
}

type healthOut struct {
	Status string `json:"status"`
	Checks []struct {
		Name string `json:"name"`
		OK   bool   `json:"ok"`
	} `json:"checks"`
}

// toolServer is a go-sdk MCP server with a healthy tool (echoing its
// account argument), a tool that answers isError and a tool that fails.
func toolServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "tools", Version: "1.0.0"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "health", Description: "Report health."},
		func(_ context.Context, _ *mcp.CallToolRequest, in healthIn) (*mcp.CallToolResult, healthOut, error) {
			out := healthOut{Status: "green"}
			out.Checks = append(out.Checks, struct {
				Name string `json:"name"`
				OK   bool   `json:"ok"`
			}{"db", true})
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "all good for " + in.Account}}}, out, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "broken", Description: "Always fails."},
		func(_ context.Context, _ *mcp.CallToolRequest, in healthIn) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "backend down for " + in.Account}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "erroring", Description: "Returns a Go error."},
		func(context.Context, *mcp.CallToolRequest, healthIn) (*mcp.CallToolResult, any, error) {
			return nil, nil, errors.New("database unreachable")
		})
	return s
}

const secretAccount = "acct-SECRET-9931"

func toolEndpoint(url string, tc model.ToolCheck) model.Endpoint {
	ep := endpoint(url)
	ep.ToolCheck = &tc
	return ep
}

// TestToolCheck calls a tool after the handshake against real go-sdk
// servers, in the stateless 2026-07-28 era and a 2025 session, and tells
// a healthy tool from a missing one, one answering isError and one whose
// result misses the expectation; the secret argument never shows.
func TestToolCheck(t *testing.T) {
	args := json.RawMessage(`{"account":"` + secretAccount + `"}`)
	tests := []struct {
		name      string
		check     model.ToolCheck
		wantClass string
		wantErr   string
	}{
		{"healthy with every expectation", model.ToolCheck{Name: "health", Arguments: args, Expect: &model.ToolExpect{
			Contains: "all good", JSONPath: "$.checks[0].ok", Equals: json.RawMessage(`true`)}}, ClassOK, ""},
		{"healthy, path exists", model.ToolCheck{Name: "health", Arguments: args, Expect: &model.ToolExpect{JSONPath: "$.status"}}, ClassOK, ""},
		{"missing tool", model.ToolCheck{Name: "gone", Arguments: args}, ClassToolFailed, `has no tool "gone"`},
		{"isError", model.ToolCheck{Name: "broken", Arguments: args}, ClassToolFailed, "returned isError: backend down for [REDACTED]"},
		{"handler error", model.ToolCheck{Name: "erroring", Arguments: args}, ClassToolFailed, "database unreachable"},
		{"text mismatch", model.ToolCheck{Name: "health", Arguments: args, Expect: &model.ToolExpect{Contains: "everything fine"}},
			ClassToolFailed, "does not contain the expected text (got all good for [REDACTED])"},
		{"value mismatch", model.ToolCheck{Name: "health", Arguments: args, Expect: &model.ToolExpect{JSONPath: "$.status", Equals: json.RawMessage(`"red"`)}},
			ClassToolFailed, `$.status is "green", not the expected value`},
		{"path missing", model.ToolCheck{Name: "health", Arguments: args, Expect: &model.ToolExpect{JSONPath: "$.checks[3]"}},
			ClassToolFailed, "$.checks[3] selects nothing"},
		{"invalid arguments", model.ToolCheck{Name: "health", Arguments: json.RawMessage(`{"account":7}`)}, ClassToolFailed, "tool check"},
	}
	eras := []struct {
		name string
		opts mcp.StreamableHTTPOptions
		want string
	}{
		{"2026-07-28", mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true}, Version20260728},
		{"2025-11-25 session", mcp.StreamableHTTPOptions{}, Version20251125},
	}
	for _, era := range eras {
		srv := streamable(t, toolServer(), era.opts)
		for _, tc := range tests {
			t.Run(era.name+"/"+tc.name, func(t *testing.T) {
				var logs strings.Builder
				p := testProber(t, func(o *Options) { o.Logger = testLogger(&logs) })
				res := p.Probe(t.Context(), toolEndpoint(srv.URL, tc.check), cmd())
				if res.Class != tc.wantClass {
					t.Fatalf("class %s (%q), want %s", res.Class, res.Error, tc.wantClass)
				}
				if res.ProtocolVersion != era.want {
					t.Errorf("protocol %s, want %s: a failed tool check must not make the probe fall back", res.ProtocolVersion, era.want)
				}
				if tc.wantErr != "" {
					mustContain(t, res.Error, tc.wantErr)
				}
				if res.Status != StatusOf(tc.wantClass) {
					t.Errorf("status %s", res.Status)
				}
				_, called := res.Phases[msg.PhaseToolCall]
				if wantCall := tc.name != "missing tool"; called != wantCall {
					t.Errorf("tool_call phase present %v, want %v: %v", called, wantCall, res.Phases)
				}
				if b, _ := json.Marshal(res); strings.Contains(string(b), secretAccount) {
					t.Errorf("the secret argument is in the result: %s", b)
				}
				if strings.Contains(logs.String(), secretAccount) {
					t.Errorf("the secret argument is in the log: %s", logs.String())
				}
			})
		}
	}
}

// TestToolCheckWithoutToolsCapability: a server with no tools cannot pass a
// tool check.
func TestToolCheckWithoutToolsCapability(t *testing.T) {
	s := mcp.NewServer(&mcp.Implementation{Name: "bare", Version: "1"}, nil)
	srv := streamable(t, s, mcp.StreamableHTTPOptions{JSONResponse: true})
	res := testProber(t, nil).Probe(t.Context(), toolEndpoint(srv.URL, model.ToolCheck{Name: "health"}), cmd())
	if res.Class != ClassToolFailed {
		t.Fatalf("class %s %q, want tool_failed", res.Class, res.Error)
	}
	mustContain(t, res.Error, "no tools capability")
}

// TestJudgeToolResult is the pure decision on a tools/call result.
func TestJudgeToolResult(t *testing.T) {
	for _, tc := range []struct {
		name   string
		result string
		expect *model.ToolExpect
		ok     bool
	}{
		{"no expectation", `{"content":[]}`, nil, true},
		{"isError", `{"content":[{"type":"text","text":"x"}],"isError":true}`, nil, false},
		{"not a result", `[1]`, nil, false},
		{"contains across items", `{"content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}`, &model.ToolExpect{Contains: "a\nb"}, true},
		{"contains ignores non-text", `{"content":[{"type":"image","data":"ok"}]}`, &model.ToolExpect{Contains: "ok"}, false},
		{"number equals", `{"content":[],"structuredContent":{"n":1}}`, &model.ToolExpect{JSONPath: "$.n", Equals: json.RawMessage(`1.0`)}, true},
		{"object equals", `{"content":[],"structuredContent":{"o":{"a":[1,"x"]}}}`, &model.ToolExpect{JSONPath: "$.o", Equals: json.RawMessage(`{"a":[1,"x"]}`)}, true},
		{"null exists", `{"content":[],"structuredContent":{"n":null}}`, &model.ToolExpect{JSONPath: "$.n"}, true},
		{"no structured content", `{"content":[]}`, &model.ToolExpect{JSONPath: "$.n"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pe := judgeToolResult("t", json.RawMessage(tc.result), tc.expect)
			if (pe == nil) != tc.ok {
				t.Fatalf("judge = %v, want ok %v", pe, tc.ok)
			}
			if pe != nil && pe.class != ClassToolFailed {
				t.Fatalf("class %s", pe.class)
			}
		})
	}
}

// TestToolCheckMetrics: the tool call is a phase of the histogram and a
// failed check counts under its class.
func TestToolCheckMetrics(t *testing.T) {
	srv := streamable(t, toolServer(), mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true})
	reg := prometheus.NewPedanticRegistry()
	p := testProber(t, func(o *Options) { o.Metrics = NewMetrics(reg) })
	p.Probe(t.Context(), toolEndpoint(srv.URL, model.ToolCheck{Name: "health", Arguments: json.RawMessage(`{"account":"a"}`)}), cmd())
	p.Probe(t.Context(), toolEndpoint(srv.URL, model.ToolCheck{Name: "broken", Arguments: json.RawMessage(`{"account":"a"}`)}), cmd())
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var calls uint64
	var failed float64
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			switch {
			case mf.GetName() == "mcpmon_probe_phase_seconds" && labels["phase"] == msg.PhaseToolCall:
				calls = m.GetSummary().GetSampleCount()
			case mf.GetName() == "mcpmon_probes_total" && labels["class"] == ClassToolFailed:
				failed = m.GetCounter().GetValue()
			}
		}
	}
	if calls != 2 || failed != 1 {
		t.Fatalf("tool_call observations %d, tool_failed probes %v; want 2 and 1", calls, failed)
	}
}
