package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/mcpmon/mcpmon/pkg/api"
	apiv1 "github.com/mcpmon/mcpmon/pkg/api/v1"
)

// TestOverCapInputIsRefused: one past each cap on what an endpoint stores
// (and on the label selector) is a 400 problem at the field's pointer
// whose detail names the limit, and changes nothing; at the cap it is
// accepted.
func TestOverCapInputIsRefused(t *testing.T) {
	h := newHarness(t, func(o *api.Options) { o.Regions = []string{"eu", "us"} })
	ep := h.create(`{"name":"existing","url":"https://a.example/mcp"}`)
	epPath := "/v1/endpoints/" + ep.ID
	valid := func(extra string) string { return `{"name":"n","url":"https://b.example/mcp"` + extra + `}` }
	obj := func(n int, member func(i int) string) string {
		parts := make([]string, n)
		for i := range parts {
			parts[i] = member(i)
		}
		return "{" + strings.Join(parts, ",") + "}"
	}
	list := func(n int, item string) string {
		return "[" + strings.TrimSuffix(strings.Repeat(item+",", n), ",") + "]"
	}
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	x := strings.Repeat
	deepArgs := func(levels int) string { // an object nested levels deep in all
		return x(`{"a":`, levels-1) + `{}` + x("}", levels-1)
	}
	for _, tc := range []struct {
		name, method, path, body, pointer, limit string
		ok                                       bool // at the cap: accepted
	}{
		{"name at the cap", "POST", "/v1/endpoints", `{"name":` + q(x("é", 200)) + `,"url":"https://b.example/mcp"}`, "", "", true},
		{"name", "POST", "/v1/endpoints", `{"name":` + q(x("é", 201)) + `,"url":"https://b.example/mcp"}`, "#/name", "200", false},
		{"url", "POST", "/v1/endpoints", `{"name":"n","url":"https://b.example/` + x("a", 2048) + `"}`, "#/url", "2048", false},
		{"schedule", "POST", "/v1/endpoints", valid(`,"schedule":` + q(x("*", 257))), "#/schedule", "256", false},
		{"timeout", "POST", "/v1/endpoints", valid(`,"timeout":` + q(x("0", 30)+"10s")), "#/timeout", "32", false},
		{"latency threshold", "POST", "/v1/endpoints", valid(`,"latencyThreshold":` + q(x("0", 31)+"1s")), "#/latencyThreshold", "32", false},
		{"repeat interval", "POST", "/v1/endpoints", valid(`,"rules":{"repeatInterval":` + q(x("0", 31)+"1h") + `}`), "#/rules/repeatInterval", "32", false},
		{"credential warning", "POST", "/v1/endpoints", valid(`,"credentialWarning":` + q(x("0", 30)+"72h")), "#/credentialWarning", "32", false},
		{"headers at the cap", "POST", "/v1/endpoints", valid(`,"headers":` + obj(32, func(i int) string { return fmt.Sprintf(`"X-H%d":"v"`, i) })), "", "", true},
		{"header count", "POST", "/v1/endpoints", valid(`,"headers":` + obj(33, func(i int) string { return fmt.Sprintf(`"X-H%d":"v"`, i) })), "#/headers", "32", false},
		{"header name", "POST", "/v1/endpoints", valid(`,"headers":{"X-` + x("a", 255) + `":"v"}`), "#/headers/X-" + x("a", 255), "256", false},
		{"header value", "POST", "/v1/endpoints", valid(`,"headers":{"X-A":` + q(x("v", 8<<10+1)) + `}`), "#/headers/X-A", "8192", false},
		{"label count", "POST", "/v1/endpoints", valid(`,"labels":` + obj(33, func(i int) string { return fmt.Sprintf(`"l%d":"v"`, i) })), "#/labels", "32", false},
		{"label name", "POST", "/v1/endpoints", valid(`,"labels":{"` + x("k", 64) + `":"v"}`), "#/labels/" + x("k", 64), "63", false},
		{"label value", "POST", "/v1/endpoints", valid(`,"labels":{"k":` + q(x("v", 256)) + `}`), "#/labels/k", "255", false},
		{"sinks document", "POST", "/v1/endpoints", valid(`,"sinks":[{"type":"webhook","name":` + q(x("s", 16<<10)) + `}]`), "#/sinks", "16384", false},
		{"region count", "POST", "/v1/endpoints", valid(`,"regions":` + list(33, `"eu"`)), "#/regions", "32", false},
		{"region name", "POST", "/v1/endpoints", valid(`,"regions":[` + q(x("r", 65)) + `]`), "#/regions", "64", false},
		{"tool arguments at the depth cap", "POST", "/v1/endpoints", valid(`,"toolCheck":{"name":"t","arguments":` + deepArgs(16) + `}`), "", "", true},
		{"tool arguments depth", "POST", "/v1/endpoints", valid(`,"toolCheck":{"name":"t","arguments":` + deepArgs(17) + `}`), "#/toolCheck/arguments", "16", false},
		{"tool arguments members", "POST", "/v1/endpoints", valid(`,"toolCheck":{"name":"t","arguments":` + obj(257, func(i int) string { return fmt.Sprintf(`"a%d":1`, i) }) + `}`), "#/toolCheck/arguments", "256", false},
		{"tool arguments size", "POST", "/v1/endpoints", valid(`,"toolCheck":{"name":"t","arguments":{"a":` + q(x("v", 16<<10)) + `}}`), "#/toolCheck/arguments", "16384", false},
		{"tool name", "POST", "/v1/endpoints", valid(`,"toolCheck":{"name":` + q(x("t", 129)) + `}`), "#/toolCheck/name", "128", false},
		{"expect contains", "POST", "/v1/endpoints", valid(`,"toolCheck":{"name":"t","expect":{"contains":` + q(x("c", 1025)) + `}}`), "#/toolCheck/expect/contains", "1024", false},
		{"expect jsonPath", "POST", "/v1/endpoints", valid(`,"toolCheck":{"name":"t","expect":{"jsonPath":` + q("$"+x(".a", 256)) + `}}`), "#/toolCheck/expect/jsonPath", "512", false},
		{"patch over a cap", "PATCH", epPath, `{"labels":{"k":` + q(x("v", 256)) + `}}`, "#/labels/k", "255", false},
		{"selector length", "GET", "/v1/endpoints?selector=" + x("k=v,", 1100) + "k=v", "", "?selector", "4096", false},
		{"selector set values", "GET", "/v1/endpoints?selector=k+in+(" + strings.TrimSuffix(x("v,", 33), ",") + ")", "", "?selector", "32", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := snapshot(t, h)
			resp, b := h.do(tc.method, tc.path, "", tc.body)
			if tc.ok {
				if resp.StatusCode != http.StatusCreated {
					t.Fatalf("at the cap: %d %.300s, want 201", resp.StatusCode, b)
				}
				return
			}
			if resp.StatusCode != http.StatusBadRequest || resp.Header.Get("Content-Type") != apiv1.ProblemContentType {
				t.Fatalf("%d %.300s, want a 400 problem", resp.StatusCode, b)
			}
			var p apiv1.Problem
			if err := json.Unmarshal(b, &p); err != nil {
				t.Fatal(err)
			}
			found := false
			for _, fe := range p.Errors {
				found = found || fe.Pointer == tc.pointer && strings.Contains(fe.Detail, tc.limit)
			}
			if !found {
				t.Errorf("errors %+v lack pointer %q with a detail naming %s", p.Errors, tc.pointer, tc.limit)
			}
			if after := snapshot(t, h); after != before {
				t.Errorf("a refused request changed the store")
			}
		})
	}
}
