package api_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	apiv1 "github.com/mcpmon/mcpmon/pkg/api/v1"
	"github.com/mcpmon/mcpmon/pkg/model"
)

func TestListAndGetIncidents(t *testing.T) {
	h := newHarness(t)
	seedIncident(t, h, "a-open", "ep-a", model.IncidentOpen)
	seedIncident(t, h, "a-resolved", "ep-a", model.IncidentResolved)
	seedIncident(t, h, "b-open", "ep-b", model.IncidentOpen)

	for _, tc := range []struct {
		query string
		want  string
	}{
		{"", "a-open a-resolved b-open"},
		{"?endpoint=ep-a", "a-open a-resolved"},
		{"?state=open", "a-open b-open"},
		{"?endpoint=ep-a&state=resolved", "a-resolved"},
		{"?endpoint=ep-c", ""},
		{"?limit=1", "x"}, // one of them
	} {
		var out struct{ Incidents []apiv1.IncidentView }
		h.mustJSON("GET", "/v1/incidents"+tc.query, "", http.StatusOK, &out)
		var ids []string
		for _, inc := range out.Incidents {
			ids = append(ids, inc.ID)
		}
		if tc.want == "x" {
			if len(ids) != 1 {
				t.Errorf("%s: %v, want 1 incident", tc.query, ids)
			}
			continue
		}
		slices.Sort(ids)
		if got := strings.Join(ids, " "); got != tc.want {
			t.Errorf("GET /v1/incidents%s = %q, want %q", tc.query, got, tc.want)
		}
	}

	resp, b := h.do("GET", "/v1/incidents/a-open", "", "")
	if resp.StatusCode != http.StatusOK || strings.Contains(string(b), "alerter state") || strings.Contains(string(b), `"data"`) {
		t.Fatalf("GET incident = %d %s: want 200 without the alerter's private data", resp.StatusCode, b)
	}
	var inc apiv1.IncidentView
	h.mustJSON("GET", "/v1/incidents/a-open", "", http.StatusOK, &inc)
	if inc.EndpointID != "ep-a" || inc.State != string(model.IncidentOpen) || inc.Class != "timeout" || len(inc.Transitions) != 1 || inc.Version != 1 {
		t.Errorf("incident %+v", inc)
	}
}

func TestAckIncident(t *testing.T) {
	h := newHarness(t)
	seedIncident(t, h, "inc", "ep-a", model.IncidentOpen)
	h.clock.Advance(3 * time.Minute)

	var got apiv1.IncidentView
	h.mustJSON("POST", "/v1/incidents/inc/ack", `{"by":"alice","reason":"looking into it"}`, http.StatusOK, &got)
	if got.State != string(model.IncidentAcknowledged) || got.AckedBy != "alice" || got.AckedAt == nil || !got.AckedAt.Equal(h.clock.Now()) {
		t.Fatalf("acked incident %+v", got)
	}
	last := got.Transitions[len(got.Transitions)-1]
	if len(got.Transitions) != 2 || last.From != string(model.IncidentOpen) || last.To != string(model.IncidentAcknowledged) ||
		!last.At.Equal(h.clock.Now()) || last.Reason != "acknowledged via API by alice: looking into it" {
		t.Fatalf("transitions %+v", got.Transitions)
	}
	stored, _ := h.store.GetIncident(t.Context(), "inc")
	if stored.State != model.IncidentAcknowledged || string(stored.Data) != `{"private":"alerter state"}` {
		t.Fatalf("stored %+v: want acknowledged with the alerter's data untouched", stored)
	}

	// Acknowledging again (no body) is a no-op, not a second transition.
	h.clock.Advance(time.Minute)
	h.mustJSON("POST", "/v1/incidents/inc/ack", "", http.StatusOK, &got)
	if len(got.Transitions) != 2 || got.AckedBy != "alice" {
		t.Fatalf("second ack changed the incident: %+v", got)
	}
	if !strings.Contains(h.logs.String(), "incident acknowledged") {
		t.Error("acknowledgement not logged")
	}
}

func TestIncidentShowsNotificationsPerSink(t *testing.T) {
	h := newHarness(t)
	seedIncident(t, h, "quiet", "ep-a", model.IncidentOpen)
	resp, b := h.do("GET", "/v1/incidents/quiet", "", "")
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), `"notifications":[]`) {
		t.Fatalf("GET incident without deliveries = %d %s, want notifications: []", resp.StatusCode, b)
	}

	seedIncident(t, h, "inc", "ep-a", model.IncidentResolved)
	first, last := t0.Add(-9*time.Minute), t0.Add(-8*time.Minute)
	for _, d := range []model.Delivery{
		{Kind: "resolve", Sink: "webhook", Outcome: model.DeliveryMuted},
		{Kind: "open", Sink: "webhook", Outcome: model.DeliveryDelivered, Attempts: 2, FirstAttemptAt: first, LastAttemptAt: last, DeliveredAt: last,
			LastError: `sink "webhook": receiver failed with HTTP 503; will retry`},
		{Kind: "open", Sink: "chat", Outcome: model.DeliveryFailed, Attempts: 4, FirstAttemptAt: first, LastAttemptAt: last, LastError: "HTTP 500"},
	} {
		if err := h.store.RecordDelivery(t.Context(), "inc", d); err != nil {
			t.Fatal(err)
		}
	}
	var got apiv1.IncidentDetail
	h.mustJSON("GET", "/v1/incidents/inc", "", http.StatusOK, &got)
	var order []string
	for _, n := range got.Notifications {
		order = append(order, n.Kind+"/"+n.Sink+"/"+string(n.Outcome))
	}
	if want := []string{"open/chat/failed", "open/webhook/delivered", "resolve/webhook/muted"}; !slices.Equal(order, want) {
		t.Fatalf("notifications %v, want %v", order, want)
	}
	if got.ID != "inc" || got.State != string(model.IncidentResolved) {
		t.Fatalf("incident fields lost next to the notifications: %+v", got.IncidentView)
	}
	_, b = h.do("GET", "/v1/incidents/inc", "", "")
	want := `{"kind":"open","sink":"webhook","outcome":"delivered","attempts":2,"firstAttemptAt":"2026-03-01T11:51:00Z","lastAttemptAt":"2026-03-01T11:52:00Z","deliveredAt":"2026-03-01T11:52:00Z","lastError":"sink \"webhook\": receiver failed with HTTP 503; will retry"}`
	if !strings.Contains(string(b), want) || strings.Contains(string(b), `"deliveredAt":"0001`) {
		t.Fatalf("GET incident = %s\nwant it to contain %s (and no zero times)", b, want)
	}
}
