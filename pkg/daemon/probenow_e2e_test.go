package daemon

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmon/mcpmon/pkg/api/apispec"
	apiv1 "github.com/mcpmon/mcpmon/pkg/api/v1"
	"github.com/mcpmon/mcpmon/pkg/msg"
	"github.com/mcpmon/mcpmon/pkg/testpeers"
)

// bearer adds an API key to every request of an MCP client.
type bearer struct{ key string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.key)
	return http.DefaultTransport.RoundTrip(r)
}

// TestProbeNowGoesThroughThePipeline runs `mcpmon run` and a go-sdk
// server: POST /v1/endpoints/{id}/probe answers with a real probe's result
// for the request's second, the aggregator folds it into that window's
// verdict like a scheduled result, and the MCP tools reach the same route
// through /mcp on the same listener.
func TestProbeNowGoesThroughThePipeline(t *testing.T) {
	t.Parallel()
	srv := newMCPServer(t)
	args := []string{"run", "--listen", "127.0.0.1:0", "--data-dir", filepath.Join(t.TempDir(), "data"),
		"--window", "2s", "--grace", "1s", "--allow-private-targets"}
	api := testpeers.StartMcpmon(t, args, os.Environ())
	api.Client = apispec.Client(t)
	// Hourly: the probes this test sees are the ones it asks for.
	id, err := api.Register(t.Context(), map[string]any{"name": "fixture", "url": srv.url(), "schedule": "@every 1h", "timeout": "5s"})
	if err != nil {
		t.Fatal(err)
	}
	before := time.Now().UTC().Truncate(time.Second)
	var res apiv1.ResultView
	if err := api.Do(t.Context(), http.MethodPost, "/v1/endpoints/"+id+"/probe", struct{}{}, &res); err != nil {
		t.Fatal(err)
	}
	if res.Status != msg.StatusUp || res.ServerName != "e2e-fixture" || res.Slot.Before(before) || res.ProbeRunID != msg.ProbeRunID(id, res.Slot) {
		t.Fatalf("probe now = %+v, want an up result of the fixture for a slot from %s on, under the slot's run ID", res, before)
	}
	window := res.Slot.Truncate(2 * time.Second)
	testpeers.Eventually(t, 20*time.Second, "the verdict of the probe's window", func() error {
		var vs struct {
			Verdicts []apiv1.VerdictView `json:"verdicts"`
		}
		if err := api.Do(t.Context(), http.MethodGet, "/v1/endpoints/"+id+"/verdicts", nil, &vs); err != nil {
			return err
		}
		for _, v := range vs.Verdicts {
			if v.Window.Equal(window) {
				if v.State != msg.StateUp || v.Results != 1 {
					return fmt.Errorf("verdict of %s: %+v, want up from the one result", window, v)
				}
				return nil
			}
		}
		return fmt.Errorf("no verdict of window %s yet: %+v", window, vs.Verdicts)
	})

	c := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil)
	cs, err := c.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: api.URL + "/mcp", HTTPClient: &http.Client{Transport: bearer{api.Token}}}, nil)
	if err != nil {
		t.Fatalf("connect to /mcp: %v", err)
	}
	defer cs.Close()
	out, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "probe_endpoint_now", Arguments: map[string]any{"id": id}})
	if err != nil || out.IsError {
		t.Fatalf("probe_endpoint_now: %v %+v", err, out)
	}
	got, _ := out.StructuredContent.(map[string]any)
	result, _ := got["result"].(map[string]any)
	if result["status"] != "up" || result["serverName"] != "e2e-fixture" {
		t.Errorf("probe_endpoint_now = %v, want the fixture's up result", got)
	}
	detail, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "get_endpoint", Arguments: map[string]any{"id": id}})
	if err != nil || detail.IsError {
		t.Fatalf("get_endpoint: %v %+v", err, detail)
	}
	ep, _ := detail.StructuredContent.(map[string]any)["endpoint"].(map[string]any)
	latest, _ := ep["latestResult"].(map[string]any)
	if latest["probeRunId"] == nil || latest["probeRunId"] == res.ProbeRunID {
		t.Errorf("get_endpoint's latest result %v, want the second probe's", latest)
	}
}
