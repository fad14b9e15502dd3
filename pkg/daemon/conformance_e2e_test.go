package daemon

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpmon/mcpmon/pkg/config"
	"github.com/mcpmon/mcpmon/pkg/conformance"
	"github.com/mcpmon/mcpmon/pkg/model"
	"github.com/mcpmon/mcpmon/pkg/msg"
	"github.com/mcpmon/mcpmon/prober"
)

// maxFixtureBody bounds what the batch-answering fixture reads of a
// request: the probe's requests are a few hundred bytes.
const maxFixtureBody = 64 << 10

// conformanceInstance is one run of the fixture server: a fresh go-sdk
// server (no sessions of the previous run), answering JSON-RPC batches
// itself when batches is set, as a deploy that lost the SDK's batch
// refusal would.
func conformanceInstance(batches bool) http.Handler {
	srv := mcp.NewServer(&mcp.Implementation{Name: "conformance-fixture", Version: "1.0.0"}, nil)
	addTool(srv, "search", "Search the docs.")
	sdk := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	if !batches {
		return sdk
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			sdk.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, maxFixtureBody))
		if err != nil {
			http.Error(w, "read", http.StatusBadRequest)
			return
		}
		var batch []struct {
			ID json.RawMessage `json:"id"`
		}
		if t := bytes.TrimSpace(body); len(t) == 0 || t[0] != '[' || json.Unmarshal(t, &batch) != nil {
			r.Body = io.NopCloser(bytes.NewReader(body))
			sdk.ServeHTTP(w, r)
			return
		}
		out := make([]map[string]any, 0, len(batch))
		for _, m := range batch {
			out = append(out, map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": map[string]any{}})
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(out)
	})
}

// conformanceView is the part of GET /v1/endpoints/{id}/conformance the
// test reads.
type conformanceView struct {
	Era   string `json:"era"`
	Rules []struct {
		ID      string `json:"id"`
		Outcome string `json:"outcome"`
	} `json:"rules"`
}

func ruleOutcome(t *testing.T, addr, id, rule string) string {
	t.Helper()
	var v conformanceView
	if err := json.Unmarshal([]byte(get(t, addr, "/v1/endpoints/"+id+"/conformance")), &v); err != nil {
		t.Fatal(err)
	}
	for _, r := range v.Rules {
		if r.ID == rule {
			return r.Outcome
		}
	}
	return ""
}

// TestBatchAnsweringRestartIsOneConformanceEventAndStaysUp is issue 23's
// end-to-end acceptance for conformance: a go-sdk server that, after a
// restart, answers JSON-RPC batches raises exactly one
// conformance_regressed event over many probes and one notification to
// the webhook sink that opted into that kind, none to a sink that opted
// into other kinds; fixed by the next restart, one conformance_restored.
// The endpoint is up in every window throughout and no incident opens.
// The active rules are checked at every probe (prober.Options'
// ConformanceEvery, the one knob the test turns) instead of hourly.
func TestBatchAnsweringRestartIsOneConformanceEventAndStaysUp(t *testing.T) {
	t.Parallel() // a minute of one-second windows: overlapped with the other long end-to-end tests
	target := newSwitchServer(t, conformanceInstance(false))
	optedIn, inURL := newReceiver(t)
	quiet, quietURL := newReceiver(t)
	sinksFile := filepath.Join(t.TempDir(), "sinks.json")
	doc := fmt.Sprintf(`{"sinks": [
		{"name": "spec", "type": "webhook", "url": %q, "notify": [%q, %q]},
		{"name": "oncall", "type": "webhook", "url": %q, "notify": ["incidents", "catalog_breaking"]}]}`,
		inURL, model.EventConformanceRegressed, model.EventConformanceRestored, quietURL)
	if err := os.WriteFile(sinksFile, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	o := fastOptions(t)
	o.Auth = config.AuthNone
	o.SinksFile = sinksFile
	d, err := Start(t.Context(), RoleAll, o, Deps{Logger: testLogger(t),
		proberOptions: func(_ string, po *prober.Options) { po.ConformanceEvery = time.Second }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Stop(); _ = d.Wait() })
	addr := d.Addr()
	id := register(t, addr, map[string]any{"name": "spec", "url": target.url, "schedule": "@every 1s", "timeout": "1s"})

	eventually(t, 20*time.Second, "batch-refused passing", func() bool {
		return ruleOutcome(t, addr, id, conformance.RuleBatchRefused) == msg.ConformancePass
	})
	eventually(t, 20*time.Second, "an up verdict", func() bool { return latestState(t, addr, id) == msg.StateUp })
	upFrom := verdicts(t, addr, id)[0].Window // the newest window: up

	// Each run of the server is judged at every probe: one event and one
	// notification when a rule changes, nothing for the many probes after.
	for _, run := range []struct {
		batches       bool
		kind, outcome string
	}{
		{batches: true, kind: model.EventConformanceRegressed, outcome: msg.ConformanceFail},
		{batches: false, kind: model.EventConformanceRestored, outcome: msg.ConformancePass},
	} {
		target.set(conformanceInstance(run.batches))
		eventually(t, 20*time.Second, "a "+run.kind+" event", func() bool {
			return len(listEvents(t, addr, id, run.kind).Events) > 0
		})
		eventually(t, 30*time.Second, "the opted-in sink told of "+run.kind, func() bool {
			return len(eventPayloads(optedIn, run.kind)) > 0
		})
		waitProbes(t, addr, id, 8)
		if got := ruleOutcome(t, addr, id, conformance.RuleBatchRefused); got != run.outcome {
			t.Fatalf("batch-refused = %q with batches answered %v, want %s", got, run.batches, run.outcome)
		}
		events := listEvents(t, addr, id, run.kind).Events
		if len(events) != 1 {
			t.Fatalf("%s events after many probes = %+v, want exactly one", run.kind, events)
		}
		if got := eventPayloads(optedIn, run.kind); len(got) != 1 || got[0]["fingerprint"] != events[0].Fingerprint ||
			!strings.Contains(fmt.Sprint(got[0]["message"]), conformance.RuleBatchRefused) {
			t.Fatalf("opted-in sink received %d %s notifications (%v), want one for %s naming %s",
				len(got), run.kind, got, events[0].Fingerprint, conformance.RuleBatchRefused)
		}
	}
	var kinds []string
	for _, e := range listEvents(t, addr, id, "").Events {
		if strings.HasPrefix(e.Kind, "conformance_") {
			kinds = append(kinds, e.Kind)
		}
	}
	if strings.Join(kinds, ",") != model.EventConformanceRestored+","+model.EventConformanceRegressed {
		t.Fatalf("conformance events newest first = %v, want exactly one restored after one regressed", kinds)
	}
	if got := eventPayloads(optedIn, ""); len(got) != 2 {
		t.Fatalf("opted-in sink received %d change notifications, want 2: %v", len(got), got)
	}
	if got := quiet.all(); len(got) != 0 {
		t.Fatalf("the sink that did not opt in received %v, want nothing", got)
	}

	// Advice only: every window from upFrom on is up, and nothing opened.
	for _, v := range verdicts(t, addr, id) {
		if !v.Window.Before(upFrom) && v.State != msg.StateUp {
			t.Errorf("verdict of window %s is %s, want up: conformance never changes the state", v.Window.Format(time.TimeOnly), v.State)
		}
	}
	var incidents struct {
		Incidents []json.RawMessage `json:"incidents"`
	}
	if err := json.Unmarshal([]byte(get(t, addr, "/v1/incidents?endpoint="+id)), &incidents); err != nil {
		t.Fatal(err)
	}
	if len(incidents.Incidents) != 0 {
		t.Fatalf("incidents = %s, want none", incidents.Incidents)
	}
}
