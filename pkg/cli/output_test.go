package cli

import (
	"bytes"
	"encoding/json"
	"iter"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/mcpmon/mcpmon/pkg/api/apispec"
	apiv1 "github.com/mcpmon/mcpmon/pkg/api/v1"
	"github.com/mcpmon/mcpmon/pkg/model"
)

// TestStreamJSONWritesAngleBracketsAsThemselves: -o json of a list names
// a redacted URL as .../<redacted> and a query's & as itself, like -o json
// of one object, and is still one JSON array.
func TestStreamJSONWritesAngleBracketsAsThemselves(t *testing.T) {
	items := []map[string]string{{"url": "https://h.example/<redacted>"}, {"url": "https://h.example/?a=1&b=2"}}
	var seq iter.Seq2[map[string]string, error] = func(yield func(map[string]string, error) bool) {
		for _, it := range items {
			if !yield(it, nil) {
				return
			}
		}
	}
	var out bytes.Buffer
	if err := streamJSON(&out, seq); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"/<redacted>", "a=1&b=2"} {
		if !strings.Contains(out.String(), want) {
			t.Fatalf("stream lacks %q:\n%s", want, out.String())
		}
	}
	var back []map[string]string
	if err := json.Unmarshal(out.Bytes(), &back); err != nil || len(back) != 2 {
		t.Fatalf("not one array of two: %v\n%s", err, out.String())
	}
}

// An incident's class and reason come from probes (a target's words, an
// agent's post): listed as a table they reach the operator's terminal with
// no control character (no escape sequence, bell, carriage return or NUL)
// and no bidirectional control, whatever the API answered.
func TestTableCellsCarryNoTerminalControls(t *testing.T) {
	hostile := "\x1b]8;;https://evil.example\x07click\x1b]8;;\x07\x1b[2J\x00\r\u202egpj.exe\u2066\u200f\u061c\t\n"
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Request-Id", "req-1")
		if r.URL.Path == "/v1/endpoints" { // the table names the endpoint: a name is text from a user too
			w.Header().Set("Content-Type", "application/json")
			now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
			_ = json.NewEncoder(w).Encode(apiv1.EndpointList{Endpoints: []apiv1.EndpointView{{
				ID: "ep1", Tenant: "default", Name: "name" + hostile, URL: "https://mcp.example.com/mcp", Transport: "auto",
				Schedule: "@every 30s", Timeout: "10s", CreatedAt: now, UpdatedAt: now, Version: 1, State: "down"}}})
			return
		}
		if r.URL.Path != "/v1/incidents" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Request-Id", "req-1")
		_ = json.NewEncoder(w).Encode(map[string]any{"incidents": []apiv1.IncidentView{{
			ID: "ep1-20260301T1200", EndpointID: "ep1", Kind: "global", Severity: "critical", State: "open",
			Class: hostile, Reason: hostile, Transitions: []apiv1.TransitionView{}, Version: 1}}})
	}))
	defer api.Close()
	h := &harness{t: t, hc: apispec.Client(t), env: map[string]string{"MCPMON_SERVER": api.URL}}
	out := h.ok("incidents", "list")
	if !strings.Contains(out, "click") || !strings.Contains(out, "gpj.exe") || !strings.Contains(out, "name") {
		t.Fatalf("the table lost the text around the controls:\n%q", out)
	}
	for _, r := range out {
		if (unicode.IsControl(r) && r != '\n') || model.IsBidiControl(r) {
			t.Fatalf("the table holds %U:\n%q", r, out)
		}
	}
	if lines := strings.Count(out, "\n"); lines != 2 {
		t.Fatalf("%d lines, want a header and one row:\n%q", lines, out)
	}
}
