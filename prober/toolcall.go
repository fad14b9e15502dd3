package prober

// toolcall.go owns the tool check: an endpoint may name one read-only tool
// (model.ToolCheck) that the probe calls after the handshake and tools/list,
// in whichever era the server spoke, before the session ends. A check that
// fails is ClassToolFailed (down): the server answers the protocol but not
// the one call its users need. Transport failures of the call keep their own
// class (a timeout is a timeout). The call's arguments are secrets: they are
// scrubbed from everything the target says back and never logged.

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"

	"github.com/mcpmon/mcpmon/pkg/jsonpath"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/msg"
)

// checkTool runs the endpoint's tool check, if it has one.
func (r *run) checkTool(ctx context.Context) error {
	tc := r.ep.ToolCheck
	if tc == nil {
		return nil
	}
	switch {
	case !r.hasTools:
		return failf(ClassToolFailed, 0, "tool check %q: the server declares no tools capability", tc.Name)
	case r.tools == nil:
		return failf(ClassToolFailed, 0, "tool check %q: tools/list failed, so the tool could not be confirmed: %v", tc.Name, r.degraded)
	case !r.toolsMore && !hasTool(r.tools, tc.Name):
		// A listing read only in part (a full catalog, or more tools
		// than a probe decodes) may hold the tool further on: the call
		// itself tells.
		return failf(ClassToolFailed, 0, "tool check: the server's tools/list (%d tools) has no tool %q", len(r.tools), tc.Name)
	}
	params := map[string]any{"name": tc.Name}
	if len(tc.Arguments) > 0 {
		params["arguments"] = tc.Arguments
	}
	var result json.RawMessage
	err := r.timed(msg.PhaseToolCall, func() error {
		var err error
		result, err = r.call(ctx, "tools/call", params)
		return err
	})
	if err != nil {
		var pe *probeError
		if errors.As(err, &pe) && pe.rpc != nil && pe.class == "" {
			return failf(ClassToolFailed, pe.status, "tool check %q: tools/call answered with JSON-RPC error %d: %s", tc.Name, pe.rpc.Code, fromTarget(pe.rpc.Message))
		}
		return err
	}
	if pe := judgeToolResult(tc.Name, result, tc.Expect); pe != nil {
		return pe
	}
	return nil
}

func hasTool(tools []json.RawMessage, name string) bool {
	for _, raw := range tools {
		var t struct {
			Name string `json:"name"`
		}
		if json.Unmarshal(raw, &t) == nil && t.Name == name {
			return true
		}
	}
	return false
}

// judgeToolResult decides whether a tools/call result passes: it is a
// CallToolResult, not isError, and meets expect. It is pure.
func judgeToolResult(name string, result json.RawMessage, expect *model.ToolExpect) *probeError {
	var cr struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		StructuredContent json.RawMessage `json:"structuredContent"`
		IsError           bool            `json:"isError"`
	}
	if err := json.Unmarshal(result, &cr); err != nil {
		return failf(ClassToolFailed, 0, "tool check %q: the tools/call result is not a CallToolResult", name)
	}
	var texts []string
	for _, c := range cr.Content {
		if c.Type == "text" {
			texts = append(texts, c.Text)
		}
	}
	text := strings.Join(texts, "\n")
	if cr.IsError {
		return failf(ClassToolFailed, 0, "tool check %q: the tool returned isError: %s", name, fromTarget(text))
	}
	if expect == nil {
		return nil
	}
	if expect.Contains != "" && !strings.Contains(text, expect.Contains) {
		// The expectation is not quoted: it may repeat an argument.
		return failf(ClassToolFailed, 0, "tool check %q: the result's text does not contain the expected text (got %s)", name, fromTarget(text))
	}
	if expect.JSONPath == "" {
		return nil
	}
	path, err := jsonpath.Parse(expect.JSONPath)
	if err != nil {
		return failf(ClassToolFailed, 0, "tool check %q: %v", name, err)
	}
	var doc any
	if len(cr.StructuredContent) == 0 || json.Unmarshal(cr.StructuredContent, &doc) != nil || doc == nil {
		return failf(ClassToolFailed, 0, "tool check %q: the result has no structuredContent for %s", name, path)
	}
	got, ok := path.Select(doc)
	if !ok {
		return failf(ClassToolFailed, 0, "tool check %q: %s selects nothing in the result's structuredContent", name, path)
	}
	if len(expect.Equals) == 0 {
		return nil
	}
	var want any
	if err := json.Unmarshal(expect.Equals, &want); err != nil {
		return failf(ClassToolFailed, 0, "tool check %q: the expected value is not JSON", name)
	}
	if !reflect.DeepEqual(got, want) {
		b, _ := json.Marshal(got)
		return failf(ClassToolFailed, 0, "tool check %q: %s is %s, not the expected value", name, path, fromTarget(b))
	}
	return nil
}

// toolSecrets are the string values of a tool check's arguments, at any
// depth: each is a secret the target may echo back.
func toolSecrets(tc *model.ToolCheck) []string {
	if tc == nil || len(tc.Arguments) == 0 {
		return nil
	}
	var doc any
	if json.Unmarshal(tc.Arguments, &doc) != nil {
		return []string{string(tc.Arguments)}
	}
	var out []string
	var walk func(v any)
	walk = func(v any) {
		switch t := v.(type) {
		case string:
			out = append(out, t)
		case map[string]any:
			for _, c := range t {
				walk(c)
			}
		case []any:
			for _, c := range t {
				walk(c)
			}
		}
	}
	walk(doc)
	return out
}
