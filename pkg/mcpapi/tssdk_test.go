package mcpapi_test

import (
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/mcpapi"
	"github.com/mcpmon/mcpmon/pkg/testpeers"
)

// TestTypeScriptSDKClient: the TypeScript SDK's client (npm) connects to
// /mcp with a key, lists every tool with its annotations and output
// schema, and reads list_endpoints and get_endpoint as structured content
// (which that SDK validates against the output schemas); a missing ID is a
// tool error.
func TestTypeScriptSDKClient(t *testing.T) {
	entry := testpeers.TSEverything(t) // .../ts-sdk/node_modules/@modelcontextprotocol/server-everything/dist/index.js
	app := filepath.Dir(filepath.Dir(filepath.Dir(filepath.Dir(filepath.Dir(entry)))))
	f := newFixture(t)
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", filepath.Join("testdata", "tsclient.cjs"), app, f.srv.URL+"/mcp", f.keys["a/read"], f.endpoint)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node tsclient.cjs: %v\n%s", err, stderr.String())
	}
	var got struct {
		ProtocolVersion string `json:"protocolVersion"`
		Tools           []struct {
			Name        string         `json:"name"`
			Annotations map[string]any `json:"annotations"`
			Output      bool           `json:"outputSchema"`
		} `json:"tools"`
		List struct {
			IsError           bool `json:"isError"`
			StructuredContent struct {
				Endpoints []struct {
					ID      string            `json:"id"`
					Headers map[string]string `json:"headers"`
				} `json:"endpoints"`
			} `json:"structuredContent"`
		} `json:"list"`
		Get struct {
			IsError           bool `json:"isError"`
			StructuredContent struct {
				Endpoint struct {
					ID    string `json:"id"`
					State string `json:"state"`
				} `json:"endpoint"`
			} `json:"structuredContent"`
		} `json:"get"`
		Missing struct {
			IsError bool   `json:"isError"`
			Text    string `json:"text"`
		} `json:"missing"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("tsclient output: %v\n%s", err, out)
	}
	t.Logf("the TypeScript SDK client negotiated %s", got.ProtocolVersion)
	listed := map[string]bool{}
	for _, tl := range got.Tools {
		listed[tl.Name] = tl.Output && tl.Annotations["readOnlyHint"] != nil
	}
	for _, tl := range mcpapi.Tools() {
		if !listed[tl.Name] {
			t.Errorf("the TypeScript client did not see %s with annotations and an output schema: %+v", tl.Name, got.Tools)
		}
	}
	if l := got.List; l.IsError || len(l.StructuredContent.Endpoints) != 1 || l.StructuredContent.Endpoints[0].ID != f.endpoint ||
		l.StructuredContent.Endpoints[0].Headers["Authorization"] != "<redacted>" {
		t.Errorf("list_endpoints = %+v, want the endpoint with its header redacted", l)
	}
	if g := got.Get; g.IsError || g.StructuredContent.Endpoint.ID != f.endpoint || g.StructuredContent.Endpoint.State != "pending" {
		t.Errorf("get_endpoint = %+v, want the pending endpoint", g)
	}
	if m := got.Missing; !m.IsError || !strings.Contains(m.Text, "404") {
		t.Errorf("get_endpoint of a missing ID = %+v, want a 404 tool error", m)
	}
}
