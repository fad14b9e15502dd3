package pagerduty

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mcpmon/mcpmon/pkg/alert"
	"github.com/mcpmon/mcpmon/pkg/testpeers"
)

func TestChangeURL(t *testing.T) {
	for in, want := range map[string]string{
		DefaultURL: "https://events.pagerduty.com/v2/change/enqueue",
		EUURL:      "https://events.eu.pagerduty.com/v2/change/enqueue",
		"https://relay.example.com/pd/v2/enqueue": "https://relay.example.com/pd/v2/change/enqueue",
		"https://relay.example.com/hook":          "https://relay.example.com/v2/change/enqueue",
	} {
		if got := ChangeURL(in); got != want {
			t.Errorf("ChangeURL(%s) = %s, want %s", in, got, want)
		}
	}
}

// TestEventIsAChangeEvent: a change event goes to /v2/change/enqueue as a
// change event — routing key, summary, source, timestamp, the diff in
// custom_details — never as an alert (no event_action, no dedup_key).
func TestEventIsAChangeEvent(t *testing.T) {
	rcv := testpeers.NewReceiver(t, nil)
	rcv.Answer(http.StatusAccepted, nil, `{"status":"success","message":"Change event processed"}`)
	s, err := New(Options{Name: "pd", RoutingKey: "R0UT1NGKEY", URL: rcv.URL + "/v2/enqueue"})
	if err != nil {
		t.Fatal(err)
	}
	n := alert.EventNotification{
		Key: "event-ep1-catalog_breaking-3f:pd", Kind: "catalog_breaking", EndpointID: "ep1", EndpointName: "docs",
		EndpointURL: "https://mcp.example.com/mcp", Fingerprint: "3f", ObservedAt: time.Date(2026, 3, 1, 12, 0, 10, 0, time.UTC),
		Message: "tool catalog changed (breaking): removed fetch", Diff: json.RawMessage(`{"removed":["fetch"]}`),
	}
	if err := s.NotifyEvent(t.Context(), n); err != nil {
		t.Fatal(err)
	}
	got := rcv.Requests()[0]
	path, body := got.Path, got.Body
	if path != "/v2/change/enqueue" {
		t.Fatalf("posted to %s", path)
	}
	var raw map[string]any
	if err := json.Unmarshal(body, &raw); err != nil {
		t.Fatal(err)
	}
	if _, ok := raw["event_action"]; ok {
		t.Fatalf("a change event carries event_action: %s", body)
	}
	if _, ok := raw["dedup_key"]; ok {
		t.Fatalf("a change event carries dedup_key: %s", body)
	}
	var ev ChangeEvent
	if err := json.Unmarshal(body, &ev); err != nil {
		t.Fatal(err)
	}
	d := ev.Payload.CustomDetails
	if ev.RoutingKey != "R0UT1NGKEY" || !strings.Contains(ev.Payload.Summary, "docs: catalog_breaking: tool catalog changed") ||
		ev.Payload.Source != "mcp.example.com" || ev.Payload.Timestamp != "2026-03-01T12:00:10Z" ||
		d["fingerprint"] != "3f" || d["key"] != n.Key || !strings.Contains(string(must(json.Marshal(d["diff"]))), "fetch") {
		t.Fatalf("change event %s", body)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
