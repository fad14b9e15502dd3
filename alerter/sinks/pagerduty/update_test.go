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

// TestUpdateIsAChangeEvent: an owner's update goes to /v2/change/enqueue
// (the Events API cannot attach text to an alert), naming the incident's
// dedup key, never re-triggering the alert.
func TestUpdateIsAChangeEvent(t *testing.T) {
	rcv := testpeers.NewReceiver(t, nil)
	rcv.Answer(http.StatusAccepted, nil, `{"status":"success"}`)
	s, err := New(Options{Name: "pd", RoutingKey: "R0UT1NGKEY", URL: rcv.URL + "/v2/enqueue"})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 3, 1, 12, 5, 0, 0, time.UTC)
	n := alert.Notification{Key: "alert-ep1-i1:update-1:pd", Kind: alert.KindUpdate, EndpointID: "ep1", EndpointName: "docs", IncidentID: "i1",
		Sequence: 1, Update: &alert.Update{Seq: 1, At: at, Status: "identified", Message: "A bad deploy; rolling back."}}
	if err := s.Notify(t.Context(), n); err != nil {
		t.Fatal(err)
	}
	got := rcv.Requests()[0]
	if got.Path != "/v2/change/enqueue" {
		t.Fatalf("posted to %s, want the change-events endpoint", got.Path)
	}
	var ev ChangeEvent
	if err := json.Unmarshal(got.Body, &ev); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(ev.Payload.Summary, "identified") || !strings.Contains(ev.Payload.Summary, "rolling back") ||
		ev.Payload.CustomDetails["dedup_key"] != "i1" || ev.Payload.Timestamp != "2026-03-01T12:05:00Z" {
		t.Fatalf("change event %s", got.Body)
	}
	if strings.Contains(string(got.Body), "event_action") {
		t.Fatalf("an update re-triggers the alert: %s", got.Body)
	}
}
